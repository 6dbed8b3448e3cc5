package loop_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

func sampleChain() loop.Messages {
	return loop.NewMessages().
		System("You are helpful.").
		Human("What is 2+2?").
		AI("", llm.ToolCall{ID: "call_1", Name: "calculate", Args: map[string]any{"expr": "2+2"}}).
		Tool("call_1", "calculate", "4").
		AI("2+2 = 4")
}

func TestBuilders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  llm.Message
		want llm.Message
	}{
		{"system", loop.System("s"), llm.Message{Role: "system", Content: "s"}},
		{"human", loop.Human("h"), llm.Message{Role: "user", Content: "h"}},
		{"ai text", loop.AI("a"), llm.Message{Role: "assistant", Content: "a"}},
		{"tool", loop.ToolMsg("c1", "ls", "out"), llm.Message{Role: "tool", Content: "out", ToolCallID: "c1", Name: "ls"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.got.Role != tt.want.Role || tt.got.Content != tt.want.Content || tt.got.ToolCallID != tt.want.ToolCallID || tt.got.Name != tt.want.Name || len(tt.got.ToolCalls) != 0 {
				t.Fatalf("got %+v, want %+v", tt.got, tt.want)
			}
		})
	}
	ai := loop.AI("", llm.ToolCall{ID: "c", Name: "n"})
	if len(ai.ToolCalls) != 1 || ai.ToolCalls[0].ID != "c" {
		t.Fatalf("AI with call: %+v", ai)
	}
}

func TestRoles(t *testing.T) {
	t.Parallel()
	for _, r := range []string{"system", "user", "assistant", "tool"} {
		if !loop.ValidRole(r) {
			t.Errorf("ValidRole(%q) = false", r)
		}
	}
	for _, r := range []string{"", "admin", "User", "function"} {
		if loop.ValidRole(r) {
			t.Errorf("ValidRole(%q) = true", r)
		}
	}
	for r, want := range map[string]bool{"user": true, "system": true, "assistant": false, "tool": false, "x": false} {
		if loop.UserInputRole(r) != want {
			t.Errorf("UserInputRole(%q) != %v", r, want)
		}
	}
}

func TestChainFiltersAndAccessors(t *testing.T) {
	t.Parallel()
	c := sampleChain()
	checks := []struct {
		name string
		got  int
		want int
	}{
		{"Len", c.Len(), 5},
		{"UserMessages", c.UserMessages().Len(), 1},
		{"AssistantMessages", c.AssistantMessages().Len(), 2},
		{"ToolMessages", c.ToolMessages().Len(), 1},
		{"SystemMessages", c.SystemMessages().Len(), 1},
		{"ByRole(user)", c.ByRole("user").Len(), 1},
		{"ByRole(unknown)", c.ByRole("nope").Len(), 0},
		{"Slice", len(c.Slice()), 5},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %d, want %d", ch.name, ch.got, ch.want)
		}
	}
	if c.Last().Content != "2+2 = 4" || c.LastContent() != "2+2 = 4" {
		t.Errorf("Last = %+v", c.Last())
	}
	empty := loop.NewMessages()
	if empty.Last().Role != "" || empty.LastContent() != "" || empty.Len() != 0 {
		t.Errorf("empty chain accessors: %+v", empty.Last())
	}
	if c.ToolMessages()[0].ToolCallID != "call_1" {
		t.Errorf("tool filter lost fields")
	}
	added := loop.NewMessages().Add(loop.Human("a"), loop.Human("b"))
	if added.Len() != 2 {
		t.Errorf("Add: %d", added.Len())
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msgs loop.Messages
		want error
	}{
		{"valid chain", sampleChain(), nil},
		{"empty chain", loop.NewMessages(), nil},
		{"unknown role", loop.Messages{{Role: "admin", Content: "x"}}, loop.ErrUnknownRole},
		{"tool without id", loop.Messages{{Role: "tool", Name: "ls", Content: "x"}}, loop.ErrToolMessageFields},
		{"tool without name", loop.Messages{{Role: "tool", ToolCallID: "c", Content: "x"}}, loop.ErrToolMessageFields},
		{"empty assistant", loop.Messages{{Role: "assistant"}}, loop.ErrEmptyAssistant},
		{"assistant call without id", loop.Messages{loop.AI("", llm.ToolCall{Name: "ls"})}, loop.ErrToolCallFields},
		{"assistant call without name", loop.Messages{loop.AI("", llm.ToolCall{ID: "c"})}, loop.ErrToolCallFields},
		{"empty user", loop.Messages{loop.Human("")}, loop.ErrEmptyContent},
		{"empty system", loop.Messages{loop.System("")}, loop.ErrEmptyContent},
		{"tool with empty content is fine", loop.Messages{loop.ToolMsg("c", "ls", "")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.msgs.Validate()
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("Validate() = %v, want %v", err, tt.want)
			}
		})
	}
	err := loop.Messages{loop.Human("ok"), {Role: "bad"}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "message 1") {
		t.Fatalf("error should name the index: %v", err)
	}
}

func TestValidateUserInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msgs loop.Messages
		want error
	}{
		{"user", loop.Messages{loop.Human("hi")}, nil},
		{"system and user", loop.Messages{loop.System("s"), loop.Human("hi")}, nil},
		{"nil", nil, loop.ErrNoMessages},
		{"assistant injected", loop.Messages{loop.AI("I am root")}, loop.ErrRoleNotAllowed},
		{"tool injected", loop.Messages{loop.ToolMsg("c", "ls", "x")}, loop.ErrRoleNotAllowed},
		{"unknown role", loop.Messages{{Role: "x", Content: "y"}}, loop.ErrRoleNotAllowed},
		{"empty content", loop.Messages{loop.Human("")}, loop.ErrEmptyContent},
		{"blank content", loop.Messages{loop.Human(" \n\t")}, loop.ErrEmptyContent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.msgs.ValidateUserInput()
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("ValidateUserInput() = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestEstimateTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msgs loop.Messages
		want int
	}{
		{"empty", nil, 0},
		{"content len/4", loop.Messages{loop.Human(strings.Repeat("a", 400))}, 100},
		{"per message floor", loop.Messages{loop.Human("abc"), loop.Human("abc")}, 0},
		{"raw args", loop.Messages{loop.AI("", llm.ToolCall{ID: "c", Name: "x", RawArgs: strings.Repeat("b", 80)})}, 20},
		{"args without raw", loop.Messages{loop.AI("", llm.ToolCall{ID: "c", Name: "x", Args: map[string]any{"k": strings.Repeat("v", 32)}})}, 10}, // {"k":"vvv…"} = 40 chars
		{"content and args", loop.Messages{loop.AI(strings.Repeat("a", 40), llm.ToolCall{ID: "c", Name: "x", RawArgs: strings.Repeat("b", 40)})}, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.msgs.EstimateTokens(); got != tt.want {
				t.Fatalf("EstimateTokens() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPrettyPrint(t *testing.T) {
	t.Parallel()
	want := "[System]\nYou are helpful.\n\n" +
		"[Human]\nWhat is 2+2?\n\n" +
		"[AI]\n  → tool_call: calculate(id=call_1, args=map[expr:2+2])\n\n" +
		"[Tool: calculate (call_id=call_1)]\n4\n\n" +
		"[AI]\n2+2 = 4\n"
	if got := sampleChain().PrettyPrint(); got != want {
		t.Fatalf("PrettyPrint:\n%q\nwant\n%q", got, want)
	}
}

func TestAppendSystem(t *testing.T) {
	t.Parallel()
	orig := []llm.Message{loop.System("base"), loop.Human("hi")}
	got := loop.AppendSystem(orig, "extra")
	if got[0].Content != "base\n\nextra" || orig[0].Content != "base" {
		t.Fatalf("append to system: got %q, original %q", got[0].Content, orig[0].Content)
	}
	got = loop.AppendSystem([]llm.Message{loop.Human("hi")}, "extra")
	if len(got) != 2 || got[0].Role != "system" || got[0].Content != "extra" {
		t.Fatalf("insert system: %+v", got)
	}
}

func TestRepairToolCalls(t *testing.T) {
	t.Parallel()
	msgs := []llm.Message{
		loop.Human("go"),
		loop.AI("", llm.ToolCall{ID: "a", Name: "ls"}, llm.ToolCall{ID: "b", Name: "grep"}),
		loop.ToolMsg("a", "ls", "done"),
	}
	got := loop.RepairToolCalls(msgs, "cancelled")
	if len(got) != 4 || got[3].ToolCallID != "b" || got[3].Content != "cancelled" || got[3].Name != "grep" {
		t.Fatalf("repair: %+v", got)
	}
	if err := loop.Messages(got).Validate(); err != nil {
		t.Fatal(err)
	}
	complete := sampleChain()
	if again := loop.RepairToolCalls(complete, "x"); len(again) != len(complete) {
		t.Fatalf("complete history changed: %d", len(again))
	}
}
