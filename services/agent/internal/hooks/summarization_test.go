package hooks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/llmtest"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// summarizer is a model whose Call returns a fixed summary (or error) and
// counts the calls.
type summarizer struct {
	mu    sync.Mutex
	reqs  []llm.Request
	reply string
	err   error
}

func (s *summarizer) Call(_ context.Context, req llm.Request) (*llm.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	if s.err != nil {
		return nil, s.err
	}
	return &llm.Result{Content: s.reply}, nil
}

func (s *summarizer) Stream(context.Context, llm.Request, llm.Emit) (llm.Result, error) {
	return llm.Result{}, errors.New("not used")
}

func (s *summarizer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// capture is a next function that records what it was given.
func capture(got *[]llm.Message) loop.ModelCallWrapFunc {
	return func(_ context.Context, msgs []llm.Message) (*llm.Result, error) {
		*got = msgs
		return &llm.Result{Content: "ok"}, nil
	}
}

// conversation is a system message and n user/assistant messages of size chars each.
func conversation(n, size int) []llm.Message {
	msgs := []llm.Message{loop.System("sys")}
	for i := range n {
		text := fmt.Sprintf("%03d", i) + strings.Repeat("x", size-3)
		if i%2 == 0 {
			msgs = append(msgs, loop.Human(text))
		} else {
			msgs = append(msgs, loop.AI(text))
		}
	}
	return msgs
}

func TestSummarizationThreshold(t *testing.T) {
	t.Parallel()
	// Window 1000 → threshold 850 tokens = 3400 chars by len/4.
	h := hooks.NewSummarizationHook(&summarizer{reply: "S"}, 1000)
	if h.Threshold() != 850 {
		t.Fatalf("threshold %d", h.Threshold())
	}
	at := []llm.Message{loop.Human(strings.Repeat("a", 3400))}
	var got []llm.Message
	if _, err := h.WrapModelCall(context.Background(), at, capture(&got)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Content != at[0].Content {
		t.Fatal("conversation at the threshold was changed")
	}
	if hooks.NewSummarizationHook(nil, 0).Threshold() != int(128_000*0.85) {
		t.Fatal("default window is not 128,000")
	}
}

func TestSummarizationCompresses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		messages int
		wantKept int
	}{
		{"min 2", 20, 2},
		{"10 percent", 50, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			model := &summarizer{reply: "the gist"}
			h := hooks.NewSummarizationHook(model, 1000)
			msgs := conversation(tt.messages, 200) // 20×200/4 = 1000 tokens > 850
			var got []llm.Message
			if _, err := h.WrapModelCall(context.Background(), msgs, capture(&got)); err != nil {
				t.Fatal(err)
			}
			if len(got) != 2+tt.wantKept {
				t.Fatalf("got %d messages, want system + summary + %d", len(got), tt.wantKept)
			}
			if got[0].Content != "sys" || got[1].Role != llm.RoleUser || got[1].Content != hooks.SummaryPrefix+"the gist" {
				t.Fatalf("head %+v", got[:2])
			}
			if got[len(got)-1].Content != msgs[len(msgs)-1].Content || got[2].Content != msgs[len(msgs)-tt.wantKept].Content {
				t.Fatal("recent messages not kept verbatim")
			}
			req := model.reqs[0]
			if !strings.Contains(req.Messages[0].Content, "fewer than 2000 words") || !strings.Contains(req.Messages[1].Content, msgs[len(msgs)-tt.wantKept-1].Content) {
				t.Fatalf("summary request %+v", req.Messages)
			}
			if strings.Contains(req.Messages[1].Content, msgs[len(msgs)-1].Content) {
				t.Fatal("kept messages were sent to the summarizer")
			}
		})
	}
}

func TestSummarizationKeepsToolCallsWithResults(t *testing.T) {
	t.Parallel()
	msgs := conversation(16, 250)
	msgs = append(msgs,
		loop.AI("", llm.ToolCall{ID: "a", Name: "ls", Args: map[string]any{"path": "/"}}, llm.ToolCall{ID: "b", Name: "grep", Args: map[string]any{"pattern": "x"}}),
		loop.ToolMsg("a", "ls", "[]"),
		loop.ToolMsg("b", "grep", "{}"),
	)
	// 19 body messages → keep 2 → the cut lands on tool "a"; it must move back
	// to the assistant message so call and results stay together.
	h := hooks.NewSummarizationHook(&summarizer{reply: "S"}, 1000)
	var got []llm.Message
	if _, err := h.WrapModelCall(context.Background(), msgs, capture(&got)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || len(got[2].ToolCalls) != 2 || got[3].ToolCallID != "a" || got[4].ToolCallID != "b" {
		t.Fatalf("kept:\n%s", loop.Messages(got).PrettyPrint())
	}
	if err := loop.Messages(got).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestSafeCut(t *testing.T) {
	t.Parallel()
	body := []llm.Message{
		loop.Human("q"), // 0
		loop.AI("", llm.ToolCall{ID: "a", Name: "x"}),                                   // 1
		loop.ToolMsg("a", "x", "r"),                                                     // 2
		loop.AI("", llm.ToolCall{ID: "b", Name: "x"}, llm.ToolCall{ID: "c", Name: "x"}), // 3
		loop.ToolMsg("b", "x", "r"),                                                     // 4
		loop.ToolMsg("c", "x", "r"),                                                     // 5
		loop.AI("done"),                                                                 // 6
	}
	for cut, want := range map[int]int{0: 0, 1: 1, 2: 1, 3: 3, 4: 3, 5: 3, 6: 6, 7: 7, 9: 7, -1: 0} {
		if got := hooks.SafeCut(body, cut); got != want {
			t.Errorf("SafeCut(%d) = %d, want %d", cut, got, want)
		}
	}
	// Whatever the cut, the kept part validates: no result without its call.
	for cut := range len(body) + 1 {
		kept := body[hooks.SafeCut(body, cut):]
		calls := map[string]bool{}
		for _, m := range kept {
			for _, c := range m.ToolCalls {
				calls[c.ID] = true
			}
			if m.Role == llm.RoleTool && !calls[m.ToolCallID] {
				t.Fatalf("cut %d keeps result %s without its call", cut, m.ToolCallID)
			}
		}
	}
}

func TestSummarizationTruncatesFileContent(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("w", 5000)
	cmd := strings.Repeat("c", 5000)
	msgs := []llm.Message{
		loop.Human("write it"),
		loop.AI("", llm.ToolCall{ID: "w", Name: "write_file", Args: map[string]any{"path": "/a", "content": big}}),
		loop.ToolMsg("w", "write_file", "ok"),
		loop.AI("", llm.ToolCall{ID: "e", Name: "edit_file", Args: map[string]any{"path": "/a", "old_text": big, "new_text": "y"}}),
		loop.ToolMsg("e", "edit_file", "ok"),
		loop.AI("", llm.ToolCall{ID: "x", Name: "execute", Args: map[string]any{"command": cmd}}),
		loop.ToolMsg("x", "execute", "ok"),
	}
	out := hooks.TruncateFileArgs(msgs, 2000)
	if c := out[1].ToolCalls[0].Args["content"].(string); !strings.HasPrefix(c, strings.Repeat("w", 2000)+"...") || len(c) > 2100 {
		t.Fatalf("write_file content %d chars", len(c))
	}
	if c := out[3].ToolCalls[0].Args["old_text"].(string); len(c) > 2100 {
		t.Fatal("edit_file old_text not truncated")
	}
	if out[5].ToolCalls[0].Args["command"] != cmd || out[1].ToolCalls[0].Args["path"] != "/a" {
		t.Fatal("other arguments truncated")
	}
	if msgs[1].ToolCalls[0].Args["content"] != big {
		t.Fatal("input modified")
	}

	model := &summarizer{reply: "S"}
	h := hooks.NewSummarizationHook(model, 1000, hooks.WithMinKeep(1))
	var got []llm.Message
	if _, err := h.WrapModelCall(context.Background(), append(msgs, loop.Human("next")), capture(&got)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(model.reqs[0].Messages[1].Content, strings.Repeat("w", 2001)) {
		t.Fatal("summarizer received untruncated file content")
	}
}

func TestSummarizationFailurePassesThrough(t *testing.T) {
	t.Parallel()
	for _, m := range []*summarizer{{err: errors.New("gateway down")}, {reply: "  "}} {
		h := hooks.NewSummarizationHook(m, 1000)
		msgs := conversation(20, 200)
		var got []llm.Message
		if _, err := h.WrapModelCall(context.Background(), msgs, capture(&got)); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(msgs) || m.count() != 1 {
			t.Fatalf("messages changed on failure: %d", len(got))
		}
	}
}

func TestSummarizationReusesSummary(t *testing.T) {
	t.Parallel()
	model := &summarizer{reply: "S"}
	h := hooks.NewSummarizationHook(model, 1000)
	msgs := conversation(20, 200)
	var got []llm.Message
	if _, err := h.WrapModelCall(context.Background(), msgs, capture(&got)); err != nil {
		t.Fatal(err)
	}
	// One more short message: summary + recent is still under the threshold.
	msgs = append(msgs, loop.Human("and one more thing"))
	if _, err := h.WrapModelCall(context.Background(), msgs, capture(&got)); err != nil {
		t.Fatal(err)
	}
	if model.count() != 1 || len(got) != 5 || got[4].Content != "and one more thing" {
		t.Fatalf("calls %d, got %d messages", model.count(), len(got))
	}
	// Growing past the threshold again summarizes again, from the previous summary.
	msgs = append(msgs, conversation(20, 200)[1:]...)
	if _, err := h.WrapModelCall(context.Background(), msgs, capture(&got)); err != nil {
		t.Fatal(err)
	}
	if model.count() != 2 || !strings.Contains(model.reqs[1].Messages[1].Content, "Summary of the conversation before this part:\nS") {
		t.Fatalf("second summary request %+v", model.reqs[len(model.reqs)-1].Messages)
	}
}

func TestSummarizationInLoop(t *testing.T) {
	t.Parallel()
	model := llmtest.New(llmtest.Text("answer"))
	model.CallFn = func(context.Context, llm.Request) (*llm.Result, error) {
		return &llm.Result{Content: "condensed"}, nil
	}
	history := conversation(30, 200)[1:]
	state := &loop.AgentState{Messages: append([]llm.Message(nil), history...)}
	r := loop.NewRunner(&loop.AgentConfig{SystemPrompt: "sys", ContextWindow: 1000}, model,
		hooks.Build(&loop.AgentConfig{ContextWindow: 1000}, nil, model), nil)
	if err := r.Run(context.Background(), "r", state, []llm.Message{loop.Human("latest")}, nil, nil); err != nil {
		t.Fatal(err)
	}
	req := model.Requests()[0]
	if len(req.Messages) != 2+3 || req.Messages[1].Content != hooks.SummaryPrefix+"condensed" || req.Messages[4].Content != "latest" {
		t.Fatalf("request messages %+v", req.Messages)
	}
	if len(state.Messages) != 32 {
		t.Fatalf("the thread keeps its full history: %d", len(state.Messages))
	}
}
