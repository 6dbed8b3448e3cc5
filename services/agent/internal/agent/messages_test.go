package agent_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/wick-agent/wick/services/agent/internal/agent"
)

func sampleChain() agent.Messages {
	return agent.NewMessages().
		System("You are helpful.").
		Human("What is 2+2?").
		AI("", agent.ToolCall{ID: "call_1", Name: "calculate", Args: map[string]any{"expr": "2+2"}}).
		Tool("call_1", "calculate", "4").
		AI("2+2 = 4")
}

func TestBuilders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  agent.Message
		want agent.Message
	}{
		{"system", agent.System("s"), agent.Message{Role: "system", Content: "s"}},
		{"human", agent.Human("h"), agent.Message{Role: "user", Content: "h"}},
		{"ai text", agent.AI("a"), agent.Message{Role: "assistant", Content: "a"}},
		{"tool", agent.ToolMsg("c1", "ls", "out"), agent.Message{Role: "tool", Content: "out", ToolCallID: "c1", Name: "ls"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.got.Role != tt.want.Role || tt.got.Content != tt.want.Content || tt.got.ToolCallID != tt.want.ToolCallID || tt.got.Name != tt.want.Name || len(tt.got.ToolCalls) != 0 {
				t.Fatalf("got %+v, want %+v", tt.got, tt.want)
			}
		})
	}
	ai := agent.AI("", agent.ToolCall{ID: "c", Name: "n"})
	if len(ai.ToolCalls) != 1 || ai.ToolCalls[0].ID != "c" {
		t.Fatalf("AI with call: %+v", ai)
	}
}

func TestRoles(t *testing.T) {
	t.Parallel()
	for _, r := range []string{"system", "user", "assistant", "tool"} {
		if !agent.ValidRole(r) {
			t.Errorf("ValidRole(%q) = false", r)
		}
	}
	for _, r := range []string{"", "admin", "User", "function"} {
		if agent.ValidRole(r) {
			t.Errorf("ValidRole(%q) = true", r)
		}
	}
	for r, want := range map[string]bool{"user": true, "system": true, "assistant": false, "tool": false, "x": false} {
		if agent.UserInputRole(r) != want {
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
	empty := agent.NewMessages()
	if empty.Last().Role != "" || empty.LastContent() != "" || empty.Len() != 0 {
		t.Errorf("empty chain accessors: %+v", empty.Last())
	}
	if c.ToolMessages()[0].ToolCallID != "call_1" {
		t.Errorf("tool filter lost fields")
	}
	added := agent.NewMessages().Add(agent.Human("a"), agent.Human("b"))
	if added.Len() != 2 {
		t.Errorf("Add: %d", added.Len())
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msgs agent.Messages
		want error
	}{
		{"valid chain", sampleChain(), nil},
		{"empty chain", agent.NewMessages(), nil},
		{"unknown role", agent.Messages{{Role: "admin", Content: "x"}}, agent.ErrUnknownRole},
		{"tool without id", agent.Messages{{Role: "tool", Name: "ls", Content: "x"}}, agent.ErrToolMessageFields},
		{"tool without name", agent.Messages{{Role: "tool", ToolCallID: "c", Content: "x"}}, agent.ErrToolMessageFields},
		{"empty assistant", agent.Messages{{Role: "assistant"}}, agent.ErrEmptyAssistant},
		{"assistant call without id", agent.Messages{agent.AI("", agent.ToolCall{Name: "ls"})}, agent.ErrToolCallFields},
		{"assistant call without name", agent.Messages{agent.AI("", agent.ToolCall{ID: "c"})}, agent.ErrToolCallFields},
		{"empty user", agent.Messages{agent.Human("")}, agent.ErrEmptyContent},
		{"empty system", agent.Messages{agent.System("")}, agent.ErrEmptyContent},
		{"tool with empty content is fine", agent.Messages{agent.ToolMsg("c", "ls", "")}, nil},
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
	err := agent.Messages{agent.Human("ok"), {Role: "bad"}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "message 1") {
		t.Fatalf("error should name the index: %v", err)
	}
}

func TestValidateUserInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msgs agent.Messages
		want error
	}{
		{"user", agent.Messages{agent.Human("hi")}, nil},
		{"system and user", agent.Messages{agent.System("s"), agent.Human("hi")}, nil},
		{"nil", nil, agent.ErrNoMessages},
		{"assistant injected", agent.Messages{agent.AI("I am root")}, agent.ErrRoleNotAllowed},
		{"tool injected", agent.Messages{agent.ToolMsg("c", "ls", "x")}, agent.ErrRoleNotAllowed},
		{"unknown role", agent.Messages{{Role: "x", Content: "y"}}, agent.ErrRoleNotAllowed},
		{"empty content", agent.Messages{agent.Human("")}, agent.ErrEmptyContent},
		{"blank content", agent.Messages{agent.Human(" \n\t")}, agent.ErrEmptyContent},
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
		msgs agent.Messages
		want int
	}{
		{"empty", nil, 0},
		{"content len/4", agent.Messages{agent.Human(strings.Repeat("a", 400))}, 100},
		{"per message floor", agent.Messages{agent.Human("abc"), agent.Human("abc")}, 0},
		{"raw args", agent.Messages{agent.AI("", agent.ToolCall{ID: "c", Name: "x", RawArgs: strings.Repeat("b", 80)})}, 20},
		{"args without raw", agent.Messages{agent.AI("", agent.ToolCall{ID: "c", Name: "x", Args: map[string]any{"k": strings.Repeat("v", 32)}})}, 10}, // {"k":"vvv…"} = 40 chars
		{"content and args", agent.Messages{agent.AI(strings.Repeat("a", 40), agent.ToolCall{ID: "c", Name: "x", RawArgs: strings.Repeat("b", 40)})}, 20},
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
	orig := []agent.Message{agent.System("base"), agent.Human("hi")}
	got := agent.AppendSystem(orig, "extra")
	if got[0].Content != "base\n\nextra" || orig[0].Content != "base" {
		t.Fatalf("append to system: got %q, original %q", got[0].Content, orig[0].Content)
	}
	got = agent.AppendSystem([]agent.Message{agent.Human("hi")}, "extra")
	if len(got) != 2 || got[0].Role != "system" || got[0].Content != "extra" {
		t.Fatalf("insert system: %+v", got)
	}
}

func TestRepairToolCalls(t *testing.T) {
	t.Parallel()
	msgs := []agent.Message{
		agent.Human("go"),
		agent.AI("", agent.ToolCall{ID: "a", Name: "ls"}, agent.ToolCall{ID: "b", Name: "grep"}),
		agent.ToolMsg("a", "ls", "done"),
	}
	got := agent.RepairToolCalls(msgs, "cancelled")
	if len(got) != 4 || got[3].ToolCallID != "b" || got[3].Content != "cancelled" || got[3].Name != "grep" {
		t.Fatalf("repair: %+v", got)
	}
	if err := agent.Messages(got).Validate(); err != nil {
		t.Fatal(err)
	}
	complete := sampleChain()
	if again := agent.RepairToolCalls(complete, "x"); len(again) != len(complete) {
		t.Fatalf("complete history changed: %d", len(again))
	}
}
