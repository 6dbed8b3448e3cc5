package threads

import (
	"strings"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// TestHeadTellsChangedMessages: a note's head matches its message only
// while the message's content and calls are the very ones stored — a new
// string or slice, or a shorter one over the same memory, is a change.
func TestHeadTellsChangedMessages(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("result ", 20)
	calls := []llm.ToolCall{{ID: "a", Name: "ls"}, {ID: "b", Name: "ls"}}
	tests := []struct {
		name   string
		stored llm.Message
		change func(m *llm.Message)
		same   bool
	}{
		{"unchanged", loop.ToolMsg("a", "ls", body), func(*llm.Message) {}, true},
		{"unchanged, empty", loop.Human(""), func(*llm.Message) {}, true},
		{"a copy of the struct", loop.AI("", calls...), func(m *llm.Message) { c := *m; *m = c }, true},
		{"new string, same text", loop.ToolMsg("a", "ls", body), func(m *llm.Message) { m.Content = strings.Clone(body) }, false},
		{"cut over the same memory", loop.ToolMsg("a", "ls", body), func(m *llm.Message) { m.Content = m.Content[:10] }, false},
		{"emptied", loop.ToolMsg("a", "ls", body), func(m *llm.Message) { m.Content = "" }, false},
		{"new calls, same values", loop.AI("", calls...), func(m *llm.Message) { m.ToolCalls = append([]llm.ToolCall(nil), calls...) }, false},
		{"calls cut over the same memory", loop.AI("", calls...), func(m *llm.Message) { m.ToolCalls = m.ToolCalls[:1] }, false},
		{"calls dropped", loop.AI("", calls...), func(m *llm.Message) { m.ToolCalls = nil }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.stored
			h := headOf(&m)
			tt.change(&m)
			if got := h.is(&m); got != tt.same {
				t.Fatalf("is = %v, want %v", got, tt.same)
			}
			if got := h == headOf(&m); got != tt.same {
				t.Fatalf("headOf(m) == h is %v, want %v", got, tt.same)
			}
		})
	}
}
