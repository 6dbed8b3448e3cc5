package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/llmtest"
	"github.com/wick-agent/wick/platform/runevent"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// recorder collects events and saved snapshots of a run.
type recorder struct {
	mu     sync.Mutex
	events []loop.StreamEvent
	saves  []loop.AgentState
}

func (r *recorder) emit(ev loop.StreamEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) save(ctx context.Context, s *loop.AgentState) error {
	if ctx.Err() != nil {
		return ctx.Err() // the loop must save on a live context
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	var snap loop.AgentState
	if err := json.Unmarshal(b, &snap); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.saves = append(r.saves, snap)
	return nil
}

func (r *recorder) Events() []loop.StreamEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) Saves() []loop.AgentState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.saves)
}

func (r *recorder) names() []string {
	var out []string
	for _, e := range r.Events() {
		out = append(out, e.Event())
	}
	return out
}

func (r *recorder) last() loop.StreamEvent {
	ev := r.Events()
	if len(ev) == 0 {
		return loop.StreamEvent{}
	}
	return ev[len(ev)-1]
}

func call(id, name string, args map[string]any) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Args: args}
}

func tool(name string, fn func(ctx context.Context, args map[string]any) (string, error)) loop.Tool {
	return &loop.FuncTool{ToolName: name, ToolDesc: name + " tool", Fn: fn}
}

func echoTool() loop.Tool {
	return tool("echo", func(_ context.Context, args map[string]any) (string, error) {
		return fmt.Sprint(args["text"]), nil
	})
}

// assertNoDangling fails when an assistant tool call has no tool result.
func assertNoDangling(t *testing.T, s loop.AgentState) {
	t.Helper()
	if err := loop.Messages(s.Messages).Validate(); err != nil {
		t.Fatalf("saved history invalid: %v", err)
	}
	results := map[string]bool{}
	for _, m := range s.Messages {
		if m.Role == llm.RoleTool {
			results[m.ToolCallID] = true
		}
	}
	for _, m := range s.Messages {
		for _, c := range m.ToolCalls {
			if !results[c.ID] {
				t.Fatalf("tool call %s (%s) has no result in the saved state:\n%s", c.ID, c.Name, loop.Messages(s.Messages).PrettyPrint())
			}
		}
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestRunStreamsAndFinishes(t *testing.T) {
	t.Parallel()
	model := llmtest.New(llmtest.Turn{Deltas: []string{"Hel", "lo"}, Usage: &llm.Usage{InputTokens: 7, OutputTokens: 2}})
	r := loop.NewRunner(&loop.AgentConfig{SystemPrompt: "be nice", Model: "scripted"}, model, nil, nil)
	rec := &recorder{}
	state := &loop.AgentState{ThreadID: "th_1"}
	if err := r.Run(testCtx(t), "run_1", state, []llm.Message{loop.Human("hi")}, rec.emit, rec.save); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.names(), []string{"on_chat_model_stream", "on_chat_model_stream", "on_usage", "done"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	ev := rec.Events()
	if ev[0].DataMap()["delta"] != "Hel" || ev[0].RunID != "run_1" {
		t.Fatalf("first delta %+v", ev[0])
	}
	if u := ev[2].DataMap(); u["input_tokens"] != 7.0 || u["output_tokens"] != 2.0 {
		t.Fatalf("usage %+v", u)
	}
	if done := rec.last(); done.ThreadID != "th_1" {
		t.Fatalf("done event %+v", done)
	}
	if len(state.Messages) != 2 || state.Messages[1].Content != "Hello" || state.Messages[1].Role != llm.RoleAssistant {
		t.Fatalf("state %+v", state.Messages)
	}
	req := model.Requests()[0]
	if req.Model != "scripted" || req.Messages[0].Role != "system" || req.Messages[0].Content != "be nice" || req.Messages[1].Content != "hi" {
		t.Fatalf("request %+v", req)
	}
	if len(rec.Saves()) != 1 {
		t.Fatalf("saves %d", len(rec.Saves()))
	}
}

func TestRunRejectsInvalidInput(t *testing.T) {
	t.Parallel()
	r := loop.NewRunner(nil, llmtest.New(), nil, nil)
	state := &loop.AgentState{}
	for _, in := range [][]llm.Message{nil, {loop.AI("I decide")}, {loop.ToolMsg("c", "x", "y")}, {loop.Human("")}} {
		err := r.Run(testCtx(t), "r", state, in, nil, nil)
		if !errors.Is(err, loop.ErrInvalidInput) {
			t.Fatalf("input %+v: err %v", in, err)
		}
	}
	if len(state.Messages) != 0 {
		t.Fatalf("state changed: %+v", state.Messages)
	}
}

func TestRunParallelToolCalls(t *testing.T) {
	t.Parallel()
	// Each tool waits until both have started: this only finishes when the
	// calls run at the same time.
	var started sync.WaitGroup
	started.Add(2)
	allStarted := make(chan struct{})
	go func() { started.Wait(); close(allStarted) }()
	barrier := func(name string) loop.Tool {
		return tool(name, func(ctx context.Context, _ map[string]any) (string, error) {
			started.Done()
			select {
			case <-allStarted:
				return name + " ok", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		})
	}
	model := llmtest.New(
		llmtest.Call(call("c1", "slow_a", nil), call("c2", "slow_b", map[string]any{"x": 1.0})),
		llmtest.Text("both done"),
	)
	r := loop.NewRunner(nil, model, nil, []loop.Tool{barrier("slow_a"), barrier("slow_b")})
	rec := &recorder{}
	state := &loop.AgentState{ThreadID: "th"}
	if err := r.Run(testCtx(t), "r", state, []llm.Message{loop.Human("go")}, rec.emit, rec.save); err != nil {
		t.Fatal(err)
	}
	msgs := state.Messages
	if len(msgs) != 5 || msgs[2].ToolCallID != "c1" || msgs[2].Content != "slow_a ok" || msgs[3].ToolCallID != "c2" || msgs[3].Content != "slow_b ok" {
		t.Fatalf("results not in call order:\n%s", loop.Messages(msgs).PrettyPrint())
	}
	names := rec.names()
	if strings.Join(names, ",") != "on_tool_start,on_tool_start,on_tool_end,on_tool_end,on_chat_model_stream,done" {
		t.Fatalf("events %v", names)
	}
	saves := rec.Saves()
	if len(saves) != 2 || len(saves[0].Messages) != 4 {
		t.Fatalf("want a save after the tool round (4 messages) and at the end, got %d saves", len(saves))
	}
	assertNoDangling(t, saves[0])
	// The second request carries the tools' results and their schemas.
	req := model.Requests()[1]
	if len(req.Tools) != 2 || req.Tools[0].Name != "slow_a" || len(req.Messages) != 4 {
		t.Fatalf("second request %+v", req)
	}
}

func TestRunToolErrorsBecomeResults(t *testing.T) {
	t.Parallel()
	failing := tool("failing", func(context.Context, map[string]any) (string, error) { return "", errors.New("disk on fire") })
	panicking := tool("panicking", func(context.Context, map[string]any) (string, error) { panic("boom") })
	model := llmtest.New(
		llmtest.Call(call("c1", "nope", nil), call("c2", "failing", nil), call("c3", "panicking", nil), call("c4", "echo", map[string]any{"text": "hi"})),
		llmtest.Text("recovered"),
	)
	r := loop.NewRunner(nil, model, nil, []loop.Tool{failing, panicking, echoTool()})
	rec := &recorder{}
	state := &loop.AgentState{}
	if err := r.Run(testCtx(t), "r", state, []llm.Message{loop.Human("go")}, rec.emit, rec.save); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"c1": `Error: unknown tool "nope"`,
		"c2": "Error: disk on fire",
		"c3": "Error: tool panicking failed unexpectedly",
		"c4": "hi",
	}
	for _, m := range loop.Messages(state.Messages).ToolMessages() {
		if want[m.ToolCallID] != m.Content {
			t.Errorf("%s: %q, want %q", m.ToolCallID, m.Content, want[m.ToolCallID])
		}
		delete(want, m.ToolCallID)
	}
	if len(want) != 0 {
		t.Fatalf("missing results %v", want)
	}
	if state.Messages[len(state.Messages)-1].Content != "recovered" || rec.last().Event() != "done" {
		t.Fatal("loop did not go on after tool errors")
	}
	var endErrors []any
	for _, e := range rec.Events() {
		if e.Event() == "on_tool_end" {
			endErrors = append(endErrors, e.DataMap()["error"])
		}
	}
	if !slices.Contains(endErrors, any("disk on fire")) {
		t.Fatalf("on_tool_end errors %v", endErrors)
	}
}

func TestRunMaxTurns(t *testing.T) {
	t.Parallel()
	model := llmtest.New()
	model.Repeat = &llmtest.Turn{ToolCalls: []llm.ToolCall{call("", "echo", map[string]any{"text": "again"})}}
	tests := []struct {
		name string
		cfg  *loop.AgentConfig
		opts []loop.RunnerOption
		want int
	}{
		{"option", nil, []loop.RunnerOption{loop.WithMaxTurns(3)}, 3},
		{"config", &loop.AgentConfig{MaxTurns: 2}, nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := llmtest.New()
			m.Repeat = model.Repeat
			r := loop.NewRunner(tt.cfg, m, nil, []loop.Tool{echoTool()}, tt.opts...)
			rec := &recorder{}
			state := &loop.AgentState{ThreadID: "th"}
			err := r.Run(testCtx(t), "r", state, []llm.Message{loop.Human("loop")}, rec.emit, rec.save)
			if !errors.Is(err, loop.ErrMaxTurns) {
				t.Fatalf("err = %v", err)
			}
			if n := len(m.Requests()); n != tt.want {
				t.Fatalf("model called %d times, want %d", n, tt.want)
			}
			last := rec.last()
			data := last.DataMap()
			if last.Event() != "error" || data["stop_reason"] != loop.StopMaxTurns || !strings.Contains(fmt.Sprint(data["message"]), "maximum number of turns") {
				t.Fatalf("final event %+v", last)
			}
			saves := rec.Saves()
			if len(saves) != tt.want {
				t.Fatalf("saves %d, want one per tool round (%d)", len(saves), tt.want)
			}
			assertNoDangling(t, saves[len(saves)-1])
			// Calls without ids get unique generated ones.
			ids := map[string]bool{}
			for _, m := range state.Messages {
				for _, c := range m.ToolCalls {
					if c.ID == "" || ids[c.ID] {
						t.Fatalf("bad generated id %q", c.ID)
					}
					ids[c.ID] = true
				}
			}
		})
	}
	if d := loop.NewRunner(nil, model, nil, nil); d == nil {
		t.Fatal("nil runner")
	}
}

func TestRunCancelMidTool(t *testing.T) {
	t.Parallel()
	stubbornStarted := make(chan struct{})
	politeStarted := make(chan struct{})
	release := make(chan struct{})
	stubbornDone := make(chan struct{})
	t.Cleanup(func() { close(release) })

	var state *loop.AgentState
	quick := tool("quick", func(context.Context, map[string]any) (string, error) { return "quick result", nil })
	// stubborn ignores cancellation, then tries to record a file.
	stubborn := tool("stubborn", func(ctx context.Context, _ map[string]any) (string, error) {
		close(stubbornStarted)
		<-release
		loop.MutateState(ctx, state, func(s *loop.AgentState) { s.Files = map[string]string{"/late": "x"} })
		close(stubbornDone)
		return "too late", nil
	})
	polite := tool("polite", func(ctx context.Context, _ map[string]any) (string, error) {
		close(politeStarted)
		<-ctx.Done()
		return "", ctx.Err()
	})
	model := llmtest.New(llmtest.Call(call("q", "quick", nil), call("s", "stubborn", nil), call("p", "polite", nil)))
	r := loop.NewRunner(nil, model, nil, []loop.Tool{quick, stubborn, polite}, loop.WithCancelGrace(50*time.Millisecond))

	ctx, cancel := context.WithCancel(testCtx(t))
	go func() {
		<-stubbornStarted
		<-politeStarted
		cancel()
	}()
	rec := &recorder{}
	state = &loop.AgentState{ThreadID: "th"}
	err := r.Run(ctx, "r", state, []llm.Message{loop.Human("go")}, rec.emit, rec.save)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	saves := rec.Saves()
	if len(saves) == 0 {
		t.Fatal("not saved after cancellation")
	}
	saved := saves[len(saves)-1]
	assertNoDangling(t, saved)
	got := map[string]string{}
	for _, m := range saved.Messages {
		if m.Role == llm.RoleTool {
			got[m.ToolCallID] = m.Content
		}
	}
	if got["q"] != "quick result" || got["s"] != loop.CancelledToolResult || !strings.HasPrefix(got["p"], "Error: context canceled") && got["p"] != loop.CancelledToolResult {
		t.Fatalf("results %v", got)
	}
	if last := rec.last(); last.Event() != "error" || last.DataMap()["stop_reason"] != loop.StopCancelled {
		t.Fatalf("final event %+v", last)
	}
	// The stubborn tool finishing late must not touch the state.
	release <- struct{}{}
	<-stubbornDone
	if state.Files != nil {
		t.Fatalf("late tool changed state: %v", state.Files)
	}
}

func TestRunCancelDuringModelCall(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	model := llmtest.New(llmtest.Turn{Block: true, Started: started})
	r := loop.NewRunner(nil, model, nil, nil)
	ctx, cancel := context.WithCancel(testCtx(t))
	go func() { <-started; cancel() }()
	rec := &recorder{}
	state := &loop.AgentState{}
	if err := r.Run(ctx, "r", state, []llm.Message{loop.Human("hi")}, rec.emit, rec.save); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	saves := rec.Saves()
	if len(saves) != 1 || len(saves[0].Messages) != 1 {
		t.Fatalf("saves %+v", saves)
	}
}

// stuckClient ignores its context entirely.
type stuckClient struct{ release chan struct{} }

func (s stuckClient) Stream(_ context.Context, _ llm.Request, emit llm.Emit) (llm.Result, error) {
	_ = emit(llm.Event{Delta: "x"})
	<-s.release
	_ = emit(llm.Event{Delta: "late"})
	return llm.Result{Content: "xlate"}, nil
}

func TestRunCancelWithClientIgnoringContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	r := loop.NewRunner(nil, stuckClient{release}, nil, nil)
	ctx, cancel := context.WithCancel(testCtx(t))
	rec := &recorder{}
	emit := func(ev loop.StreamEvent) {
		rec.emit(ev)
		if ev.Event() == "on_chat_model_stream" {
			cancel()
		}
	}
	if err := r.Run(ctx, "r", &loop.AgentState{}, []llm.Message{loop.Human("hi")}, emit, rec.save); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}

func TestRunModelError(t *testing.T) {
	t.Parallel()
	model := llmtest.New(llmtest.Turn{Err: errors.New("provider down")})
	r := loop.NewRunner(nil, model, nil, nil)
	rec := &recorder{}
	state := &loop.AgentState{ThreadID: "th"}
	err := r.Run(testCtx(t), "r", state, []llm.Message{loop.Human("hi")}, rec.emit, rec.save)
	if err == nil || !strings.Contains(err.Error(), "provider down") {
		t.Fatalf("err %v", err)
	}
	last := rec.last()
	if last.Event() != "error" || !strings.Contains(fmt.Sprint(last.DataMap()["message"]), "provider down") {
		t.Fatalf("final event %+v", last)
	}
	if len(rec.Saves()) != 1 {
		t.Fatal("input not saved after a model error")
	}
}

func TestRunRepairsInterruptedHistory(t *testing.T) {
	t.Parallel()
	model := llmtest.New(llmtest.Text("ok"))
	r := loop.NewRunner(nil, model, nil, nil)
	state := &loop.AgentState{Messages: []llm.Message{
		loop.Human("first"),
		loop.AI("", llm.ToolCall{ID: "old", Name: "execute"}),
	}}
	if err := r.Run(testCtx(t), "r", state, []llm.Message{loop.Human("again")}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if m := state.Messages[2]; m.ToolCallID != "old" || m.Content != loop.InterruptedToolResult || state.Messages[3].Content != "again" {
		t.Fatalf("history:\n%s", loop.Messages(state.Messages).PrettyPrint())
	}
}

// fakeApprover returns fixed decisions and records what it was asked.
type fakeApprover struct {
	decisions []loop.Decision
	asked     []llm.ToolCall
}

func (f *fakeApprover) Approve(_ context.Context, _ string, calls []llm.ToolCall, announce func()) ([]loop.Decision, error) {
	announce()
	f.asked = slices.Clone(calls)
	return f.decisions, nil
}

func TestRunInteractiveApproval(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	ran := map[string]any{}
	rec := tool("record", func(_ context.Context, args map[string]any) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		ran[fmt.Sprint(args["id"])] = args["v"]
		return "recorded " + fmt.Sprint(args["v"]), nil
	})
	model := llmtest.New(
		llmtest.Call(
			call("a", "record", map[string]any{"id": "a", "v": "1"}),
			call("b", "record", map[string]any{"id": "b", "v": "2"}),
			call("c", "record", map[string]any{"id": "c", "v": "3"}),
			call("d", "record", map[string]any{"id": "d", "v": "4"}),
		),
		llmtest.Text("done"),
	)
	approver := &fakeApprover{decisions: []loop.Decision{
		{ToolCallID: "a", Action: loop.ActionApprove},
		{ToolCallID: "b", Action: loop.ActionReject, Message: "not now"},
		{ToolCallID: "c", Action: loop.ActionEdit, Args: map[string]any{"id": "c", "v": "edited"}},
		// d: no decision → rejected
	}}
	r := loop.NewRunner(&loop.AgentConfig{Approval: loop.ApprovalInteractive}, model, nil, []loop.Tool{rec}, loop.WithApprover(approver))
	events := &recorder{}
	state := &loop.AgentState{}
	if err := r.Run(testCtx(t), "r", state, []llm.Message{loop.Human("go")}, events.emit, events.save); err != nil {
		t.Fatal(err)
	}
	if len(approver.asked) != 4 {
		t.Fatalf("approver asked about %d calls", len(approver.asked))
	}
	if len(ran) != 2 || ran["a"] != "1" || ran["c"] != "edited" {
		t.Fatalf("ran %v", ran)
	}
	results := map[string]string{}
	for _, m := range loop.Messages(state.Messages).ToolMessages() {
		results[m.ToolCallID] = m.Content
	}
	want := map[string]string{
		"a": "recorded 1",
		"b": "rejected by the user: not now",
		"c": "recorded edited",
		"d": "rejected by the user: no decision was made for this call",
	}
	for k, v := range want {
		if results[k] != v {
			t.Errorf("%s: %q, want %q", k, results[k], v)
		}
	}
	if args := state.Messages[1].ToolCalls[2].Args; args["v"] != "edited" {
		t.Fatalf("thread does not record the edited args: %v", args)
	}
	if !slices.Contains(events.names(), "on_interrupt") {
		t.Fatalf("no interrupt event: %v", events.names())
	}

	misspelt := loop.NewRunner(&loop.AgentConfig{Approval: "Interactive"}, model, nil, nil, loop.WithApprover(approver))
	if err := misspelt.Run(testCtx(t), "r", &loop.AgentState{}, []llm.Message{loop.Human("x")}, nil, nil); !errors.Is(err, loop.ErrInvalidConfig) {
		t.Fatalf("err %v", err)
	}

	noApprover := loop.NewRunner(&loop.AgentConfig{Approval: loop.ApprovalInteractive}, model, nil, nil)
	if err := noApprover.Run(testCtx(t), "r", &loop.AgentState{}, []llm.Message{loop.Human("x")}, nil, nil); !errors.Is(err, loop.ErrNoApprover) {
		t.Fatalf("err %v", err)
	}
}

// stateHook registers a tool in BeforeAgent and tags the system prompt.
type stateHook struct {
	loop.BaseHook
	tag string
}

func (h stateHook) Name() string { return h.tag }
func (h stateHook) Phases() []string {
	return []string{loop.PhaseBeforeAgent, loop.PhaseModifyRequest}
}
func (h stateHook) BeforeAgent(_ context.Context, s *loop.AgentState) error {
	loop.RegisterToolOnState(s, tool("hook_tool", func(ctx context.Context, _ map[string]any) (string, error) {
		loop.Emit(ctx, loop.StreamEvent{Data: runevent.MustFromJSON("on_todos", map[string]any{"todos": []any{}})})
		info, _ := loop.CallInfoFromContext(ctx)
		return "from hook " + info.ToolCallID + " " + info.ThreadID, nil
	}))
	return nil
}
func (h stateHook) ModifyRequest(_ context.Context, msgs []llm.Message) ([]llm.Message, error) {
	return loop.AppendSystem(msgs, h.tag), nil
}

type failingHook struct{ loop.BaseHook }

func (failingHook) Name() string     { return "failing" }
func (failingHook) Phases() []string { return []string{loop.PhaseBeforeAgent} }
func (failingHook) BeforeAgent(context.Context, *loop.AgentState) error {
	return errors.New("cannot start")
}

func TestRunHookPhases(t *testing.T) {
	t.Parallel()
	model := llmtest.New(llmtest.Call(call("c1", "hook_tool", nil)), llmtest.Text("fine"))
	hooks := []loop.Hook{stateHook{tag: "one"}, stateHook{tag: "two"}}
	r := loop.NewRunner(&loop.AgentConfig{SystemPrompt: "base"}, model, hooks, nil)
	rec := &recorder{}
	state := &loop.AgentState{ThreadID: "th9"}
	if err := r.Run(testCtx(t), "r", state, []llm.Message{loop.Human("go")}, rec.emit, rec.save); err != nil {
		t.Fatal(err)
	}
	req := model.Requests()[0]
	if req.Messages[0].Content != "base\n\none\n\ntwo" {
		t.Fatalf("modify_request order: %q", req.Messages[0].Content)
	}
	if len(req.Tools) != 1 || req.Tools[0].Name != "hook_tool" {
		t.Fatalf("tools %+v", req.Tools)
	}
	if c := state.Messages[2].Content; c != "from hook c1 th9" {
		t.Fatalf("tool result %q", c)
	}
	if !slices.Contains(rec.names(), "on_todos") {
		t.Fatalf("tool event not emitted: %v", rec.names())
	}
	// The system prompt is not stored in the thread.
	if state.Messages[0].Role != llm.RoleUser {
		t.Fatalf("thread starts with %+v", state.Messages[0])
	}

	bad := loop.NewRunner(nil, llmtest.New(), []loop.Hook{failingHook{}}, nil)
	rec = &recorder{}
	err := bad.Run(testCtx(t), "r", &loop.AgentState{}, []llm.Message{loop.Human("go")}, rec.emit, rec.save)
	if err == nil || !strings.Contains(err.Error(), "cannot start") || rec.last().Event() != "error" {
		t.Fatalf("err %v, last %+v", err, rec.last())
	}
	if saves := rec.Saves(); len(saves) != 1 || len(saves[0].Messages) != 1 {
		t.Fatalf("input not saved after a hook failure: %+v", saves)
	}
}

func TestRunSaveFailureStops(t *testing.T) {
	t.Parallel()
	model := llmtest.New(llmtest.Call(call("c1", "echo", nil)), llmtest.Text("never"))
	r := loop.NewRunner(nil, model, nil, []loop.Tool{echoTool()})
	conflict := errors.New("version conflict")
	rec := &recorder{}
	err := r.Run(testCtx(t), "r", &loop.AgentState{}, []llm.Message{loop.Human("go")}, rec.emit,
		func(context.Context, *loop.AgentState) error { return conflict })
	if !errors.Is(err, conflict) || len(model.Requests()) != 1 {
		t.Fatalf("err %v, requests %d", err, len(model.Requests()))
	}
}

// blockingApprover waits for the run to be cancelled.
type blockingApprover struct{ asked chan struct{} }

func (b blockingApprover) Approve(ctx context.Context, _ string, _ []llm.ToolCall, announce func()) ([]loop.Decision, error) {
	announce()
	close(b.asked)
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestRunCancelWhileAwaitingApproval(t *testing.T) {
	t.Parallel()
	model := llmtest.New(llmtest.Call(call("a", "echo", nil), call("b", "echo", nil)))
	approver := blockingApprover{asked: make(chan struct{})}
	r := loop.NewRunner(&loop.AgentConfig{Approval: loop.ApprovalInteractive}, model, nil, []loop.Tool{echoTool()}, loop.WithApprover(approver))
	ctx, cancel := context.WithCancel(testCtx(t))
	go func() { <-approver.asked; cancel() }()
	rec := &recorder{}
	if err := r.Run(ctx, "r", &loop.AgentState{}, []llm.Message{loop.Human("go")}, rec.emit, rec.save); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	saves := rec.Saves()
	saved := saves[len(saves)-1]
	assertNoDangling(t, saved)
	for _, m := range loop.Messages(saved.Messages).ToolMessages() {
		if m.Content != loop.CancelledToolResult {
			t.Fatalf("result %q", m.Content)
		}
	}
}

// chunkyClient streams a delta and returns two tool calls, one without
// arguments, and the usage in its result.
type chunkyClient struct{ calls int }

func (c *chunkyClient) Stream(_ context.Context, _ llm.Request, emit llm.Emit) (llm.Result, error) {
	c.calls++
	if c.calls > 1 {
		return llm.Result{Content: "end"}, emit(llm.Event{Delta: "end"})
	}
	if err := emit(llm.Event{Delta: "a"}); err != nil {
		return llm.Result{}, err
	}
	return llm.Result{
		Content:      "a",
		ToolCalls:    []llm.ToolCall{{ID: "1", Name: "echo", Args: map[string]any{"text": "x"}}, {ID: "2", Name: "echo"}},
		FinishReason: llm.FinishToolCalls,
		Usage:        llm.Usage{InputTokens: 10, OutputTokens: 5},
	}, nil
}

func TestRunCollectsChunkedToolCalls(t *testing.T) {
	t.Parallel()
	r := loop.NewRunner(nil, &chunkyClient{}, nil, []loop.Tool{echoTool()})
	rec := &recorder{}
	state := &loop.AgentState{}
	if err := r.Run(testCtx(t), "r", state, []llm.Message{loop.Human("go")}, rec.emit, rec.save); err != nil {
		t.Fatal(err)
	}
	ai := state.Messages[1]
	if ai.Content != "a" || len(ai.ToolCalls) != 2 || ai.ToolCalls[1].Args == nil {
		t.Fatalf("assistant %+v", ai)
	}
	for _, e := range rec.Events() {
		if e.Event() == "on_usage" {
			if u := e.DataMap(); u["input_tokens"] != 10.0 || u["output_tokens"] != 5.0 {
				t.Fatalf("usage %+v", u)
			}
			return
		}
	}
	t.Fatal("no usage event")
}

type failingApprover struct{}

func (failingApprover) Approve(_ context.Context, _ string, _ []llm.ToolCall, announce func()) ([]loop.Decision, error) {
	announce()
	return nil, errors.New("approval store down")
}

func TestRunApprovalFailureLeavesNoDanglingCall(t *testing.T) {
	t.Parallel()
	model := llmtest.New(llmtest.Call(call("a", "echo", nil)))
	r := loop.NewRunner(&loop.AgentConfig{Approval: loop.ApprovalInteractive}, model, nil, []loop.Tool{echoTool()}, loop.WithApprover(failingApprover{}))
	rec := &recorder{}
	err := r.Run(testCtx(t), "r", &loop.AgentState{}, []llm.Message{loop.Human("go")}, rec.emit, rec.save)
	if err == nil || !strings.Contains(err.Error(), "approval store down") {
		t.Fatalf("err %v", err)
	}
	saves := rec.Saves()
	saved := saves[len(saves)-1]
	assertNoDangling(t, saved)
	if c := saved.Messages[2].Content; c != loop.FailedToolResult {
		t.Fatalf("result %q", c)
	}
}
