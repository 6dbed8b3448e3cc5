package runexec_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/llmtest"
	"github.com/wick-agent/wick/platform/runevent"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/quota"
	"github.com/wick-agent/wick/services/agent/internal/registry"
	"github.com/wick-agent/wick/services/agent/internal/runexec"
	"github.com/wick-agent/wick/services/agent/internal/runs"
	"github.com/wick-agent/wick/services/agent/internal/threads"
	"github.com/wick-agent/wick/wickfs"
)

const user = "alice"

// fixture is an executor over memory stores whose every run talks to one
// scripted model.
type fixture struct {
	t       *testing.T
	exec    *runexec.Executor
	threads *threads.MemoryStore
	runs    *runs.Memory
	model   *llmtest.Script
}

// agents of the fixture: "calc" runs on its own, "careful" asks for approval.
func agents() map[string]*loop.AgentConfig {
	return map[string]*loop.AgentConfig{
		"calc":    {Name: "calc", Tools: []string{"calculate"}},
		"careful": {Name: "careful", Tools: []string{"calculate"}, Approval: loop.ApprovalInteractive},
		"asker":   {Name: "asker", Tools: []string{runexec.AskUserTool}},
	}
}

func newFixture(t *testing.T, model *llmtest.Script, opts ...runexec.Option) *fixture {
	t.Helper()
	return newFixtureOver(t, model, nil, opts...)
}

// newFixtureOver is newFixture with the run records and the log seen
// through wrap.
func newFixtureOver(t *testing.T, model *llmtest.Script, wrap func(runs.Store, runs.Log) (runs.Store, runs.Log), opts ...runexec.Option) *fixture {
	t.Helper()
	ts := threads.NewMemoryStore()
	t.Cleanup(func() { _ = ts.Close() })
	rm := runs.NewMemory()
	var store runs.Store = rm
	var log runs.Log = sharedLog{rm}
	if wrap != nil {
		store, log = wrap(store, log)
	}
	exec := newExecutor(t, model, ts, store, log, opts...)
	return &fixture{t: t, exec: exec, threads: ts, runs: rm, model: model}
}

// newExecutor is an executor over these stores, as a replica is beside
// others on shared ones.
func newExecutor(t *testing.T, model *llmtest.Script, ts *threads.MemoryStore, store runs.Store, log runs.Log, opts ...runexec.Option) *runexec.Executor {
	t.Helper()
	agentStore := registry.NewMemoryStore()
	exec, err := runexec.New(runexec.Deps{
		Threads: ts, Locker: ts, Runs: store, Log: log, Quota: quota.NewMemory(),
		Agents: registry.New(agents(), agentStore), Tools: agentStore,
		Models:    func(string, string, []*llmv1.ModelSpec) runexec.Model { return model },
		Sandboxes: func(string, *loop.BackendCfg) wickfs.FileSystem { return nil },
	}, append([]runexec.Option{runexec.WithPollInterval(20 * time.Millisecond), runexec.WithJoinBlock(50 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(exec.Close)
	return exec
}

// sharedLog hides that the log is in memory, so the executor keeps its own
// copy of its runs' events beside it, as a replica does beside Redis.
type sharedLog struct{ runs.Log }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func human(s string) []llm.Message { return []llm.Message{loop.Human(s)} }

func calc(id, expr string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: "calculate", Args: map[string]any{"expr": expr}}
}

// start starts a run that must start.
func (f *fixture) start(ctx context.Context, req runexec.Request) *runexec.Run {
	f.t.Helper()
	r, err := f.exec.Start(ctx, user, req)
	if err != nil {
		f.t.Fatalf("start: %v", err)
	}
	return r
}

// events follows a run to its end.
func (f *fixture) events(t *testing.T, r *runexec.Run) []loop.StreamEvent {
	t.Helper()
	var evs []loop.StreamEvent
	if err := f.exec.Follow(testCtx(t), r, func(ev loop.StreamEvent) error {
		evs = append(evs, ev)
		return nil
	}); err != nil {
		t.Fatalf("follow: %v", err)
	}
	return evs
}

func names(evs []loop.StreamEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Event()
	}
	return out
}

func TestRunToolRoundThenAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, llmtest.New(llmtest.Call(calc("c1", "2+3")), llmtest.Text("it is 5")))
	ctx := testCtx(t)
	r := f.start(ctx, runexec.Request{AgentID: "calc", Input: human("2+3?")})
	evs := f.events(t, r)
	got := names(evs)
	if got[0] != "on_run_start" || got[len(got)-1] != "done" {
		t.Fatalf("events = %v, want on_run_start first and done last", got)
	}
	for i, ev := range evs {
		if ev.RunID != r.ID() || ev.ID == "" {
			t.Fatalf("event %d = %+v, want run id %s and an event id", i, ev, r.ID())
		}
	}
	out, err := f.exec.Await(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if out.Run.Status != runs.StatusDone || out.Thread == nil {
		t.Fatalf("outcome = %+v, want done with a saved thread", out)
	}
	// The tool call, its result and the answer follow the input.
	if len(out.Added) != 3 || out.Added[1].Content != "5" || out.Added[2].Content != "it is 5" {
		t.Fatalf("added = %+v", out.Added)
	}
	// The lock was released: the next run on the thread starts at once.
	f.model.Repeat = &llmtest.Turn{Deltas: []string{"again"}}
	next := f.start(ctx, runexec.Request{AgentID: "calc", ThreadID: out.Run.ThreadID, Input: human("again")})
	<-next.Done()
}

func TestStartRefuses(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	f := newFixture(t, llmtest.New(llmtest.Turn{Block: true, Started: block}), runexec.WithMaxInputMessages(2))
	ctx := testCtx(t)
	busy := f.start(ctx, runexec.Request{AgentID: "calc", ThreadID: "busy", Input: human("hi")})
	<-block
	if err := f.threads.Save(ctx, user, &loop.AgentState{ThreadID: "other", AgentID: "careful"}, "", threads.Bounds{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		req  runexec.Request
		want error
		msg  string
	}{
		{"bad agent id", runexec.Request{AgentID: "../etc", Input: human("hi")}, runexec.ErrInvalid, "agent_id"},
		{"too many messages", runexec.Request{AgentID: "calc", Input: append(human("a"), loop.Human("b"), loop.Human("c"))}, runexec.ErrInvalid, "at most 2 messages"},
		{"no input", runexec.Request{AgentID: "calc"}, runexec.ErrInvalid, "messages"},
		{"assistant input", runexec.Request{AgentID: "calc", Input: []llm.Message{loop.AI("x")}}, runexec.ErrInvalid, "messages"},
		{"tool call in input", runexec.Request{AgentID: "calc", Input: []llm.Message{{Role: llm.RoleUser, Content: "x", ToolCallID: "c"}}}, runexec.ErrInvalid, "messages[0]"},
		{"bad thread id", runexec.Request{AgentID: "calc", ThreadID: "a b", Input: human("hi")}, runexec.ErrInvalid, "thread_id"},
		{"unknown agent", runexec.Request{AgentID: "nope", Input: human("hi")}, runexec.ErrNotFound, "agent nope not found"},
		{"thread of another agent", runexec.Request{AgentID: "calc", ThreadID: "other", Input: human("hi")}, runexec.ErrInvalid, "belongs to agent careful"},
		{"new thread named as a sub-agent's", runexec.Request{AgentID: "calc", ThreadID: "th_sub_mine", Input: human("hi")}, runexec.ErrInvalid, "kept for sub-agents' threads"},
		{"busy thread", runexec.Request{AgentID: "calc", ThreadID: "busy", Input: human("hi")}, threads.ErrBusy, "set enqueue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.exec.Start(ctx, user, tc.req)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v naming %q", err, tc.want, tc.msg)
			}
		})
	}
	// A refused start leaves the thread's lock alone: "busy" is still held,
	// "other" is free.
	if holder, _ := f.threads.Holder(ctx, user, "other"); holder != "" {
		t.Fatalf("thread other is held by %q after a refused start", holder)
	}
	if _, err := f.exec.Cancel(ctx, user, busy.ID()); err != nil {
		t.Fatal(err)
	}
}

func TestCancelEndsRunAndFreesThread(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	f := newFixture(t, llmtest.New(llmtest.Turn{Block: true, Started: block}, llmtest.Text("after")))
	ctx := testCtx(t)
	r := f.start(ctx, runexec.Request{AgentID: "calc", Input: human("wait")})
	<-block
	snap, err := f.exec.Cancel(ctx, user, r.ID())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Run.Status != runs.StatusCancelled || snap.LastEventID == "" {
		t.Fatalf("snapshot = %+v %q, want cancelled with a last event id", snap.Run, snap.LastEventID)
	}
	evs := f.events(t, r)
	last := evs[len(evs)-1]
	if data := last.DataMap(); last.Event() != "error" || data["code"] != "cancelled" {
		t.Fatalf("last event = %+v, want an error with code cancelled", last)
	}
	next := f.start(ctx, runexec.Request{AgentID: "calc", ThreadID: r.Record().ThreadID, Input: human("go on")})
	<-next.Done()
	if st := next.Record().Status; st != runs.StatusDone {
		t.Fatalf("next run is %s", st)
	}
}

func TestCancelWithClient(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	f := newFixture(t, llmtest.New(llmtest.Turn{Block: true, Started: block}))
	client, leave := context.WithCancel(testCtx(t))
	r := f.start(client, runexec.Request{AgentID: "calc", Input: human("wait")})
	r.CancelWith(client)
	<-block
	leave()
	<-r.Done()
	if rec := r.Record(); rec.Status != runs.StatusCancelled || rec.Error != "the client went away" {
		t.Fatalf("record = %+v, want cancelled because the client went away", rec)
	}
}

func TestApprovalDecisions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		decision loop.Decision
		result   string // the tool message the thread keeps
		always   string // the decision the thread remembers for the tool
	}{
		{"approve", loop.Decision{ToolCallID: "c1", Action: loop.ActionApprove}, "5", ""},
		{"edit", loop.Decision{ToolCallID: "c1", Action: loop.ActionEdit, Args: map[string]any{"expr": "6*7"}}, "42", ""},
		{"reject", loop.Decision{ToolCallID: "c1", Action: loop.ActionReject, Message: "no"}, loop.RejectedToolResult + ": no", ""},
		{"approve always", loop.Decision{ToolCallID: "c1", Action: loop.ActionApprove, Always: true}, "5", loop.ActionApprove},
		{"reject always", loop.Decision{ToolCallID: "c1", Action: loop.ActionReject, Always: true}, loop.RejectedToolResult, loop.ActionReject},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, llmtest.New(llmtest.Call(calc("c1", "2+3")), llmtest.Text("ok")))
			ctx := testCtx(t)
			r := f.start(ctx, runexec.Request{AgentID: "careful", Input: human("2+3?")})
			out, err := f.exec.Await(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			if out.Run.Status != runs.StatusWaiting || len(out.Run.Pending) != 1 || out.Run.Pending[0].ID != "c1" {
				t.Fatalf("outcome = %+v, want waiting for c1", out.Run)
			}
			if _, err := f.exec.Resume(ctx, user, r.ID(), []loop.Decision{tc.decision}); err != nil {
				t.Fatal(err)
			}
			<-r.Done()
			st, err := f.threads.Get(ctx, user, out.Run.ThreadID)
			if err != nil {
				t.Fatal(err)
			}
			var tool *llm.Message
			for i := range st.Messages {
				if st.Messages[i].Role == llm.RoleTool {
					tool = &st.Messages[i]
				}
			}
			if r.Record().Status != runs.StatusDone || tool == nil || tool.Content != tc.result {
				t.Fatalf("status %s, tool message %+v, want done with %q", r.Record().Status, tool, tc.result)
			}
			if got := st.ApprovalAlways[tool.Name]; got != tc.always {
				t.Fatalf("the thread remembers %q for %s, want %q", got, tool.Name, tc.always)
			}
		})
	}
}

// TestInterruptAfterWaiting: a client that resumes as soon as it sees
// on_interrupt (an SDK that approves by rule) must find the run waiting,
// so the run is recorded waiting before the event is logged — for an
// approval and for an ask_user question alike.
func TestInterruptAfterWaiting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		agent    string
		call     llm.ToolCall
		decision loop.Decision
	}{
		{"careful", calc("c1", "2+3"), loop.Decision{ToolCallID: "c1", Action: loop.ActionApprove}},
		{"asker", llm.ToolCall{ID: "q1", Name: runexec.AskUserTool, Args: map[string]any{"question": "Which?"}}, loop.Decision{ToolCallID: "q1", Action: runexec.ActionAnswer, Message: "this"}},
	}
	for _, tc := range cases {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			var order orderLog
			f := newFixtureOver(t, llmtest.New(llmtest.Call(tc.call), llmtest.Text("ok")), func(s runs.Store, l runs.Log) (runs.Store, runs.Log) {
				return orderedStore{s, &order}, orderedLog{l, &order}
			})
			ctx := testCtx(t)
			r := f.start(ctx, runexec.Request{AgentID: tc.agent, Input: human("go")})
			err := f.exec.Follow(ctx, r, func(ev loop.StreamEvent) error {
				if ev.Event() != "on_interrupt" {
					return nil
				}
				_, err := f.exec.Resume(ctx, user, r.ID(), []loop.Decision{tc.decision})
				return err
			})
			if err != nil {
				t.Fatalf("resume on the interrupt event: %v", err)
			}
			if st := r.Record().Status; st != runs.StatusDone {
				t.Fatalf("run ended %s", st)
			}
			waiting, interrupt := order.index("status "+runs.StatusWaiting), order.index("event "+"on_interrupt")
			if waiting < 0 || interrupt < 0 || waiting > interrupt {
				t.Fatalf("order of writes %v: the run must be recorded waiting before its interrupt is logged", order.all())
			}
		})
	}
}

// orderLog records the order of a run's writes to its record and its log.
type orderLog struct {
	mu     sync.Mutex
	writes []string
}

func (o *orderLog) add(w string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.writes = append(o.writes, w)
}

func (o *orderLog) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.writes)
}

func (o *orderLog) index(w string) int { return slices.Index(o.all(), w) }

type orderedStore struct {
	runs.Store
	order *orderLog
}

func (s orderedStore) Put(ctx context.Context, r *runs.Run) error {
	s.order.add("status " + r.Status)
	return s.Store.Put(ctx, r)
}

type orderedLog struct {
	runs.Log
	order *orderLog
}

func (l orderedLog) Append(ctx context.Context, runID string, ev loop.StreamEvent) (string, error) {
	l.order.add("event " + ev.Event())
	return l.Log.Append(ctx, runID, ev)
}

func TestResumeRefuses(t *testing.T) {
	t.Parallel()
	f := newFixture(t, llmtest.New(llmtest.Call(calc("c1", "2+3")), llmtest.Text("ok")))
	ctx := testCtx(t)
	r := f.start(ctx, runexec.Request{AgentID: "careful", Input: human("2+3?")})
	if _, err := f.exec.Await(ctx, r); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		user      string
		decisions []loop.Decision
		want      error
		msg       string
	}{
		{"another user", "bob", []loop.Decision{{ToolCallID: "c1", Action: loop.ActionApprove}}, runexec.ErrNotFound, "not found"},
		{"not pending", user, []loop.Decision{{ToolCallID: "c9", Action: loop.ActionApprove}}, runexec.ErrInvalid, "decisions[0].tool_call_id"},
		{"unknown action", user, []loop.Decision{{ToolCallID: "c1", Action: "maybe"}}, runexec.ErrInvalid, "decisions[0].action"},
		{"edit without args", user, []loop.Decision{{ToolCallID: "c1", Action: loop.ActionEdit}}, runexec.ErrInvalid, "decisions[0].args"},
		{"answer always", user, []loop.Decision{{ToolCallID: "c1", Action: loop.ActionApprove}, {ToolCallID: "c1", Action: runexec.ActionAnswer, Message: "x", Always: true}},
			runexec.ErrInvalid, "decisions[1].always"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.exec.Resume(ctx, tc.user, r.ID(), tc.decisions)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v naming %q", err, tc.want, tc.msg)
			}
		})
	}
	if _, err := f.exec.Resume(ctx, user, r.ID(), []loop.Decision{{ToolCallID: "c1", Action: loop.ActionApprove}}); err != nil {
		t.Fatal(err)
	}
	<-r.Done()
	if _, err := f.exec.Resume(ctx, user, r.ID(), nil); !errors.Is(err, runexec.ErrNotWaiting) {
		t.Fatalf("resume of a finished run: err = %v, want ErrNotWaiting", err)
	}
}

func TestApprovalTimeoutAbortsRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, llmtest.New(llmtest.Call(calc("c1", "2+3"))), runexec.WithApprovalTimeout(50*time.Millisecond))
	r := f.start(testCtx(t), runexec.Request{AgentID: "careful", Input: human("2+3?")})
	evs := f.events(t, r)
	if last := evs[len(evs)-1]; last.Event() != "error" {
		t.Fatalf("last event = %+v, want an error", last)
	}
	if rec := r.Record(); rec.Status != runs.StatusFailed || rec.Error != "no approval decision came in time" {
		t.Fatalf("record = %+v", rec)
	}
}

func TestJoinAfterEventID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, llmtest.New(llmtest.Call(calc("c1", "1+1")), llmtest.Text("2")))
	ctx := testCtx(t)
	r := f.start(ctx, runexec.Request{AgentID: "calc", Input: human("1+1?")})
	all := f.events(t, r)
	var rest []loop.StreamEvent
	if err := f.exec.Join(ctx, user, r.ID(), all[1].ID, func(ev loop.StreamEvent) error {
		rest = append(rest, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(rest) != len(all)-2 || rest[0].ID != all[2].ID {
		t.Fatalf("joined after %s: %v, want %v", all[1].ID, names(rest), names(all[2:]))
	}
	for _, tc := range []struct {
		name, user, runID, after string
		want                     error
	}{
		{"bad event id", user, r.ID(), "zzz", runexec.ErrInvalid},
		{"bad run id", user, "a b", "", runexec.ErrInvalid},
		{"another user", "bob", r.ID(), "", runexec.ErrNotFound},
		{"unknown run", user, "run_nope", "", runs.ErrNotFound},
	} {
		err := f.exec.Join(ctx, tc.user, tc.runID, tc.after, func(loop.StreamEvent) error { return nil })
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestDeadRunIsReaped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, llmtest.New())
	ctx := testCtx(t)
	// A run another replica started and lost: "running", with a lease token
	// nobody holds and a shared log without an end.
	rec := &runs.Run{ID: "run_dead", User: user, ThreadID: "th", AgentID: "calc", Status: runs.StatusRunning, LeaseToken: "gone"}
	if err := f.runs.Put(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := f.runs.Append(ctx, rec.ID, loop.StreamEvent{RunID: rec.ID, Data: runevent.MustFromJSON("on_run_start", nil)}); err != nil {
		t.Fatal(err)
	}
	var evs []loop.StreamEvent
	if err := f.exec.Join(ctx, user, rec.ID, "", func(ev loop.StreamEvent) error {
		evs = append(evs, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if data := last.DataMap(); len(evs) != 2 || last.Event() != "error" || data["code"] != "lost" {
		t.Fatalf("events = %+v, want the start and an error with code lost", evs)
	}
	snap, err := f.exec.Get(ctx, user, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Run.Status != runs.StatusFailed || snap.LastEventID != last.ID {
		t.Fatalf("snapshot = %+v %q", snap.Run, snap.LastEventID)
	}
}

func TestCloseCancelsRunsAndRefusesNew(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	f := newFixture(t, llmtest.New(llmtest.Turn{Block: true, Started: block}))
	ctx := testCtx(t)
	r := f.start(ctx, runexec.Request{AgentID: "calc", Input: human("wait")})
	<-block
	f.exec.Close()
	if rec := r.Record(); rec.Status != runs.StatusCancelled || rec.Error != runexec.ErrShutdown.Error() {
		t.Fatalf("record = %+v, want cancelled by the shutdown", rec)
	}
	if _, err := f.exec.Start(ctx, user, runexec.Request{AgentID: "calc", Input: human("hi")}); !errors.Is(err, runexec.ErrShutdown) {
		t.Fatalf("start after close: err = %v, want ErrShutdown", err)
	}
}
