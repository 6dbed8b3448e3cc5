package llm_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/wick-agent/wick/llm"
)

// storedThread is a thread's messages as the agent has stored them (Redis and
// memory thread stores): these JSON names must keep loading.
const storedThread = `[{"role":"user","content":"list"},` +
	`{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"ls","args":{"path":"/"}}]},` +
	`{"role":"tool","content":"[]","tool_call_id":"c1","name":"ls"}]`

func TestMessageJSONIsTheStoredThreadFormat(t *testing.T) {
	t.Parallel()
	var msgs []llm.Message
	if err := json.Unmarshal([]byte(storedThread), &msgs); err != nil {
		t.Fatal(err)
	}
	want := []llm.Message{
		{Role: llm.RoleUser, Content: "list"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "ls", Args: map[string]any{"path": "/"}}}},
		{Role: llm.RoleTool, Content: "[]", ToolCallID: "c1", Name: "ls"},
	}
	if !reflect.DeepEqual(msgs, want) {
		t.Fatalf("loaded %+v, want %+v", msgs, want)
	}
	// RawArgs and ArgsErr are derived per run and never stored.
	msgs[1].ToolCalls[0].RawArgs = `{"path":"/"}`
	msgs[1].ToolCalls[0].ArgsErr = "x"
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != storedThread {
		t.Fatalf("stored as\n%s\nwant\n%s", b, storedThread)
	}
}
