package loop_test

import (
	"encoding/json"
	"testing"

	"github.com/wick-agent/wick/platform/runevent"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

func TestAgentStateJSON(t *testing.T) {
	t.Parallel()
	// A state with every kind of message, a todo and a file.
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
