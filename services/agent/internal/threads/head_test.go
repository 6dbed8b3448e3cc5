package threads

import (
	"strings"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// TestHeadTellsChangedMessages: a note's head matches its message only
// while every field the store writes is the one stored, whether the
// message was replaced or edited in place, over the same memory.
func TestHeadTellsChangedMessages(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("result ", 20)
	calls := func() []llm.ToolCall {
		return []llm.ToolCall{{ID: "a", Name: "ls", Args: map[string]any{"path": "/"}}, {ID: "b", Name: "ls"}}
	}
	tests := []struct {
		name   string
		stored llm.Message
		change func(m *llm.Message)
		same   bool
	}{
		{"unchanged", loop.ToolMsg("a", "ls", body), func(*llm.Message) {}, true},
		{"unchanged, empty", loop.Human(""), func(*llm.Message) {}, true},
		{"unchanged, a role of its own", llm.Message{Role: "developer", Content: body}, func(*llm.Message) {}, true},
		{"a copy of the struct", loop.AI("", calls()...), func(m *llm.Message) { c := *m; *m = c }, true},
		{"new string, same text", loop.ToolMsg("a", "ls", body), func(m *llm.Message) { m.Content = strings.Clone(body) }, true},
		{"new string, other text", loop.ToolMsg("a", "ls", body), func(m *llm.Message) { m.Content = strings.ToUpper(body) }, false},
		{"cut over the same memory", loop.ToolMsg("a", "ls", body), func(m *llm.Message) { m.Content = m.Content[:10] }, false},
		{"emptied", loop.ToolMsg("a", "ls", body), func(m *llm.Message) { m.Content = "" }, false},
		{"role rewritten", loop.AI(body), func(m *llm.Message) { m.Role = llm.RoleUser }, false},
		{"a role of its own rewritten", llm.Message{Role: "developer", Content: body}, func(m *llm.Message) { m.Role = "critic" }, false},
		{"call id rewritten", loop.ToolMsg("a", "ls", body), func(m *llm.Message) { m.ToolCallID = "b" }, false},
		{"tool name rewritten", loop.ToolMsg("a", "ls", body), func(m *llm.Message) { m.Name = "grep" }, false},
		{"new calls, same values", loop.AI("", calls()...), func(m *llm.Message) { m.ToolCalls = append([]llm.ToolCall(nil), m.ToolCalls...) }, true},
		{"a call renamed in place", loop.AI("", calls()...), func(m *llm.Message) { m.ToolCalls[1].Name = "rm" }, false},
		{"a call's id rewritten in place", loop.AI("", calls()...), func(m *llm.Message) { m.ToolCalls[0].ID = "z" }, false},
		{"a call's args replaced in place", loop.AI("", calls()...), func(m *llm.Message) { m.ToolCalls[0].Args = map[string]any{"path": "/"} }, false},
		{"a call's args given a key", loop.AI("", calls()...), func(m *llm.Message) { m.ToolCalls[0].Args["all"] = true }, false},
		{"calls cut over the same memory", loop.AI("", calls()...), func(m *llm.Message) { m.ToolCalls = m.ToolCalls[:1] }, false},
		{"calls dropped", loop.AI("", calls()...), func(m *llm.Message) { m.ToolCalls = nil }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.stored
			h := headOf(&m)
			tt.change(&m)
			if got := h.is(&m); got != tt.same {
				t.Fatalf("is = %v, want %v", got, tt.same)
			}
			if hm := headOf(&m); !hm.is(&m) {
				t.Fatal("a head built from the changed message does not match it")
			}
		})
	}
}
