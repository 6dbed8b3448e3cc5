package loop_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/llmtest"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// discardRounds is the length of the scripted session that measures what
// discard_steps saves.
const discardRounds = 20

// pageChars is the size of each fetched page in that session.
const pageChars = 4000

// fetchTool returns a page of pageChars characters per call.
func fetchTool() loop.Tool {
	return &loop.FuncTool{ToolName: "fetch", Fn: func(ctx context.Context, args map[string]any) (string, error) {
		return strings.Repeat("x", pageChars), nil
	}}
}

// discardSession runs discardRounds rounds of one fetch each; with discard,
// every round after the first also discards the previous round's page. It
// returns the requests the model saw and the saved thread.
func discardSession(t *testing.T, discard bool) ([]llm.Request, loop.AgentState) {
	t.Helper()
	var turns []llmtest.Turn
	for i := range discardRounds {
		calls := []llm.ToolCall{call(fmt.Sprintf("f%d", i), "fetch", map[string]any{"page": float64(i)})}
		if discard && i > 0 {
			calls = append(calls, call(fmt.Sprintf("d%d", i), loop.DiscardStepsTool, map[string]any{"tool_call_ids": []any{fmt.Sprintf("f%d", i-1)}}))
		}
		turns = append(turns, llmtest.Call(calls...))
	}
	turns = append(turns, llmtest.Text("read them all"))
	model := llmtest.New(turns...)
	r := loop.NewRunner(&loop.AgentConfig{MaxTurns: discardRounds + 1}, model, nil, []loop.Tool{fetchTool(), loop.DiscardSteps()})
	rec := &recorder{}
	if err := r.Run(context.Background(), "run1", &loop.AgentState{ThreadID: "t1"}, []llm.Message{loop.Human("read the pages")}, rec.emit, rec.save); err != nil {
		t.Fatal(err)
	}
	saves := rec.Saves()
	return model.Requests(), saves[len(saves)-1]
}

func promptTokens(reqs []llm.Request) int {
	total := 0
	for _, req := range reqs {
		total += loop.Messages(req.Messages).EstimateTokens()
	}
	return total
}

// TestDiscardStepsSavesPromptTokens: discarded results are replaced in
// later prompts by a placeholder, the call and result stay paired, the
// stored thread keeps every result in full, and a 20-round session sends
// far fewer prompt tokens.
func TestDiscardStepsSavesPromptTokens(t *testing.T) {
	t.Parallel()
	plain, _ := discardSession(t, false)
	reqs, thread := discardSession(t, true)

	last := reqs[len(reqs)-1].Messages
	full, placeholders := 0, 0
	answered := map[string]bool{}
	for _, m := range last {
		if m.Role != llm.RoleTool {
			continue
		}
		answered[m.ToolCallID] = true
		switch {
		case len(m.Content) == pageChars:
			full++
		case strings.HasPrefix(m.Content, "[result discarded by the agent: 4000 characters of fetch output]"):
			placeholders++
		}
	}
	if full != 1 || placeholders != discardRounds-1 {
		t.Fatalf("last prompt: %d full pages, %d placeholders; want 1 and %d", full, placeholders, discardRounds-1)
	}
	for _, m := range last {
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				t.Fatalf("call %s has no result in the prompt", c.ID)
			}
		}
	}
	stored := 0
	for _, m := range thread.Messages {
		if m.Role == llm.RoleTool && len(m.Content) == pageChars {
			stored++
		}
	}
	if stored != discardRounds {
		t.Fatalf("the thread keeps %d full pages, want %d", stored, discardRounds)
	}

	before, after := promptTokens(plain), promptTokens(reqs)
	saved := 100 * float64(before-after) / float64(before)
	t.Logf("%d rounds of %d-character pages: %d prompt tokens without discard_steps, %d with (%.0f%% fewer)", discardRounds, pageChars, before, after, saved)
	if saved < 50 {
		t.Fatalf("discard_steps saved only %.0f%% of prompt tokens", saved)
	}
}

// TestDiscardStepsRefusesUnknownIDs: the model learns which ids are not
// earlier results; a call naming none discards nothing.
func TestDiscardStepsRefusesUnknownIDs(t *testing.T) {
	t.Parallel()
	model := llmtest.New(
		llmtest.Call(call("f0", "fetch", nil)),
		llmtest.Call(call("d1", loop.DiscardStepsTool, map[string]any{"tool_call_ids": []any{"nope"}}),
			call("d2", loop.DiscardStepsTool, map[string]any{"tool_call_ids": []any{"f0", "gone"}})),
		llmtest.Text("done"),
	)
	r := loop.NewRunner(nil, model, nil, []loop.Tool{fetchTool(), loop.DiscardSteps()})
	rec := &recorder{}
	if err := r.Run(context.Background(), "run1", &loop.AgentState{ThreadID: "t1"}, []llm.Message{loop.Human("go")}, rec.emit, rec.save); err != nil {
		t.Fatal(err)
	}
	results := map[string]string{}
	for _, m := range model.Requests()[2].Messages {
		if m.Role == llm.RoleTool {
			results[m.ToolCallID] = m.Content
		}
	}
	if !strings.Contains(results["d1"], `none of these is the id of an earlier tool call with a result: "nope"`) {
		t.Fatalf("d1 = %q", results["d1"])
	}
	if !strings.Contains(results["d2"], `discarded 1 result(s)`) || !strings.Contains(results["d2"], `"gone"`) {
		t.Fatalf("d2 = %q", results["d2"])
	}
	if !strings.HasPrefix(results["f0"], "[result discarded") {
		t.Fatalf("f0 in the next prompt = %q", results["f0"])
	}
}

// TestStopAtStepBoundary: a stop requested during a tool round ends the
// run after the round is saved, with "done" saying "stopped"; Continue
// then goes on from the saved thread without new input.
func TestStopAtStepBoundary(t *testing.T) {
	t.Parallel()
	model := llmtest.New(llmtest.Call(call("f0", "fetch", nil)), llmtest.Text("finished"))
	stop := true
	r := loop.NewRunner(nil, model, nil, []loop.Tool{fetchTool()}, loop.WithStopCheck(func(context.Context) bool { return stop }))
	rec := &recorder{}
	state := &loop.AgentState{ThreadID: "t1"}
	err := r.Run(context.Background(), "run1", state, []llm.Message{loop.Human("go")}, rec.emit, rec.save)
	if err != loop.ErrStopped {
		t.Fatalf("Run = %v, want ErrStopped", err)
	}
	if last := rec.last(); last.Event() != "done" || last.DataMap()["stop_reason"] != loop.StopStopped {
		t.Fatalf("last event %+v", last)
	}
	saves := rec.Saves()
	if msgs := saves[len(saves)-1].Messages; len(msgs) != 3 || msgs[2].Role != llm.RoleTool {
		t.Fatalf("saved thread %+v", msgs)
	}
	if len(model.Requests()) != 1 {
		t.Fatalf("the model was called %d times", len(model.Requests()))
	}

	stop = false
	rec = &recorder{}
	if err := r.Continue(context.Background(), "run2", state, rec.emit, rec.save); err != nil {
		t.Fatal(err)
	}
	if msgs := state.Messages; len(msgs) != 4 || msgs[3].Content != "finished" {
		t.Fatalf("continued thread %+v", msgs)
	}
	if err := r.Continue(context.Background(), "run3", &loop.AgentState{}, rec.emit, rec.save); err != loop.ErrNothingToContinue {
		t.Fatalf("Continue on an empty thread = %v", err)
	}
}
