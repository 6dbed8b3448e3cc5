package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/services/agent"
)

// gate is a native tool that blocks until the test opens it, so a test can
// act while a tool round is in flight.
type gate struct {
	started chan struct{}
	open    chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{started: make(chan struct{}), open: make(chan struct{})} }

func (g *gate) tool() *agent.FuncTool {
	return &agent.FuncTool{ToolName: "native_gate", Fn: func(ctx context.Context, _ map[string]any) (string, error) {
		g.once.Do(func() { close(g.started) })
		select {
		case <-g.open:
			return "gate passed", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}}
}

// twoReplicas starts two agent services on one real redis-server.
func twoReplicas(t *testing.T, s *suite, opts ...agent.Option) (a, b *replica) {
	t.Helper()
	addr := needRedis(t)
	stA, rdbA := redisStores(t, addr, 2*time.Second)
	stB, rdbB := redisStores(t, addr, 2*time.Second)
	opts = append(replicaOpts(), opts...)
	return s.agent(stA, rdbA, opts...), s.agent(stB, rdbB, opts...)
}

func stopReason(ev *agentv1.StreamEvent) string {
	return ev.GetData().GetStructValue().GetFields()["stop_reason"].GetStringValue()
}

func toolResults(t *testing.T, r *replica, ctx context.Context, threadID string) []string {
	t.Helper()
	th, err := r.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: threadID})
	if err != nil {
		t.Fatal(err)
	}
	checkNoDanglingCalls(t, th.GetThread().GetMessages())
	var out []string
	for _, m := range th.GetThread().GetMessages() {
		if m.GetRole() == "tool" {
			out = append(out, m.GetToolCallId()+"="+m.GetContent())
		}
	}
	return out
}

// TestGracefulStopAndContinue: a run on A is stopped from B in the middle
// of a tool round; the round finishes and is saved, the run ends
// "stopped", and B continues it without a new message.
func TestGracefulStopAndContinue(t *testing.T) {
	t.Parallel()
	g := newGate()
	s := newSuite(t, lastTool(call("g1", "native_gate", nil)))
	a, b := twoReplicas(t, s, agent.WithNativeTools(g.tool()))
	ctx := withTimeout(t, as("alice"), 60*time.Second)
	if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "gated", Tools: []string{"native_gate"}}}); err != nil {
		t.Fatal(err)
	}

	st, err := a.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "gated", Messages: human("work")})
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	runID, threadID := first.GetEvent().GetRunId(), first.GetEvent().GetThreadId()
	select {
	case <-g.started:
	case <-ctx.Done():
		t.Fatal("the gate never started")
	}
	stopped, err := b.client.StopRun(ctx, &agentv1.StopRunRequest{RunId: runID})
	if err != nil || stopped.GetRun().GetStatus() != "running" {
		t.Fatalf("StopRun on B = %v, %v", stopped, err)
	}
	close(g.open)
	evs := collect(t, st.Recv)
	last := evs[len(evs)-1]
	if last.GetEvent() != "done" || stopReason(last) != "stopped" {
		t.Fatalf("stopped run ended with %v", last)
	}
	if !strings.Contains(strings.Join(names(evs), ","), "on_tool_end") {
		t.Fatalf("the round in flight did not finish: %v", names(evs))
	}
	waitStatus(t, b, ctx, runID, "stopped")
	if got := toolResults(t, b, ctx, threadID); len(got) != 1 || got[0] != "g1=gate passed" {
		t.Fatalf("thread after stop: %v", got)
	}
	s.llm.mu.Lock()
	calls := len(s.llm.requests)
	s.llm.mu.Unlock()
	if calls != 1 {
		t.Fatalf("the model was called %d times; a stopped run makes no call after its step", calls)
	}
	// Stopping again changes nothing.
	if again, err := a.client.StopRun(ctx, &agentv1.StopRunRequest{RunId: runID}); err != nil || again.GetRun().GetStatus() != "stopped" {
		t.Fatalf("second StopRun = %v, %v", again, err)
	}

	cont, err := b.client.ContinueRun(ctx, &agentv1.ContinueRunRequest{RunId: runID})
	if err != nil {
		t.Fatal(err)
	}
	next := cont.GetRun()
	if next.GetRunId() == runID || next.GetThreadId() != threadID {
		t.Fatalf("ContinueRun started %v", next)
	}
	join, err := a.client.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: next.GetRunId()})
	if err != nil {
		t.Fatal(err)
	}
	evs = collect(t, join.Recv)
	if last := evs[len(evs)-1]; last.GetEvent() != "done" || stopReason(last) != "completed" {
		t.Fatalf("continued run ended with %v", last)
	}
	th, err := a.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: threadID})
	if err != nil {
		t.Fatal(err)
	}
	msgs := th.GetThread().GetMessages()
	if got := msgs[len(msgs)-1]; got.GetRole() != "assistant" || got.GetContent() != "native_gate=gate passed" {
		t.Fatalf("continued thread ends with %v", got)
	}
	if n := strings.Count(threadRoles(msgs), "user"); n != 1 {
		t.Fatalf("continue added a user message: %s", threadRoles(msgs))
	}

	// Bad input: neither a run that is not stopped nor one whose thread
	// moved on can be continued; only a running run can be stopped.
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"continue twice", func() error {
			_, err := a.client.ContinueRun(ctx, &agentv1.ContinueRunRequest{RunId: runID})
			return err
		}, "changed since"},
		{"continue a done run", func() error {
			_, err := b.client.ContinueRun(ctx, &agentv1.ContinueRunRequest{RunId: next.GetRunId()})
			return err
		}, "only a stopped run"},
		{"stop a done run", func() error {
			_, err := b.client.StopRun(ctx, &agentv1.StopRunRequest{RunId: next.GetRunId()})
			return err
		}, "is done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want FailedPrecondition saying %q", err, tc.want)
			}
		})
	}
	if _, err := b.client.StopRun(as("bob"), &agentv1.StopRunRequest{RunId: runID}); code(err) != codes.NotFound {
		t.Fatalf("another user's StopRun = %v, want NotFound", err)
	}
}

func threadRoles(msgs []*agentv1.Message) string {
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.GetRole())
	}
	return strings.Join(roles, ",")
}

// askScript asks one question, then repeats the answer it got.
func askScript(_ int, req *llmv1.StreamRequest) reply {
	msgs := req.GetMessages()
	if last := msgs[len(msgs)-1]; last.GetRole() == "tool" {
		return text("you said: " + last.GetContent())
	}
	return reply{calls: []*llmv1.ToolCall{call("q1", "ask_user", map[string]any{"question": "Which colour?", "choices": []any{"red", "blue"}})}}
}

// interruptOf returns the data of the run's question event.
func interruptOf(t *testing.T, evs []*agentv1.StreamEvent) map[string]any {
	t.Helper()
	for _, ev := range evs {
		if ev.GetEvent() == "on_interrupt" {
			return ev.GetData().GetStructValue().AsMap()
		}
	}
	t.Fatalf("no on_interrupt in %v", names(evs))
	return nil
}

// TestAskUserAcrossReplicas: the question of a run on A is seen after a
// re-join on B and answered there; the answer is the tool's result.
func TestAskUserAcrossReplicas(t *testing.T) {
	t.Parallel()
	s := newSuite(t, askScript)
	a, b := twoReplicas(t, s)
	ctx := withTimeout(t, as("alice"), 60*time.Second)
	if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "asking", Tools: []string{"ask_user"}}}); err != nil {
		t.Fatal(err)
	}
	// Interactive agents do not ask for approval of a question.
	if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "asking-careful", Approval: "interactive", Tools: []string{"ask_user"}}}); err != nil {
		t.Fatal(err)
	}
	for _, agentID := range []string{"asking", "asking-careful"} {
		t.Run(agentID, func(t *testing.T) {
			inv, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: agentID, Messages: human("paint it")})
			if err != nil || inv.GetStatus() != "waiting_approval" {
				t.Fatalf("Invoke = %v, %v", inv, err)
			}
			// A reload: the client re-joins on the other replica from the start.
			waitStatusPending(t, b, ctx, inv.GetRunId(), "q1")
			join, err := b.client.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: inv.GetRunId()})
			if err != nil {
				t.Fatal(err)
			}
			var seen []*agentv1.StreamEvent
			for {
				m, err := join.Recv()
				if err != nil {
					t.Fatal(err)
				}
				seen = append(seen, m.GetEvent())
				if m.GetEvent().GetEvent() == "on_interrupt" {
					break
				}
			}
			q := interruptOf(t, seen)
			if q["kind"] != "question" || q["question"] != "Which colour?" || q["tool_call_id"] != "q1" || len(q["choices"].([]any)) != 2 {
				t.Fatalf("question event = %v", q)
			}
			if strings.Contains(strings.Join(names(seen), ","), "on_tool_end") {
				t.Fatalf("the question ended before it was answered: %v", names(seen))
			}

			// Bad answers first: another call id, another action.
			for _, tc := range []struct {
				d    *agentv1.ApprovalDecision
				want string
			}{
				{&agentv1.ApprovalDecision{ToolCallId: "q9", Action: "answer", Message: "red"}, "is not the question"},
				{&agentv1.ApprovalDecision{ToolCallId: "q1", Action: "approve"}, `the action is "answer"`},
				{&agentv1.ApprovalDecision{ToolCallId: "q1", Action: "answer"}, "the answer is required"},
			} {
				_, err := b.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: inv.GetRunId(), Decisions: []*agentv1.ApprovalDecision{tc.d}})
				if code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("ResumeRun(%v) = %v, want InvalidArgument saying %q", tc.d, err, tc.want)
				}
			}
			if _, err := b.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: inv.GetRunId(), Decisions: []*agentv1.ApprovalDecision{{ToolCallId: "q1", Action: "answer", Message: "blue"}}}); err != nil {
				t.Fatal(err)
			}
			evs := collect(t, join.Recv)
			if last := evs[len(evs)-1]; last.GetEvent() != "done" {
				t.Fatalf("answered run ended with %v", last)
			}
			if got := toolResults(t, b, ctx, inv.GetThreadId()); len(got) != 1 || got[0] != "q1=blue" {
				t.Fatalf("tool results = %v", got)
			}
			th, _ := a.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: inv.GetThreadId()})
			msgs := th.GetThread().GetMessages()
			if got := msgs[len(msgs)-1].GetContent(); got != "you said: blue" {
				t.Fatalf("final answer %q", got)
			}
			// The run has ended: an answer now is to a question not asked.
			_, err = a.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: inv.GetRunId(), Decisions: []*agentv1.ApprovalDecision{{ToolCallId: "q1", Action: "answer", Message: "red"}}})
			if code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "asked no question") {
				t.Fatalf("late answer = %v, want FailedPrecondition", err)
			}
		})
	}
}

// TestAskUserBadInput: an answer to a run that waits for approval, and a
// stop of a run that waits for the user, are refused with what to do.
func TestAskUserBadInput(t *testing.T) {
	t.Parallel()
	s := newSuite(t, calcThenAnswer)
	a, _ := twoReplicas(t, s)
	ctx := withTimeout(t, as("alice"), 60*time.Second)
	if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "careful", Approval: "interactive", Tools: []string{"calculate"}}}); err != nil {
		t.Fatal(err)
	}
	inv, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "careful", Messages: human("2+2?")})
	if err != nil || inv.GetStatus() != "waiting_approval" {
		t.Fatalf("Invoke = %v, %v", inv, err)
	}
	callID := inv.GetInterrupt()[0].GetId()
	_, err = a.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: inv.GetRunId(), Decisions: []*agentv1.ApprovalDecision{{ToolCallId: callID, Action: "answer", Message: "4"}}})
	if code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "asked no question") {
		t.Fatalf("answer to an approval = %v, want FailedPrecondition", err)
	}
	_, err = a.client.StopRun(ctx, &agentv1.StopRunRequest{RunId: inv.GetRunId()})
	if code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "waits for the user") {
		t.Fatalf("stop of a waiting run = %v, want FailedPrecondition", err)
	}
	if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "odd", ToolWait: "some"}}); code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "tool_wait") {
		t.Fatalf("tool_wait some = %v, want InvalidArgument naming tool_wait", err)
	}
}

// TestAskUserTimeout: a question nobody answers ends its wait with a
// result that says so, and the run goes on.
func TestAskUserTimeout(t *testing.T) {
	t.Parallel()
	s := newSuite(t, askScript)
	a, _ := twoReplicas(t, s, agent.WithQuestionTimeout(300*time.Millisecond))
	ctx := withTimeout(t, as("alice"), 60*time.Second)
	if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "asking", Tools: []string{"ask_user"}}}); err != nil {
		t.Fatal(err)
	}
	st, err := a.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "asking", Messages: human("paint it")})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, st.Recv)
	if last := evs[len(evs)-1]; last.GetEvent() != "done" {
		t.Fatalf("run ended with %v", last)
	}
	got := toolResults(t, a, ctx, evs[0].GetThreadId())
	if len(got) != 1 || !strings.HasPrefix(got[0], "q1=the user did not answer within 300ms") {
		t.Fatalf("tool results = %v", got)
	}
}

// TestToolWaitStrategies: with "any" and "majority" the round goes on once
// enough calls returned; the slow call is cancelled and answered as such.
func TestToolWaitStrategies(t *testing.T) {
	t.Parallel()
	slowEnded := make(chan error, 4)
	fast := &agent.FuncTool{ToolName: "native_fast", Fn: func(context.Context, map[string]any) (string, error) { return "fast", nil }}
	slow := &agent.FuncTool{ToolName: "native_slow", Fn: func(ctx context.Context, _ map[string]any) (string, error) {
		<-ctx.Done()
		slowEnded <- ctx.Err()
		return "", ctx.Err()
	}}
	s := newSuite(t, func(_ int, req *llmv1.StreamRequest) reply {
		msgs := req.GetMessages()
		if msgs[len(msgs)-1].GetRole() == "tool" {
			return text("ok")
		}
		if msgs[len(msgs)-1].GetContent() == "any" {
			return reply{calls: []*llmv1.ToolCall{call("s1", "native_slow", nil), call("f1", "native_fast", nil)}}
		}
		return reply{calls: []*llmv1.ToolCall{call("f1", "native_fast", nil), call("s1", "native_slow", nil), call("f2", "native_fast", nil)}}
	})
	a, _ := twoReplicas(t, s, agent.WithNativeTools(fast, slow))
	ctx := withTimeout(t, as("alice"), 60*time.Second)
	for _, tc := range []struct {
		wait string
		want []string
	}{
		{"any", []string{"s1=cancelled: not needed, the round went on with the results that came first (tool_wait any)", "f1=fast"}},
		{"majority", []string{"f1=fast", "s1=cancelled: not needed, the round went on with the results that came first (tool_wait majority)", "f2=fast"}},
	} {
		t.Run(tc.wait, func(t *testing.T) {
			if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "wait-" + tc.wait, ToolWait: tc.wait, Tools: []string{"native_fast", "native_slow"}}}); err != nil {
				t.Fatal(err)
			}
			got, err := a.client.GetAgent(ctx, &agentv1.GetAgentRequest{AgentId: "wait-" + tc.wait})
			if err != nil || got.GetAgent().GetToolWait() != tc.wait {
				t.Fatalf("GetAgent = %v, %v", got, err)
			}
			st, err := a.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "wait-" + tc.wait, Messages: human(tc.wait)})
			if err != nil {
				t.Fatal(err)
			}
			evs := collect(t, st.Recv)
			if last := evs[len(evs)-1]; last.GetEvent() != "done" {
				t.Fatalf("run ended with %v", last)
			}
			if n, m := strings.Count(strings.Join(names(evs), ","), "on_tool_start"), strings.Count(strings.Join(names(evs), ","), "on_tool_end"); n != len(tc.want) || m != n {
				t.Fatalf("%d starts, %d ends: %v", n, m, names(evs))
			}
			select {
			case err := <-slowEnded:
				if err == nil {
					t.Fatal("the slow call's context did not end")
				}
			case <-ctx.Done():
				t.Fatal("the slow call was never cancelled")
			}
			if got := toolResults(t, a, ctx, evs[0].GetThreadId()); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("tool results = %v, want %v", got, tc.want)
			}
		})
	}
}
