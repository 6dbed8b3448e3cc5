package agent_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/services/agent"
)

// answerAtOnce answers every request without a tool call.
func answerAtOnce(int, *llmv1.StreamRequest) reply { return text("ok") }

// newThreads starts n threads of the default agent, each with one short
// run, and returns their ids.
func newThreads(t *testing.T, r *replica, ctx context.Context, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		resp, err := r.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: human(fmt.Sprintf("question %d", i))})
		if err != nil || resp.GetStatus() != "done" {
			t.Fatalf("Invoke = %v, %v", resp, err)
		}
		out[i] = resp.GetThreadId()
	}
	return out
}

func TestListThreadsPages(t *testing.T) {
	t.Parallel()
	for name, mk := range threadKinds() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newSuite(t, answerAtOnce)
			a := mk(t, s)
			ctx := withTimeout(t, as("alice"), 30*time.Second)
			made := newThreads(t, a, ctx, 5)
			seen := map[string]int{}
			var pages int
			req := &agentv1.ListThreadsRequest{AgentId: "default", PageSize: 2}
			for {
				pages++
				resp, err := a.client.ListThreads(ctx, req)
				if err != nil || len(resp.GetThreads()) > 2 {
					t.Fatalf("page %d = %v, %v", pages, resp, err)
				}
				for _, th := range resp.GetThreads() {
					seen[th.GetThreadId()]++
				}
				if resp.GetNextPageToken() == "" {
					break
				}
				req.PageToken = resp.GetNextPageToken()
			}
			if pages != 3 || len(seen) != 5 {
				t.Fatalf("%d pages listed %v", pages, seen)
			}
			for _, id := range made {
				if seen[id] != 1 {
					t.Fatalf("thread %s listed %d times", id, seen[id])
				}
			}
			// The query keeps the titles with every word, in any case.
			resp, err := a.client.ListThreads(ctx, &agentv1.ListThreadsRequest{Query: "QUESTION 3"})
			if err != nil || len(resp.GetThreads()) != 1 || resp.GetThreads()[0].GetThreadId() != made[3] || resp.GetNextPageToken() != "" {
				t.Fatalf("query = %v, %v", resp, err)
			}
		})
	}
}

func TestListThreadsRefusesBadPages(t *testing.T) {
	t.Parallel()
	s := newSuite(t, answerAtOnce)
	a := memoryReplica(t, s)
	ctx := withTimeout(t, as("alice"), 30*time.Second)
	newThreads(t, a, ctx, 2)
	first, err := a.client.ListThreads(ctx, &agentv1.ListThreadsRequest{AgentId: "default", PageSize: 1})
	if err != nil || first.GetNextPageToken() == "" {
		t.Fatalf("first page = %v, %v", first, err)
	}
	tok := first.GetNextPageToken()
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	altered := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), "th_", "th_x", 1)))
	cases := []struct {
		name  string
		ctx   context.Context
		req   *agentv1.ListThreadsRequest
		field string
	}{
		{"negative page size", ctx, &agentv1.ListThreadsRequest{PageSize: -1}, "page_size"},
		{"page size over the bound", ctx, &agentv1.ListThreadsRequest{PageSize: 201}, "page_size"},
		{"long query", ctx, &agentv1.ListThreadsRequest{Query: strings.Repeat("é", agent.MaxThreadQueryRunes+1)}, "query"},
		{"not base64", ctx, &agentv1.ListThreadsRequest{PageToken: "!!"}, "page_token"},
		{"not a token", ctx, &agentv1.ListThreadsRequest{PageToken: base64.RawURLEncoding.EncodeToString([]byte("1.x.y.z"))}, "page_token"},
		{"altered token", ctx, &agentv1.ListThreadsRequest{AgentId: "default", PageSize: 1, PageToken: altered}, "page_token"},
		{"token of another agent", ctx, &agentv1.ListThreadsRequest{AgentId: "other", PageToken: tok}, "page_token"},
		{"token of another query", ctx, &agentv1.ListThreadsRequest{AgentId: "default", Query: "x", PageToken: tok}, "page_token"},
		{"token of another user", as("bob"), &agentv1.ListThreadsRequest{AgentId: "default", PageToken: tok}, "page_token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := a.client.ListThreads(c.ctx, c.req)
			if status.Code(err) != codes.InvalidArgument || !strings.HasPrefix(status.Convert(err).Message(), c.field+": ") {
				t.Fatalf("ListThreads = %v, want InvalidArgument naming %s", err, c.field)
			}
		})
	}
	for _, n := range []int32{0, 200} {
		if _, err := a.client.ListThreads(ctx, &agentv1.ListThreadsRequest{PageSize: n}); err != nil {
			t.Fatalf("page_size %d = %v", n, err)
		}
	}
	second, err := a.client.ListThreads(ctx, &agentv1.ListThreadsRequest{AgentId: "default", PageSize: 1, PageToken: tok})
	if err != nil || len(second.GetThreads()) != 1 || second.GetThreads()[0].GetThreadId() == first.GetThreads()[0].GetThreadId() {
		t.Fatalf("second page = %v, %v", second, err)
	}
}

// TestListThreadsNewThreadWaiting: a new thread whose first run waits for
// approval is listed at once, titled, with its status and run, which
// GetThread gives as well.
func TestListThreadsNewThreadWaiting(t *testing.T) {
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
			got := onlyThread(t, a, ctx)
			if got.GetThreadId() != resp.GetThreadId() || got.GetTitle() != "What is 2+3?" || got.GetStatus() != "interrupted" || got.GetActiveRunId() != resp.GetRunId() {
				t.Fatalf("waiting for approval = %v, want run %s", got, resp.GetRunId())
			}
			th, err := a.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: resp.GetThreadId()})
			if err != nil || th.GetSummary().GetActiveRunId() != resp.GetRunId() || th.GetSummary().GetStatus() != "interrupted" || len(th.GetThread().GetMessages()) != 1 {
				t.Fatalf("GetThread = %v, %v", th, err)
			}
			if _, err := a.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: resp.GetRunId(), Decisions: []*agentv1.ApprovalDecision{{ToolCallId: "c1", Action: "approve"}}}); err != nil {
				t.Fatal(err)
			}
			waitStatus(t, a, ctx, resp.GetRunId(), "done")
			got = onlyThread(t, a, ctx)
			if got.GetStatus() != "idle" || got.GetActiveRunId() != "" || got.GetMessageCount() != 4 {
				t.Fatalf("after the run = %v", got)
			}
			th, err = a.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: resp.GetThreadId()})
			if err != nil || th.GetSummary().GetActiveRunId() != "" || len(th.GetThread().GetMessages()) != 4 {
				t.Fatalf("GetThread after the run = %v, %v", th, err)
			}
		})
	}
}
