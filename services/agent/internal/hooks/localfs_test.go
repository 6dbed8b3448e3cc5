package hooks_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/llmtest"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/wickfs"
)

// TestHooksOverLocalFS runs an agent with every hook over the real LocalFS:
// the model writes, edits, reads, lists, globs, greps and executes, and the
// skills and memory hooks read real files.
func TestHooksOverLocalFS(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustWrite := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite("skills/csv/SKILL.md", "---\nname: csv-analyzer\ndescription: Analyze CSV files\n---\nBody\n")
	mustWrite("AGENTS.md", "- Prefer small functions\n")
	fs, err := wickfs.NewLocalFS(root)
	if err != nil {
		t.Fatal(err)
	}

	c := func(id, name string, args map[string]any) llm.ToolCall {
		return llm.ToolCall{ID: id, Name: name, Args: args}
	}
	model := llmtest.New(
		llmtest.Call(c("w", "write_file", map[string]any{"path": "/workspace/app/main.py", "content": "print('a')\nprint('b')\nprint('c')\n"})),
		llmtest.Call(c("e", "edit_file", map[string]any{"path": "/workspace/app/main.py", "old_text": "print", "new_text": "log", "replace_all": true})),
		llmtest.Call(
			c("r", "read_file", map[string]any{"path": "/workspace/app/main.py", "offset": 1, "limit": 1}),
			c("l", "ls", map[string]any{"path": "/workspace/app"}),
			c("g", "glob", map[string]any{"pattern": "*.py"}),
			c("s", "grep", map[string]any{"pattern": "log\\('c'\\)"}),
			c("x", "execute", map[string]any{"command": "echo hello; exit 3"}),
		),
		llmtest.Text("all done"),
	)
	cfg := &loop.AgentConfig{
		SystemPrompt: "sys",
		Backend:      &loop.BackendCfg{Type: "local", Workdir: "/workspace"},
		Skills:       &loop.SkillsCfg{Paths: []string{"/workspace/skills"}},
		Memory:       &loop.MemoryCfg{Paths: []string{"/workspace/AGENTS.md", "/workspace/missing/AGENTS.md"}},
	}
	r := loop.NewRunner(cfg, model, hooks.Build(cfg, fs, model), nil)
	state := &loop.AgentState{ThreadID: "th"}
	if err := r.Run(context.Background(), "r", state, []llm.Message{loop.Human("build it")}, nil, nil); err != nil {
		t.Fatal(err)
	}

	results := map[string]string{}
	for _, m := range loop.Messages(state.Messages).ToolMessages() {
		results[m.ToolCallID] = m.Content
	}
	checks := map[string]string{
		"w": `"bytes_written":33`,
		"e": `"replacements":3`,
		"r": "     2\tlog('b')\n\n... (more lines remain; call read_file with offset=2 to continue)",
		"l": `"name":"main.py"`,
		"g": "/workspace/app/main.py",
		"s": `"line":3`,
		"x": "hello\n[exit code 3]",
	}
	for id, want := range checks {
		if !strings.Contains(results[id], want) {
			t.Errorf("%s: %q does not contain %q", id, results[id], want)
		}
	}
	if got := state.Files["/workspace/app/main.py"]; got != "log('a')\nlog('b')\nlog('c')\n" {
		t.Fatalf("tracked file %q", got)
	}
	sys := model.Requests()[0].Messages[0].Content
	if !strings.Contains(sys, "[csv-analyzer] Analyze CSV files → Read /workspace/skills/csv/SKILL.md for full instructions") ||
		!strings.Contains(sys, "<agent_memory>\n- Prefer small functions\n\n</agent_memory>") {
		t.Fatalf("system message:\n%s", sys)
	}
	if len(model.Requests()[0].Tools) != 8 {
		t.Fatalf("tools %d, want the 7 file tools and write_todos", len(model.Requests()[0].Tools))
	}
}
