package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/agent"
)

// threadKinds makes a replica on each kind of store.
func threadKinds() map[string]func(t *testing.T, s *suite, opts ...agent.Option) *replica {
	return map[string]func(t *testing.T, s *suite, opts ...agent.Option) *replica{
		"memory": memoryReplica,
		"redis": func(t *testing.T, s *suite, opts ...agent.Option) *replica {
			st, rdb := redisStores(t, needRedis(t), 2*time.Second)
			return s.agent(st, rdb, opts...)
		},
	}
}

// onlyThread returns the one thread ListThreads lists.
func onlyThread(t *testing.T, r *replica, ctx context.Context) *agentv1.ThreadSummary {
	t.Helper()
	list, err := r.client.ListThreads(ctx, &agentv1.ListThreadsRequest{AgentId: "careful"})
	if err != nil || len(list.GetThreads()) != 1 {
		t.Fatalf("ListThreads = %v, %v", list, err)
	}
	return list.GetThreads()[0]
}

func createCareful(t *testing.T, r *replica, ctx context.Context) {
	t.Helper()
	if _, err := r.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "careful", Approval: "interactive", Tools: []string{"calculate"}}}); err != nil {
		t.Fatal(err)
	}
}

func TestListThreadsTitleAndStatus(t *testing.T) {
	t.Parallel()
	for name, mk := range threadKinds() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newSuite(t, calcThenAnswer)
			a := mk(t, s, agent.WithPollInterval(50*time.Millisecond))
			ctx := withTimeout(t, as("alice"), 30*time.Second)
			createCareful(t, a, ctx)

			resp, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "careful", Messages: human("  What   is\n2+3?  ")})
			if err != nil || resp.GetStatus() != "waiting_approval" {
				t.Fatalf("Invoke = %v, %v", resp, err)
			}
			thread := resp.GetThreadId()
			if _, err := a.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: resp.GetRunId(), Decisions: []*agentv1.ApprovalDecision{{ToolCallId: "c1", Action: "approve"}}}); err != nil {
				t.Fatal(err)
			}
			waitStatus(t, a, ctx, resp.GetRunId(), "done")
			got := onlyThread(t, a, ctx)
			if got.GetThreadId() != thread || got.GetTitle() != "What is 2+3?" || got.GetStatus() != "idle" {
				t.Fatalf("after the run = %v", got)
			}

			// The thread's next run waits for approval: the thread is interrupted.
			long := strings.Repeat("ü", 100)
			resp, err = a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "careful", ThreadId: thread, Messages: human(long)})
			if err != nil || resp.GetStatus() != "waiting_approval" {
				t.Fatalf("second Invoke = %v, %v", resp, err)
			}
			if got := onlyThread(t, a, ctx); got.GetStatus() != "interrupted" || got.GetTitle() != "What is 2+3?" {
				t.Fatalf("waiting for approval = %v", got)
			}
			if _, err := a.client.CancelRun(ctx, &agentv1.CancelRunRequest{RunId: resp.GetRunId()}); err != nil {
				t.Fatal(err)
			}
			waitStatus(t, a, ctx, resp.GetRunId(), "cancelled")
			if got := onlyThread(t, a, ctx); got.GetStatus() != "idle" {
				t.Fatalf("after cancel = %v", got)
			}
		})
	}
}

func TestListThreadsFailedRun(t *testing.T) {
	t.Parallel()
	for name, mk := range threadKinds() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newSuite(t, calcThenAnswer)
			a := mk(t, s, agent.WithApprovalTimeout(200*time.Millisecond), agent.WithPollInterval(50*time.Millisecond))
			ctx := withTimeout(t, as("alice"), 30*time.Second)
			createCareful(t, a, ctx)

			long := strings.Repeat("ü", 100)
			resp, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "careful", Messages: human(long)})
			if err != nil || resp.GetStatus() != "waiting_approval" {
				t.Fatalf("Invoke = %v, %v", resp, err)
			}
			waitStatus(t, a, ctx, resp.GetRunId(), "failed")
			got := onlyThread(t, a, ctx)
			if want := strings.Repeat("ü", 79) + "…"; got.GetTitle() != want || got.GetStatus() != "error" {
				t.Fatalf("after the failed run = %v, want title %q and status error", got, want)
			}
		})
	}
}
