package loop_test

import (
	"encoding/json"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wick-agent/wick/platform/runevent"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

func TestAgentConfigYAML(t *testing.T) {
	t.Parallel()
	src := `
name: code-assistant
model: claude-sonnet-4-20250514
system_prompt: "You are a coding assistant."
context_window: 128000
max_turns: 40
approval: interactive
backend:
  type: docker
  image: python:3.12-slim
  workdir: /workspace
  timeout: 90s
  max_output_bytes: 65536
skills:
  paths:
    - /workspace/skills
memory:
  paths:
    - /workspace/AGENTS.md
hooks:
  tracing: false
`
	var cfg loop.AgentConfig
	if err := yaml.Unmarshal([]byte(src), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "claude-sonnet-4-20250514" || cfg.ContextWindow != 128000 || cfg.MaxTurns != 40 || cfg.Approval != loop.ApprovalInteractive {
		t.Fatalf("config %+v", cfg)
	}
	if cfg.Backend.Type != "docker" || cfg.Backend.Timeout != 90*time.Second || cfg.Backend.MaxOutputBytes != 65536 {
		t.Fatalf("backend %+v", cfg.Backend)
	}
	if cfg.Skills.Paths[0] != "/workspace/skills" || cfg.Memory.Paths[0] != "/workspace/AGENTS.md" {
		t.Fatal("paths")
	}
	if cfg.HookEnabled("tracing") || !cfg.HookEnabled("memory") {
		t.Fatal("hook toggles")
	}
	var nilCfg *loop.AgentConfig
	if !nilCfg.HookEnabled("tracing") {
		t.Fatal("nil config disables hooks")
	}

	var obj loop.AgentConfig
	if err := yaml.Unmarshal([]byte("model:\n  provider: openai\n  model: gpt-4o\n"), &obj); err != nil {
		t.Fatal(err)
	}
	if m, ok := obj.Model.(map[string]any); !ok || m["provider"] != "openai" {
		t.Fatalf("object model %#v", obj.Model)
	}
}

func TestAgentStateJSON(t *testing.T) {
	t.Parallel()
	// The seed's sample state.
	src := `{
  "thread_id": "th_8f3a2b",
  "messages": [
    {"role": "system", "content": "You are a coding assistant."},
    {"role": "user", "content": "Create a hello.py file"},
    {"role": "assistant", "content": "", "tool_calls": [
      {"id": "call_w01", "name": "write_file", "args": {"path": "/workspace/hello.py", "content": "print('hello')"}}
    ]},
    {"role": "tool", "content": "{\"path\":\"/workspace/hello.py\",\"bytes_written\":14}", "tool_call_id": "call_w01", "name": "write_file"},
    {"role": "assistant", "content": "Created hello.py with a simple print statement."}
  ],
  "todos": [
    {"id": "1", "title": "Create hello.py", "status": "done"},
    {"id": "2", "title": "Add unit tests", "status": "pending"}
  ],
  "files": {"/workspace/hello.py": "print('hello')"}
}`
	var s loop.AgentState
	if err := json.Unmarshal([]byte(src), &s); err != nil {
		t.Fatal(err)
	}
	if s.ThreadID != "th_8f3a2b" || len(s.Messages) != 5 || s.Messages[2].ToolCalls[0].Args["path"] != "/workspace/hello.py" ||
		s.Todos[1].Status != "pending" || s.Files["/workspace/hello.py"] != "print('hello')" {
		t.Fatalf("state %+v", s)
	}
	if err := loop.Messages(s.Messages).Validate(); err != nil {
		t.Fatal(err)
	}
	loop.RegisterToolOnState(&s, &loop.FuncTool{ToolName: "x"})
	s.Messages[2].ToolCalls[0].RawArgs = "secret raw"
	b, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"thread_id", "messages", "todos", "files", "version", "updated_at"} {
		if _, ok := back[k]; !ok {
			t.Errorf("key %q missing from %s", k, b)
		}
	}
	call := back["messages"].([]any)[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	if _, ok := call["args"]; !ok || len(call) != 3 {
		t.Fatalf("tool call JSON %v (RawArgs and the registry must not be serialized)", call)
	}

	ev, _ := json.Marshal(loop.StreamEvent{ThreadID: "th", Data: runevent.MustFromJSON("done", nil)})
	if string(ev) != `{"event":"done","thread_id":"th"}` {
		t.Fatalf("event JSON %s", ev)
	}
}
