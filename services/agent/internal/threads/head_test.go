package threads

import (
	"slices"
	"strings"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// TestHeadTellsChangedMessages: a note's copy matches its message only
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
		{"same text elsewhere, a call renamed in place", loop.AI(body, calls()...), func(m *llm.Message) {
			m.Content = strings.Clone(body)
			m.ToolCalls[1].Name = "rm"
		}, false},
		{"new calls, one renamed", loop.AI("", calls()...), func(m *llm.Message) {
			m.ToolCalls = append([]llm.ToolCall(nil), m.ToolCalls...)
			m.ToolCalls[0].Name = "rm"
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := []llm.Message{tt.stored}
			c := copiesOf(msgs)
			tt.change(&msgs[0])
			if got := c.heldBy(msgs); got != tt.same {
				t.Fatalf("heldBy = %v, want %v", got, tt.same)
			}
			if cm := copiesOf(msgs); !cm.heldBy(msgs) {
				t.Fatal("copies of the changed message do not match it")
			}
		})
	}
}

// TestCopiesTellChangedCallsInAHistory: in a history of many messages, a
// call edited in place is seen wherever it is, whether the other messages
// are the very ones copied or hold the same text elsewhere.
func TestCopiesTellChangedCallsInAHistory(t *testing.T) {
	t.Parallel()
	moveText := func(msgs []llm.Message) { msgs[0].Content = strings.Clone(msgs[0].Content) }
	tests := []struct {
		name   string
		change func(msgs []llm.Message)
		same   bool
	}{
		{"unchanged", func([]llm.Message) {}, true},
		{"same text elsewhere", moveText, true},
		{"every message given new calls, same values", func(msgs []llm.Message) {
			for i := range msgs {
				msgs[i].ToolCalls = slices.Clone(msgs[i].ToolCalls)
			}
		}, true},
		{"the last call renamed", func(msgs []llm.Message) { msgs[37].ToolCalls[0].Name = "rm" }, false},
		{"the last call renamed, text elsewhere", func(msgs []llm.Message) {
			moveText(msgs)
			msgs[37].ToolCalls[0].Name = "rm"
		}, false},
		{"a middle call's args given a key, text elsewhere", func(msgs []llm.Message) {
			moveText(msgs)
			msgs[21].ToolCalls[0].Args["all"] = true
		}, false},
		{"a result's call id rewritten", func(msgs []llm.Message) { msgs[38].ToolCallID = "z" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := threadOf("th", 40).Messages
			c := copiesOf(msgs)
			tt.change(msgs)
			if got := c.heldBy(msgs); got != tt.same {
				t.Fatalf("heldBy = %v, want %v", got, tt.same)
			}
			if got := c.heldBy(msgs[:39]); got {
				t.Fatal("a history shorter than the copies is held")
			}
		})
	}
}
