package agent

import (
	"slices"
	"testing"

	"github.com/wick-agent/wick/platform/backend"
)

// TestDefaultAgentSkills: the default agent reads the skills library the
// sandbox service places in every sandbox, and has no skills without one.
func TestDefaultAgentSkills(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		backend string
		want    []string
	}{
		{backend.Docker, []string{DefaultSkillsPath}},
		{backend.Local, []string{DefaultSkillsPath}},
		{"", nil},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			c := defaultAgent(options{defaultBackend: tc.backend}, nil)
			var got []string
			if c.Skills != nil {
				got = c.Skills.Paths
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("skills paths = %v, want %v", got, tc.want)
			}
		})
	}
	if DefaultSkillsPath != "/workspace/skills" {
		t.Fatalf("DefaultSkillsPath = %q", DefaultSkillsPath)
	}
}
