package agent_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/services/agent"
)

// sharedScript answers by the conversation: "work" runs two calculate
// rounds, then the model hangs (the replica will die there); other inputs
// get a text reply naming what the model saw.
func sharedScript(blocked chan<- struct{}) func(int, *llmv1.StreamRequest) reply {
	var once sync.Once
	return func(_ int, req *llmv1.StreamRequest) reply {
		msgs := req.GetMessages()
		lastUser, tools := "", 0
		for _, m := range msgs {
			switch m.GetRole() {
			case "user":
				lastUser, tools = m.GetContent(), 0
			case "tool":
				tools++
			}
		}
		if lastUser != "work" {
			return text("reply to " + lastUser + " after " + itoa(len(msgs)) + " messages")
		}
		switch tools {
		case 0:
			return reply{calls: []*llmv1.ToolCall{call("c1", "calculate", map[string]any{"expr": "1+1"})}}
		case 1:
			return reply{calls: []*llmv1.ToolCall{call("c2", "calculate", map[string]any{"expr": "2+2"})}}
		default:
			once.Do(func() { close(blocked) })
			return reply{block: true}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func replicaOpts() []agent.Option {
	return []agent.Option{agent.WithJoinBlock(200 * time.Millisecond), agent.WithPollInterval(100 * time.Millisecond)}
}

// TestTwoReplicasShareThreads proves the replicated setup: two agent
// service instances on one real redis-server share a thread, refuse a
// concurrent run, and survive the death of the replica running a run.
func TestTwoReplicasShareThreads(t *testing.T) {
	t.Parallel()
	addr := needRedis(t)
	blocked := make(chan struct{})
	s := newSuite(t, sharedScript(blocked))
	const lease = 1500 * time.Millisecond
	stA, rdbA := redisStores(t, addr, lease)
	stB, _ := redisStores(t, addr, lease)
	a := s.agent(stA, rdbA, replicaOpts()...)
	b := s.agent(stB, nil, replicaOpts()...)
	ctx := withTimeout(t, as("alice"), 60*time.Second)

	// A run on A; the next message, on B, sees it.
	r1, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: human("first")})
	if err != nil {
		t.Fatal(err)
	}
	thread := r1.GetThreadId()
	r2, err := b.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", ThreadId: thread, Messages: human("second")})
	if err != nil {
		t.Fatal(err)
	}
	// System prompt + first, its reply, second.
	if r2.GetContent() != "reply to second after 4 messages" {
		t.Fatalf("B's reply = %q: B did not see A's turn", r2.GetContent())
	}

	// A long run on A.
	st, err := a.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "default", ThreadId: thread, Messages: human("work")})
	if err != nil {
		t.Fatal(err)
	}
	var seen []*agentv1.StreamEvent
	toolEnds := 0
	for toolEnds < 2 {
		m, err := st.Recv()
		if err != nil {
			t.Fatalf("A's stream: %v", err)
		}
		seen = append(seen, m.GetEvent())
		if m.GetEvent().GetEvent() == "on_tool_end" {
			toolEnds++
		}
	}
	runID := seen[0].GetRunId()
	select {
	case <-blocked:
	case <-ctx.Done():
		t.Fatal("A's run never reached its third model call")
	}

	// A concurrent run on the same thread, on B, is refused.
	if _, err := b.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", ThreadId: thread, Messages: human("meanwhile")}); code(err) != codes.FailedPrecondition {
		t.Fatalf("concurrent run on B = %v, want FailedPrecondition", err)
	}
	// B follows A's run live, from the middle of its log.
	cut := 1
	join, err := b.client.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: runID, AfterEventId: seen[cut].GetId()})
	if err != nil {
		t.Fatal(err)
	}
	joined := make(chan []*agentv1.StreamEvent, 1)
	go func() { joined <- collect(t, join.Recv) }()

	// Kill A: its Redis connection and its server go at once, as in a crash —
	// it can neither save, nor log, nor release its lease.
	rdbA.Close()
	a.srv.GRPC().Stop()

	evs := <-joined
	if len(evs) == 0 {
		t.Fatal("B's join got nothing")
	}
	for i, e := range evs[:min(len(evs), len(seen)-cut-1)] {
		if e.GetId() != seen[cut+1+i].GetId() || e.GetEvent() != seen[cut+1+i].GetEvent() {
			t.Fatalf("joined event %d = %v, want %v", i, e, seen[cut+1+i])
		}
	}
	for i := 1; i < len(evs); i++ {
		if !idLess(evs[i-1].GetId(), evs[i].GetId()) {
			t.Fatalf("ids not increasing: %s then %s", evs[i-1].GetId(), evs[i].GetId())
		}
	}
	last := evs[len(evs)-1]
	if last.GetEvent() != "error" || last.GetData().GetStructValue().GetFields()["code"].GetStringValue() != "lost" {
		t.Fatalf("last joined event = %v, want the lost-run error", last)
	}
	run, err := b.client.GetRun(ctx, &agentv1.GetRunRequest{RunId: runID})
	if err != nil || run.GetRun().GetStatus() != "failed" {
		t.Fatalf("GetRun on B = %v, %v", run, err)
	}

	// Every completed tool round of A's run is in the thread.
	th, err := b.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: thread})
	if err != nil {
		t.Fatal(err)
	}
	msgs := th.GetThread().GetMessages()
	checkNoDanglingCalls(t, msgs)
	var results []string
	for _, m := range msgs {
		if m.GetRole() == "tool" {
			results = append(results, m.GetToolCallId()+"="+m.GetContent())
		}
	}
	if strings.Join(results, ",") != "c1=2,c2=4" {
		t.Fatalf("tool results in the thread = %v (messages %v)", results, msgs)
	}

	// Once A's lease has expired, B runs on the thread and sees it all.
	r3, err := b.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", ThreadId: thread, Messages: human("again"), Enqueue: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := "reply to again after " + itoa(len(msgs)+2) + " messages"; r3.GetContent() != want {
		t.Fatalf("B's run after the crash = %q, want %q", r3.GetContent(), want)
	}
	// A fresh join from the start replays A's whole run, then ends.
	all, err := b.client.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: runID})
	if err != nil {
		t.Fatal(err)
	}
	full := collect(t, all.Recv)
	if full[0].GetEvent() != "on_run_start" || full[len(full)-1].GetId() != last.GetId() {
		t.Fatalf("full replay = %v", names(full))
	}
}

func idLess(a, b string) bool {
	ah, al, _ := strings.Cut(a, "-")
	bh, bl, _ := strings.Cut(b, "-")
	if len(ah) != len(bh) {
		return len(ah) < len(bh)
	}
	if ah != bh {
		return ah < bh
	}
	if len(al) != len(bl) {
		return len(al) < len(bl)
	}
	return al < bl
}

// TestCrossReplicaControl: a run on A is cancelled from B, configuration
// made on A is seen and announced on B.
func TestCrossReplicaControl(t *testing.T) {
	t.Parallel()
	addr := needRedis(t)
	blocked := make(chan struct{})
	s := newSuite(t, sharedScript(blocked))
	stA, rdbA := redisStores(t, addr, 2*time.Second)
	stB, rdbB := redisStores(t, addr, 2*time.Second)
	a := s.agent(stA, rdbA, replicaOpts()...)
	b := s.agent(stB, rdbB, replicaOpts()...)
	ctx := withTimeout(t, as("alice"), 60*time.Second)

	watch, err := b.client.WatchEvents(ctx, &agentv1.WatchEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Recv(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "shared", Name: "Shared"}}); err != nil {
		t.Fatal(err)
	}
	ev, err := watch.Recv()
	if err != nil || ev.GetEvent().GetEvent() != "agent_created" || ev.GetEvent().GetAgentId() != "shared" {
		t.Fatalf("B's watch = %v, %v", ev, err)
	}
	if got, err := b.client.GetAgent(ctx, &agentv1.GetAgentRequest{AgentId: "shared"}); err != nil || got.GetAgent().GetName() != "Shared" {
		t.Fatalf("agent on B = %v, %v", got, err)
	}

	st, err := a.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "default", Messages: human("work")})
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	<-blocked
	if _, err := b.client.CancelRun(ctx, &agentv1.CancelRunRequest{RunId: first.GetEvent().GetRunId()}); err != nil {
		t.Fatal(err)
	}
	rest := collect(t, st.Recv)
	if last := rest[len(rest)-1]; last.GetEvent() != "error" {
		t.Fatalf("A's stream ended with %v", last)
	}
	run := waitStatus(t, b, ctx, first.GetEvent().GetRunId(), "cancelled")
	th, err := b.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: run.GetThreadId()})
	if err != nil {
		t.Fatal(err)
	}
	checkNoDanglingCalls(t, th.GetThread().GetMessages())

	// An interactive run on A waits for approval; the decision, given on B,
	// reaches A, and B follows the run to its end.
	if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "careful", Approval: "interactive", Tools: []string{"calculate"}}}); err != nil {
		t.Fatal(err)
	}
	inv, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "careful", Messages: human("work")})
	if err != nil || inv.GetStatus() != "waiting_approval" {
		t.Fatalf("interactive Invoke = %v, %v", inv, err)
	}
	if got, err := b.client.GetRun(ctx, &agentv1.GetRunRequest{RunId: inv.GetRunId()}); err != nil || got.GetRun().GetStatus() != "waiting_approval" || len(got.GetRun().GetPending()) != 1 {
		t.Fatalf("GetRun on B = %v, %v", got, err)
	}
	if _, err := b.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: inv.GetRunId(), Decisions: []*agentv1.ApprovalDecision{{ToolCallId: "c1", Action: "reject", Message: "not now"}}}); err != nil {
		t.Fatal(err)
	}
	// The model asks again (c2) after the rejection; approve that one on B too.
	waitStatusPending(t, b, ctx, inv.GetRunId(), "c2")
	if _, err := b.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: inv.GetRunId(), Decisions: []*agentv1.ApprovalDecision{{ToolCallId: "c2", Action: "approve"}}}); err != nil {
		t.Fatal(err)
	}
	waitToolResult(t, b, ctx, inv.GetThreadId(), "c2")
	if _, err := b.client.CancelRun(ctx, &agentv1.CancelRunRequest{RunId: inv.GetRunId()}); err != nil {
		t.Fatal(err)
	}
	join, err := b.client.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: inv.GetRunId()})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, join.Recv)
	got := strings.Join(names(evs), ",")
	if strings.Count(got, "on_interrupt") != 2 || evs[len(evs)-1].GetEvent() != "error" {
		t.Fatalf("interactive run events = %s", got)
	}
	th, _ = b.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: inv.GetThreadId()})
	var results []string
	for _, m := range th.GetThread().GetMessages() {
		if m.GetRole() == "tool" {
			results = append(results, m.GetToolCallId()+"="+m.GetContent())
		}
	}
	if len(results) != 2 || !strings.HasPrefix(results[0], "c1=") || !strings.Contains(results[0], "not now") || results[1] != "c2=4" {
		t.Fatalf("tool results = %v", results)
	}
}

func waitStatusPending(t *testing.T, r *replica, ctx context.Context, runID, callID string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := r.client.GetRun(ctx, &agentv1.GetRunRequest{RunId: runID})
		if err == nil && resp.GetRun().GetStatus() == "waiting_approval" && len(resp.GetRun().GetPending()) == 1 && resp.GetRun().GetPending()[0].GetId() == callID {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s never waited for %s: %v, %v", runID, callID, resp, err)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

// waitToolResult polls the thread until the result of callID is saved.
func waitToolResult(t *testing.T, r *replica, ctx context.Context, threadID, callID string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		th, err := r.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: threadID})
		if err == nil {
			for _, m := range th.GetThread().GetMessages() {
				if m.GetRole() == "tool" && m.GetToolCallId() == callID {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("result of %s never saved in thread %s (%v)", callID, threadID, err)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}
