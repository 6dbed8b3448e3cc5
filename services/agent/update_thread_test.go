package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/agent"
)

func TestUpdateThreadRenames(t *testing.T) {
	t.Parallel()
	for name, mk := range threadKinds() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newSuite(t, calcThenAnswer)
			a := mk(t, s, agent.WithPollInterval(50*time.Millisecond))
			ctx := withTimeout(t, as("alice"), 30*time.Second)
			createCareful(t, a, ctx)

			resp, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "careful", Messages: human("What is 2+3?")})
			if err != nil || resp.GetStatus() != "waiting_approval" {
				t.Fatalf("Invoke = %v, %v", resp, err)
			}
			thread := resp.GetThreadId()
			approve(t, a, ctx, resp.GetRunId())
			// The second run waits for approval: it holds the thread and
			// saves it again when it goes on.
			resp, err = a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "careful", ThreadId: thread, Messages: human("And 3+4?")})
			if err != nil || resp.GetStatus() != "waiting_approval" {
				t.Fatalf("second Invoke = %v, %v", resp, err)
			}
			before := onlyThread(t, a, ctx)

			up, err := a.client.UpdateThread(ctx, &agentv1.UpdateThreadRequest{ThreadId: thread, Title: proto.String("  Sums  for Ünïcode ✓ ")})
			if err != nil {
				t.Fatal(err)
			}
			if got := up.GetThread(); got.GetThreadId() != thread || got.GetTitle() != "Sums  for Ünïcode ✓" || got.GetStatus() != "interrupted" ||
				!got.GetUpdatedAt().AsTime().Equal(before.GetUpdatedAt().AsTime()) {
				t.Fatalf("UpdateThread = %v, before %v", got, before)
			}

			// The run's saves after the rename keep it.
			approve(t, a, ctx, resp.GetRunId())
			got := onlyThread(t, a, ctx)
			if got.GetTitle() != "Sums  for Ünïcode ✓" || got.GetMessageCount() <= before.GetMessageCount() {
				t.Fatalf("after the run = %v, before %v", got, before)
			}

			// A title of exactly the limit is taken.
			max := strings.Repeat("é", agent.MaxThreadTitleRunes)
			if up, err := a.client.UpdateThread(ctx, &agentv1.UpdateThreadRequest{ThreadId: thread, Title: proto.String(max)}); err != nil || up.GetThread().GetTitle() != max {
				t.Fatalf("UpdateThread(%d characters) = %v, %v", agent.MaxThreadTitleRunes, up, err)
			}

			// Reset: the first message titles the thread again.
			up, err = a.client.UpdateThread(ctx, &agentv1.UpdateThreadRequest{ThreadId: thread, ResetTitle: true})
			if err != nil || up.GetThread().GetTitle() != "What is 2+3?" {
				t.Fatalf("reset = %v, %v", up, err)
			}
			if got := onlyThread(t, a, ctx); got.GetTitle() != "What is 2+3?" {
				t.Fatalf("listed after reset = %v", got)
			}

			// Another user cannot see or rename it.
			bob := withTimeout(t, as("bob"), 30*time.Second)
			if _, err := a.client.UpdateThread(bob, &agentv1.UpdateThreadRequest{ThreadId: thread, Title: proto.String("mine")}); status.Code(err) != codes.NotFound {
				t.Fatalf("bob's UpdateThread = %v, want NotFound", err)
			}
			if _, err := a.client.UpdateThread(ctx, &agentv1.UpdateThreadRequest{ThreadId: "th_missing", Title: proto.String("x")}); status.Code(err) != codes.NotFound {
				t.Fatalf("UpdateThread(missing) = %v, want NotFound", err)
			}
			if got := onlyThread(t, a, ctx); got.GetTitle() != "What is 2+3?" {
				t.Fatalf("after bob = %v", got)
			}

			for _, c := range []struct {
				name string
				req  *agentv1.UpdateThreadRequest
			}{
				{"empty", &agentv1.UpdateThreadRequest{ThreadId: thread, Title: proto.String("")}},
				{"blank", &agentv1.UpdateThreadRequest{ThreadId: thread, Title: proto.String(" \u00a0 ")}},
				{"too long", &agentv1.UpdateThreadRequest{ThreadId: thread, Title: proto.String(max + "x")}},
				{"line break", &agentv1.UpdateThreadRequest{ThreadId: thread, Title: proto.String("two\nlines")}},
				{"control character", &agentv1.UpdateThreadRequest{ThreadId: thread, Title: proto.String("bell\x07")}},
				{"unset", &agentv1.UpdateThreadRequest{ThreadId: thread}},
				{"set and reset", &agentv1.UpdateThreadRequest{ThreadId: thread, Title: proto.String("x"), ResetTitle: true}},
			} {
				_, err := a.client.UpdateThread(ctx, c.req)
				if status.Code(err) != codes.InvalidArgument || !strings.HasPrefix(status.Convert(err).Message(), "title: ") {
					t.Errorf("%s: UpdateThread = %v, want InvalidArgument naming title", c.name, err)
				}
			}
			if got := onlyThread(t, a, ctx); got.GetTitle() != "What is 2+3?" {
				t.Fatalf("after refused titles = %v", got)
			}
		})
	}
}

// approve approves the run's tool call c1 and waits for the run to finish.
func approve(t *testing.T, r *replica, ctx context.Context, runID string) {
	t.Helper()
	if _, err := r.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: runID, Decisions: []*agentv1.ApprovalDecision{{ToolCallId: "c1", Action: "approve"}}}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, ctx, runID, "done")
}
