package hooks_test

import (
	"strings"
	"testing"

	"github.com/wick-agent/wick/llm/llmtest"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

func TestBuildActivationAndOrder(t *testing.T) {
	t.Parallel()
	backend := &loop.BackendCfg{Type: "docker", Workdir: "/workspace"}
	skills := &loop.SkillsCfg{Paths: []string{"/workspace/skills"}}
	memory := &loop.MemoryCfg{Paths: []string{"/workspace/AGENTS.md"}}
	tests := []struct {
		name  string
		cfg   *loop.AgentConfig
		fs    bool
		model bool
		want  string
	}{
		{"no backend", &loop.AgentConfig{Skills: skills, Memory: memory}, false, true, "tracing,todolist,summarization"},
		{"backend", &loop.AgentConfig{Backend: backend}, true, true, "tracing,todolist,filesystem,summarization"},
		{"everything", &loop.AgentConfig{Backend: backend, Skills: skills, Memory: memory}, true, true, "tracing,todolist,filesystem,skills,memory,summarization"},
		{"backend config but no fs", &loop.AgentConfig{Backend: backend, Skills: skills}, false, true, "tracing,todolist,summarization"},
		{"empty skill paths", &loop.AgentConfig{Backend: backend, Skills: &loop.SkillsCfg{}}, true, true, "tracing,todolist,filesystem,summarization"},
		{"toggled off", &loop.AgentConfig{Backend: backend, Skills: skills, Hooks: map[string]bool{"tracing": false, "skills": false, "todolist": true}}, true, true, "todolist,filesystem,summarization"},
		{"no model", &loop.AgentConfig{}, false, false, "tracing,todolist"},
		{"nil config", nil, false, true, "tracing,todolist,summarization"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var fs *memFS
			if tt.fs {
				fs = newMemFS(nil)
			}
			model := llmtest.New()
			var got []string
			var hs []loop.Hook
			if tt.fs {
				hs = hooks.Build(tt.cfg, fs, model)
			} else if tt.model {
				hs = hooks.Build(tt.cfg, nil, model)
			} else {
				hs = hooks.Build(tt.cfg, nil, nil)
			}
			for _, h := range hs {
				got = append(got, h.Name())
			}
			if strings.Join(got, ",") != tt.want {
				t.Fatalf("hooks %v, want %s", got, tt.want)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	cfg := &loop.AgentConfig{Backend: &loop.BackendCfg{Type: "local"}, Memory: &loop.MemoryCfg{Paths: []string{"/m"}}, Hooks: map[string]bool{"summarization": false}}
	got := hooks.Describe(cfg, true)
	want := map[string]bool{"tracing": true, "todolist": true, "filesystem": true, "skills": false, "memory": true, "knowledge": false, "summarization": false}
	if len(got) != 7 {
		t.Fatalf("statuses %+v", got)
	}
	for i, s := range got {
		if s.Name != hooks.Names()[i] || s.Enabled != want[s.Name] || len(s.Phases) == 0 {
			t.Errorf("status %+v", s)
		}
	}
	if strings.Join(got[3].Phases, ",") != "before_agent,modify_request" || strings.Join(got[6].Phases, ",") != "wrap_model_call" {
		t.Fatalf("phases %+v", got)
	}
	if d := hooks.Describe(cfg, false); d[2].Enabled || d[4].Enabled {
		t.Fatal("filesystem/memory enabled without a backend")
	}
}

// TestToolNamesAreWhatHooksRegister keeps the reserved names honest: every
// hook enabled, the tools registered on the state are exactly ToolNames.
func TestToolNamesAreWhatHooksRegister(t *testing.T) {
	t.Parallel()
	cfg := &loop.AgentConfig{
		Backend: &loop.BackendCfg{Type: "local"},
		Skills:  &loop.SkillsCfg{Paths: []string{"/workspace/skills"}},
		Memory:  &loop.MemoryCfg{Paths: []string{"/workspace/AGENTS.md"}},
		// Collections turn the knowledge hook on.
		Collections: []string{"docs"},
	}
	state := &loop.AgentState{ThreadID: "t"}
	for _, h := range hooks.Build(cfg, newMemFS(nil), llmtest.New(), hooks.WithKnowledge(newKnowledgeBase(t))) {
		if err := h.BeforeAgent(t.Context(), state); err != nil {
			t.Fatalf("%s.BeforeAgent: %v", h.Name(), err)
		}
	}
	var got []string
	for _, tool := range state.Tools() {
		got = append(got, tool.Name())
	}
	if strings.Join(got, ",") != strings.Join(hooks.ToolNames(), ",") {
		t.Fatalf("hooks registered %v, ToolNames is %v", got, hooks.ToolNames())
	}
}
