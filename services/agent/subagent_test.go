package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/services/agent"
)

// conversation is what a scripted model sees of one request: the first user
// message (the goal of a sub-agent, or the user's message of a run), how
// many replies it gave already, and the last message.
type conversation struct {
	goal  string
	turns int
	last  *llmv1.Message
	// outputs are the tool results so far, "name=content|…".
	outputs string
}

func converse(req *llmv1.StreamRequest) conversation {
	var c conversation
	for _, m := range req.GetMessages() {
		switch {
		case m.GetRole() == "user" && c.goal == "":
			c.goal = m.GetContent()
		case m.GetRole() == "assistant":
			c.turns++
		}
	}
	msgs := req.GetMessages()
	c.last = msgs[len(msgs)-1]
	c.outputs = toolOutputs(req)
	return c
}

// script answers each conversation by its goal, so parallel sub-agents on
// one fake model each follow their own script.
func script(byGoal func(c conversation) reply) func(int, *llmv1.StreamRequest) reply {
	return func(_ int, req *llmv1.StreamRequest) reply { return byGoal(converse(req)) }
}

// task is a task tool call.
func task(id, subagent, goal string) *llmv1.ToolCall {
	args := map[string]any{"description": goal}
	if subagent != "" {
		args["subagent_type"] = subagent
	}
	return call(id, "task", args)
}

// toolOutputs are the tool messages of a request, "name=content", joined.
func toolOutputs(req *llmv1.StreamRequest) string {
	var outs []string
	for _, m := range req.GetMessages() {
		if m.GetRole() == "tool" {
			outs = append(outs, m.GetName()+"="+m.GetContent())
		}
	}
	return strings.Join(outs, "|")
}

// meeting is a native tool whose calls return only once n of them are in
// flight at the same time: sub-agents that ran one after the other would
// never meet (the call's context ends first, and the test fails).
type meeting struct {
	mu     sync.Mutex
	n      int
	inside int
	all    chan struct{}
}

func newMeeting(n int) *meeting { return &meeting{n: n, all: make(chan struct{})} }

func (m *meeting) tool() *agent.FuncTool {
	return &agent.FuncTool{ToolName: "native_meet", Fn: func(ctx context.Context, _ map[string]any) (string, error) {
		m.mu.Lock()
		if m.inside++; m.inside == m.n {
			close(m.all)
		}
		m.mu.Unlock()
		select {
		case <-m.all:
			return "met", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}}
}

// field is a string field of an event's data.
func field(ev *agentv1.StreamEvent, name string) string {
	return ev.GetData().GetStructValue().GetFields()[name].GetStringValue()
}

func number(ev *agentv1.StreamEvent, name string) float64 {
	return ev.GetData().GetStructValue().GetFields()[name].GetNumberValue()
}

// ofKind returns the events of one kind.
func ofKind(evs []*agentv1.StreamEvent, kind string) []*agentv1.StreamEvent {
	var out []*agentv1.StreamEvent
	for _, e := range evs {
		if e.GetEvent() == kind {
			out = append(out, e)
		}
	}
	return out
}

// redisReplica is one agent service on a real redis-server.
func redisReplica(t *testing.T, s *suite, opts ...agent.Option) *replica {
	t.Helper()
	st, rdb := redisStores(t, needRedis(t), 2*time.Second)
	return s.agent(st, rdb, append(replicaOpts(), opts...)...)
}

func createAgent(t *testing.T, r *replica, ctx context.Context, a *agentv1.Agent) {
	t.Helper()
	if _, err := r.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: a}); err != nil {
		t.Fatal(err)
	}
}

func streamRun(t *testing.T, r *replica, ctx context.Context, agentID, msg string) []*agentv1.StreamEvent {
	t.Helper()
	st, err := r.client.Stream(ctx, &agentv1.StreamRequest{AgentId: agentID, Messages: human(msg)})
	if err != nil {
		t.Fatal(err)
	}
	return collect(t, st.Recv)
}

// TestSubagentsRunInParallel: a parent hands two tasks to sub-agents in one
// turn, a general-purpose one that writes a file and a declared one; they
// run at the same time (they meet in native_meet), their events reach the
// parent's stream wrapped and tagged, and the parent then reads the file.
func TestSubagentsRunInParallel(t *testing.T) {
	t.Parallel()
	s := newSuite(t, script(func(c conversation) reply {
		switch {
		case c.goal == "go" && c.turns == 0:
			return reply{calls: []*llmv1.ToolCall{
				task("t1", "", "write notes.txt"),
				task("t2", "researcher", "find the answer"),
			}}
		case c.goal == "go" && c.turns == 1:
			return reply{calls: []*llmv1.ToolCall{call("r1", "read_file", map[string]any{"path": "/workspace/notes.txt"})}}
		case c.goal == "go":
			return text("parent saw: " + c.outputs)
		case c.turns == 0 && c.goal == "write notes.txt":
			return reply{calls: []*llmv1.ToolCall{
				call("m1", "native_meet", nil),
				call("w1", "write_file", map[string]any{"path": "/workspace/notes.txt", "content": "from the child\n"}),
			}}
		case c.turns == 0:
			return reply{calls: []*llmv1.ToolCall{call("m2", "native_meet", nil)}}
		case c.goal == "write notes.txt":
			return text("wrote notes.txt")
		default:
			return text("the answer is 42")
		}
	}))
	r := redisReplica(t, s, agent.WithNativeTools(newMeeting(2).tool()))
	ctx := withTimeout(t, as("alice"), 60*time.Second)
	createAgent(t, r, ctx, &agentv1.Agent{
		AgentId: "lead", Tools: []string{"task", "native_meet"}, Backend: &agentv1.BackendConfig{Type: "local"},
		Subagents: []*agentv1.Subagent{{Name: "researcher", Description: "finds answers", Prompt: "You research.", Tools: []string{"native_meet"}}},
	})

	evs := streamRun(t, r, ctx, "lead", "go")
	last := evs[len(evs)-1]
	if last.GetEvent() != "done" {
		t.Fatalf("run ended with %v", last)
	}
	runID := evs[0].GetRunId()
	if n := len(ofKind(evs, "done")); n != 1 {
		t.Fatalf("%d bare done events; a child's done must come wrapped", n)
	}
	starts, ends := ofKind(evs, "on_subagent_start"), ofKind(evs, "on_subagent_end")
	if len(starts) != 2 || len(ends) != 2 {
		t.Fatalf("starts %d, ends %d: %v", len(starts), len(ends), names(evs))
	}
	children := map[string]string{} // child run → its thread
	for _, e := range append(starts, ends...) {
		if field(e, "parent_run_id") != runID || number(e, "depth") != 1 || !strings.HasPrefix(field(e, "run_id"), "run_") {
			t.Fatalf("badly tagged %v", e)
		}
		children[field(e, "run_id")] = field(e, "thread_id")
	}
	for _, e := range ends {
		if field(e, "status") != "completed" {
			t.Fatalf("sub-agent ended %v", e)
		}
	}
	if len(children) != 2 {
		t.Fatalf("children %v", children)
	}
	wrapped := map[string][]string{}
	for _, e := range ofKind(evs, "on_subagent_event") {
		inner := e.GetData().GetStructValue().GetFields()["event"].GetStructValue().GetFields()
		wrapped[field(e, "run_id")] = append(wrapped[field(e, "run_id")], inner["event"].GetStringValue())
	}
	for child := range children {
		got := strings.Join(wrapped[child], ",")
		if !strings.Contains(got, "on_tool_start") || !strings.HasSuffix(got, "done") {
			t.Fatalf("child %s events %s", child, got)
		}
	}
	th, err := r.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: last.GetThreadId()})
	if err != nil {
		t.Fatal(err)
	}
	msgs := th.GetThread().GetMessages()
	checkNoDanglingCalls(t, msgs)
	final := msgs[len(msgs)-1].GetContent()
	for _, want := range []string{"task=wrote notes.txt", "task=the answer is 42", "read_file=", "from the child"} {
		if !strings.Contains(final, want) {
			t.Fatalf("parent's answer %q lacks %q", final, want)
		}
	}
	// Each child's thread is saved and readable, and left out of the list.
	for _, thread := range children {
		cth, err := r.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: thread})
		if err != nil || len(cth.GetThread().GetMessages()) < 4 {
			t.Fatalf("child thread %s: %v, %v", thread, cth, err)
		}
	}
	list, err := r.client.ListThreads(ctx, &agentv1.ListThreadsRequest{})
	if err != nil || len(list.GetThreads()) != 1 || list.GetThreads()[0].GetThreadId() != last.GetThreadId() {
		t.Fatalf("thread list %v, %v", list, err)
	}
}

// TestSubagentDepthLimit: every level hands its task to a general-purpose
// sub-agent one level deeper; the task call that would start depth
// maxDepth+1 is a tool error, and each level above answers with what it got.
func TestSubagentDepthLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		maxDepth int // 0: the default, 5
		starts   int
	}{
		{"default", 0, 5},
		{"configured", 2, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSuite(t, script(func(c conversation) reply {
				if c.turns == 0 {
					return reply{calls: []*llmv1.ToolCall{task("d", "", "deeper than "+c.goal)}}
				}
				return text(c.last.GetContent())
			}))
			r := redisReplica(t, s, agent.WithSubagents(tt.maxDepth, 0))
			ctx := withTimeout(t, as("alice"), 60*time.Second)
			createAgent(t, r, ctx, &agentv1.Agent{AgentId: "nest", Tools: []string{"task"}})
			evs := streamRun(t, r, ctx, "nest", "top")
			if last := evs[len(evs)-1]; last.GetEvent() != "done" {
				t.Fatalf("run ended with %v", last)
			}
			starts := ofKind(evs, "on_subagent_start")
			if len(starts) != tt.starts {
				t.Fatalf("%d sub-agents started, want %d", len(starts), tt.starts)
			}
			for i, e := range starts {
				if int(number(e, "depth")) != i+1 {
					t.Fatalf("start %d at depth %v", i, number(e, "depth"))
				}
			}
			// The deepest child's task call failed; its error went up as
			// each level's answer.
			th, err := r.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: evs[0].GetThreadId()})
			if err != nil {
				t.Fatal(err)
			}
			msgs := th.GetThread().GetMessages()
			if got := msgs[len(msgs)-1].GetContent(); !strings.Contains(got, "depth limit") || !strings.Contains(got, "depth "+itoa(tt.starts+1)) {
				t.Fatalf("top answer %q", got)
			}
		})
	}
}

// TestSubagentTimeout: a declared sub-agent whose model never answers is
// ended by its timeout; the parent's task call gets a clear error and the
// parent goes on.
func TestSubagentTimeout(t *testing.T) {
	t.Parallel()
	s := newSuite(t, script(func(c conversation) reply {
		switch {
		case c.goal == "go" && c.turns == 0:
			return reply{calls: []*llmv1.ToolCall{task("t1", "slow", "never finish")}}
		case c.goal == "go":
			return text("parent saw: " + c.outputs)
		default:
			return reply{block: true}
		}
	}))
	r := redisReplica(t, s)
	ctx := withTimeout(t, as("alice"), 60*time.Second)
	createAgent(t, r, ctx, &agentv1.Agent{AgentId: "lead", Tools: []string{"task"}, Subagents: []*agentv1.Subagent{
		{Name: "slow", Description: "never answers", Timeout: durationpb.New(300 * time.Millisecond)},
	}})
	evs := streamRun(t, r, ctx, "lead", "go")
	if last := evs[len(evs)-1]; last.GetEvent() != "done" {
		t.Fatalf("run ended with %v", last)
	}
	ends := ofKind(evs, "on_subagent_end")
	if len(ends) != 1 || field(ends[0], "status") != "timeout" || !strings.Contains(field(ends[0], "error"), "300ms") {
		t.Fatalf("ends %v", ends)
	}
	var toolErr string
	for _, e := range ofKind(evs, "on_tool_end") {
		toolErr = field(e, "error")
	}
	if !strings.Contains(toolErr, "timed out") {
		t.Fatalf("task call error %q", toolErr)
	}
}

// blocker is a native tool that blocks until its context ends or it is
// opened, and reports how each call ended.
type blocker struct {
	started chan struct{}
	open    chan struct{}
	ended   chan error
	once    sync.Once
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}), open: make(chan struct{}), ended: make(chan error, 8)}
}

func (b *blocker) tool() *agent.FuncTool {
	return &agent.FuncTool{ToolName: "native_block", Fn: func(ctx context.Context, _ map[string]any) (string, error) {
		b.once.Do(func() { close(b.started) })
		select {
		case <-b.open:
			b.ended <- nil
			return "opened", nil
		case <-ctx.Done():
			b.ended <- ctx.Err()
			return "", ctx.Err()
		}
	}}
}

func (b *blocker) wait(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-b.started:
	case <-ctx.Done():
		t.Fatal("the sub-agent's tool never started")
	}
}

// childBlocks is the script of a parent that hands one task to a child
// which calls native_block.
func childBlocks() func(int, *llmv1.StreamRequest) reply {
	return script(func(c conversation) reply {
		switch {
		case c.goal == "go" && c.turns == 0:
			return reply{calls: []*llmv1.ToolCall{task("t1", "", "block")}}
		case c.goal == "go":
			return text("parent saw: " + c.outputs)
		case c.turns == 0:
			return reply{calls: []*llmv1.ToolCall{call("b1", "native_block", nil)}}
		default:
			return text("child done")
		}
	})
}

// startBlockedChild streams a run whose sub-agent is inside native_block
// when it returns; first is the run's first event.
func startBlockedChild(t *testing.T) (*suite, *replica, *blocker, context.Context, agentv1.AgentService_StreamClient, *agentv1.StreamEvent) {
	t.Helper()
	b := newBlocker()
	s := newSuite(t, childBlocks())
	r := redisReplica(t, s, agent.WithNativeTools(b.tool()))
	ctx := withTimeout(t, as("alice"), 60*time.Second)
	createAgent(t, r, ctx, &agentv1.Agent{AgentId: "lead", Tools: []string{"task", "native_block"}})
	st, err := r.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "lead", Messages: human("go")})
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	b.wait(t, ctx)
	return s, r, b, ctx, st, first.GetEvent()
}

// TestSubagentCancelledWithParent: cancelling the parent mid-child ends
// the child's work (its tool's context ends) and the parent's run.
func TestSubagentCancelledWithParent(t *testing.T) {
	t.Parallel()
	_, r, b, ctx, st, first := startBlockedChild(t)
	if _, err := r.client.CancelRun(ctx, &agentv1.CancelRunRequest{RunId: first.GetRunId()}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-b.ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the child's tool ended with %v, want its context cancelled", err)
		}
	case <-ctx.Done():
		t.Fatal("the child's tool was not cancelled")
	}
	evs := collect(t, st.Recv)
	if last := evs[len(evs)-1]; last.GetEvent() != "error" || field(last, "code") != "cancelled" {
		t.Fatalf("parent ended with %v", last)
	}
	run := waitStatus(t, r, ctx, first.GetRunId(), "cancelled")
	th, err := r.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: run.GetThreadId()})
	if err != nil {
		t.Fatal(err)
	}
	checkNoDanglingCalls(t, th.GetThread().GetMessages())
}

// TestSubagentStopsWithParent: a graceful stop of the parent stops the
// child at its next step boundary: the child's round in flight finishes,
// the child makes no further model call and ends "stopped", then the
// parent ends "stopped".
func TestSubagentStopsWithParent(t *testing.T) {
	t.Parallel()
	s, r, b, ctx, st, first := startBlockedChild(t)
	if _, err := r.client.StopRun(ctx, &agentv1.StopRunRequest{RunId: first.GetRunId()}); err != nil {
		t.Fatal(err)
	}
	close(b.open)
	evs := collect(t, st.Recv)
	if last := evs[len(evs)-1]; last.GetEvent() != "done" || stopReason(last) != "stopped" {
		t.Fatalf("parent ended with %v", last)
	}
	ends := ofKind(evs, "on_subagent_end")
	if len(ends) != 1 || field(ends[0], "status") != "stopped" {
		t.Fatalf("child ends %v", ends)
	}
	s.llm.mu.Lock()
	calls := len(s.llm.requests)
	s.llm.mu.Unlock()
	if calls != 2 {
		t.Fatalf("%d model calls; want the parent's and the child's first, none after the stop", calls)
	}
	child, err := r.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: field(ends[0], "thread_id")})
	if err != nil {
		t.Fatal(err)
	}
	if got := toolResults(t, r, ctx, child.GetThread().GetThreadId()); len(got) != 1 || got[0] != "b1=opened" {
		t.Fatalf("child's thread after the stop: %v", got)
	}
}

// TestSubagentBadInput: bad task calls are tool errors the parent's model
// sees, and bad declarations are refused with InvalidArgument.
func TestSubagentBadInput(t *testing.T) {
	t.Parallel()
	s := newSuite(t, script(func(c conversation) reply {
		if c.turns == 0 {
			return reply{calls: []*llmv1.ToolCall{task("u1", "nobody", "do it"), task("e1", "", "  ")}}
		}
		return text("saw: " + c.outputs)
	}))
	r := redisReplica(t, s)
	ctx := withTimeout(t, as("alice"), 60*time.Second)
	createAgent(t, r, ctx, &agentv1.Agent{AgentId: "lead", Tools: []string{"task"}})
	evs := streamRun(t, r, ctx, "lead", "go")
	if len(ofKind(evs, "on_subagent_start")) != 0 {
		t.Fatalf("a bad task started a sub-agent: %v", names(evs))
	}
	errs := map[string]string{}
	for _, e := range ofKind(evs, "on_tool_end") {
		errs[field(e, "tool_call_id")] = field(e, "error")
	}
	if !strings.Contains(errs["u1"], `unknown sub-agent "nobody"`) || !strings.Contains(errs["u1"], "general-purpose") {
		t.Fatalf("unknown name: %q", errs["u1"])
	}
	if !strings.Contains(errs["e1"], "description is empty") {
		t.Fatalf("empty goal: %q", errs["e1"])
	}

	for _, tt := range []struct {
		name string
		sub  *agentv1.Subagent
		want string
	}{
		{"built-in name", &agentv1.Subagent{Name: "general-purpose", Description: "x"}, "general-purpose"},
		{"no description", &agentv1.Subagent{Name: "helper"}, "description"},
		{"bad name", &agentv1.Subagent{Name: "a b", Description: "x"}, "subagents[0].name"},
		{"bad tool", &agentv1.Subagent{Name: "helper", Description: "x", Tools: []string{"a/b"}}, "subagents[0].tools[0]"},
		{"negative timeout", &agentv1.Subagent{Name: "helper", Description: "x", Timeout: durationpb.New(-time.Second)}, "timeout"},
	} {
		_, err := r.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "bad", Subagents: []*agentv1.Subagent{tt.sub}}})
		if code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// TestSubagentOfInteractiveParent: an interactive parent's task call waits
// for approval once; approved, the child runs its own tool calls without
// asking again.
func TestSubagentOfInteractiveParent(t *testing.T) {
	t.Parallel()
	s := newSuite(t, script(func(c conversation) reply {
		switch {
		case c.goal == "go" && c.turns == 0:
			return reply{calls: []*llmv1.ToolCall{task("t1", "", "compute")}}
		case c.goal == "go":
			return text("parent saw: " + c.outputs)
		case c.turns == 0:
			return reply{calls: []*llmv1.ToolCall{call("c1", "calculate", map[string]any{"expr": "6*7"})}}
		default:
			return text("child saw: " + c.outputs)
		}
	}))
	r := redisReplica(t, s)
	ctx := withTimeout(t, as("alice"), 60*time.Second)
	createAgent(t, r, ctx, &agentv1.Agent{AgentId: "careful", Approval: "interactive", Tools: []string{"task", "calculate"}})
	resp, err := r.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "careful", Messages: human("go")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus() != "waiting_approval" || len(resp.GetInterrupt()) != 1 || resp.GetInterrupt()[0].GetName() != "task" {
		t.Fatalf("Invoke = %v", resp)
	}
	if _, err := r.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: resp.GetRunId(), Decisions: []*agentv1.ApprovalDecision{{ToolCallId: "t1", Action: "approve"}}}); err != nil {
		t.Fatal(err)
	}
	js, err := r.client.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: resp.GetRunId()})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, js.Recv)
	if n := len(ofKind(evs, "on_interrupt")); n != 1 || evs[len(evs)-1].GetEvent() != "done" {
		t.Fatalf("%d interrupts; events %v", n, names(evs))
	}
	th, err := r.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: resp.GetThreadId()})
	if err != nil {
		t.Fatal(err)
	}
	msgs := th.GetThread().GetMessages()
	if got := msgs[len(msgs)-1].GetContent(); got != "parent saw: task=child saw: calculate=42" {
		t.Fatalf("parent's answer %q", got)
	}
}
