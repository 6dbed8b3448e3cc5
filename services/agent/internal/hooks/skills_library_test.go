package hooks_test

import (
	"context"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/wickfs"
)

// shippedSkills are the skills of the library in the repository's skills/
// folder, which every sandbox gets.
var shippedSkills = []string{"code-review", "csv-analyzer", "data-analysis", "research", "slides", "summarization"}

// TestShippedSkills parses the repository's skills library with the
// agent's own parser, as a sandbox sees it at /workspace/skills: every
// skill loads, its name is its folder's, and its description is there to
// tell a model when to use it; scripts its SKILL.md runs exist.
func TestShippedSkills(t *testing.T) {
	t.Parallel()
	// LocalFS maps /workspace to its root, so the repository root puts the
	// library where sandboxes have it.
	fs, err := wickfs.NewLocalFS("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	got, problems, err := hooks.DiscoverSkills(context.Background(), fs, []string{"/workspace/skills"})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 0 {
		t.Fatalf("problems in the shipped library: %+v", problems)
	}
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if strings.Join(names, " ") != strings.Join(shippedSkills, " ") {
		t.Fatalf("shipped skills %v, want %v", names, shippedSkills)
	}
	script := regexp.MustCompile(`python3 (skills/[a-z0-9-]+/[a-z_]+\.py)`)
	for _, s := range got {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			if folder := path.Base(path.Dir(s.Path)); folder != s.Name {
				t.Errorf("name %q in folder %q", s.Name, folder)
			}
			if len(s.Description) < 40 || !strings.Contains(strings.ToLower(s.Description), "use when") {
				t.Errorf("description %q does not say when to use the skill", s.Description)
			}
			body, err := os.ReadFile("../../../../skills/" + s.Name + "/" + hooks.SkillFile)
			if err != nil {
				t.Fatal(err)
			}
			// Commands run in the workspace on both backends; only a path
			// relative to it works on the local one.
			if strings.Contains(string(body), "python3 /workspace/") {
				t.Error("SKILL.md runs a script by an absolute path")
			}
			for _, m := range script.FindAllStringSubmatch(string(body), -1) {
				if _, err := os.Stat("../../../../" + m[1]); err != nil {
					t.Errorf("SKILL.md runs %s: %v", m[1], err)
				}
			}
		})
	}
}

// TestSkillNames: a skill loads only with a folder-safe name, taken from
// the front matter or else from its folder; any other file is a problem
// whose warning says what is wrong.
func TestSkillNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string // the test's
		folder  string
		content string
		loaded  string // the skill's name; empty when not loaded
		warning string // substring of the problem's warning
	}{
		{"lowercase word", "csv", "---\nname: csv-analyzer\ndescription: d\n---\n", "csv-analyzer", ""},
		{"digits and dashes", "x", "---\nname: 3d-plots-2\ndescription: d\n---\n", "3d-plots-2", ""},
		{"64 characters", "x", "---\nname: " + strings.Repeat("a", 64) + "\n---\n", strings.Repeat("a", 64), ""},
		{"folder name when none", "from-folder", "---\ndescription: d\n---\n", "from-folder", ""},
		{"spaces", "x", "---\nname: CSV Analyzer\n---\n", "", `name "CSV Analyzer" is not a folder-safe name`},
		{"uppercase", "x", "---\nname: Slides\n---\n", "", `name "Slides" is not a folder-safe name`},
		{"path", "x", "---\nname: ../etc\n---\n", "", `name "../etc" is not a folder-safe name`},
		{"leading dash", "x", "---\nname: -x\n---\n", "", "^[a-z0-9][a-z0-9-]{0,63}$"},
		{"65 characters", "x", "---\nname: " + strings.Repeat("a", 65) + "\n---\n", "", "at most 64 characters"},
		{"unsafe folder name when none", "My Skill", "---\ndescription: d\n---\n", "", `name "My Skill" is not a folder-safe name`},
		{"no front matter", "x", "# A skill\n\nname: x\n", "", "no YAML front matter"},
		{"unclosed front matter", "x", "---\nname: x\n", "", "no YAML front matter"},
		{"front matter not YAML", "x", "---\nname: [x\n---\n", "", "front matter: yaml:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := "/workspace/skills/" + tc.folder + "/SKILL.md"
			got, problems, err := hooks.DiscoverSkills(context.Background(), newMemFS(map[string]string{file: tc.content}), []string{"/workspace/skills"})
			if err != nil {
				t.Fatal(err)
			}
			if tc.loaded != "" {
				if len(got) != 1 || got[0].Name != tc.loaded || len(problems) != 0 {
					t.Fatalf("skills %+v, problems %+v; want %q loaded", got, problems, tc.loaded)
				}
				return
			}
			if len(got) != 0 || len(problems) != 1 || problems[0].Path != file ||
				!strings.HasPrefix(problems[0].Warning, "not loaded: ") || !strings.Contains(problems[0].Warning, tc.warning) {
				t.Fatalf("skills %+v, problems %+v; want one problem for %s saying %q", got, problems, file, tc.warning)
			}
		})
	}
}

// TestSkillsCatalogCap: skills beyond DefaultMaxSkills are left out of the
// catalog and reported, so the missing ones are not a mystery.
func TestSkillsCatalogCap(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range hooks.DefaultMaxSkills + 2 {
		name := fmt.Sprintf("skill-%03d", i)
		files["/workspace/skills/"+name+"/SKILL.md"] = "---\nname: " + name + "\ndescription: d\n---\n"
	}
	got, problems, err := hooks.DiscoverSkills(context.Background(), newMemFS(files), []string{"/workspace/skills"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != hooks.DefaultMaxSkills || got[len(got)-1].Name != "skill-099" {
		t.Fatalf("%d skills, last %q", len(got), got[len(got)-1].Name)
	}
	if len(problems) != 2 || problems[0].Path != "/workspace/skills/skill-100/SKILL.md" ||
		problems[1].Warning != "not loaded: the catalog holds at most 100 skills" {
		t.Fatalf("problems %+v", problems)
	}
}
