package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/grpc/codes"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent"
)

// agentKeys are the only attribute keys the agent's instruments may carry:
// each takes a bounded set of values, never an id.
var agentKeys = []string{"kind", "status", "tool", "outcome", "limit", "op"}

// callThenAnswer calls name with args on a run's first turn and answers on
// the next.
func callThenAnswer(name string, args map[string]any) func(int, *llmv1.StreamRequest) reply {
	return func(_ int, req *llmv1.StreamRequest) reply {
		if last := req.GetMessages()[len(req.GetMessages())-1]; last.GetRole() == "tool" {
			return text("done")
		}
		return reply{calls: []*llmv1.ToolCall{call("c1", name, args)}}
	}
}

// TestRunAndToolMetrics: a run moves the run instruments, and each tool
// call is counted and timed under its tool and how it ended.
func TestRunAndToolMetrics(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		script  func(int, *llmv1.StreamRequest) reply
		tool    string
		outcome string
	}{
		{"ok", calcThenAnswer, "calculate", "ok"},
		{"error", callThenAnswer("calculate", map[string]any{"expr": "2+"}), "calculate", "error"},
		// A name the model made up is no label: it could be anything.
		{"unknown tool", callThenAnswer("made_up_tool_x1", nil), "unknown", "error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := testenv.NewMeters(t)
			s := newSuite(t, c.script)
			a := memoryReplica(t, s, agent.WithMeterProvider(m))
			ctx := withTimeout(t, as("alice"), 30*time.Second)
			resp, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: human("go")})
			if err != nil || resp.GetStatus() != "done" {
				t.Fatalf("Invoke = %v, %v", resp, err)
			}
			for _, w := range []struct {
				name string
				kv   []attribute.KeyValue
			}{
				{"wick.agent.runs.started", []attribute.KeyValue{attribute.String("kind", "loop")}},
				{"wick.agent.runs.finished", []attribute.KeyValue{attribute.String("status", "done")}},
				{"wick.agent.run.duration", []attribute.KeyValue{attribute.String("status", "done")}},
				{"wick.agent.tool.calls", []attribute.KeyValue{attribute.String("tool", c.tool), attribute.String("outcome", c.outcome)}},
				{"wick.agent.tool.duration", []attribute.KeyValue{attribute.String("tool", c.tool), attribute.String("outcome", c.outcome)}},
			} {
				if got := m.Value(w.name, w.kv...); got != 1 {
					t.Errorf("%s%v = %v, want 1", w.name, w.kv, got)
				}
			}
			if got := m.Value("wick.agent.tool.calls"); got != 1 {
				t.Errorf("tool calls = %v, want 1", got)
			}
			m.CheckKeys("wick.", agentKeys...)
		})
	}
}

// TestRejectedToolCallMetric: a call the user rejects is counted as
// rejected, the call approved after it as ok.
func TestRejectedToolCallMetric(t *testing.T) {
	t.Parallel()
	m := testenv.NewMeters(t)
	n := 0
	s := newSuite(t, func(_ int, req *llmv1.StreamRequest) reply {
		if last := req.GetMessages()[len(req.GetMessages())-1]; last.GetRole() == "tool" && n == 2 {
			return text("done")
		}
		n++
		return reply{calls: []*llmv1.ToolCall{call("c"+string(rune('0'+n)), "calculate", map[string]any{"expr": "1+1"})}}
	})
	a := memoryReplica(t, s, agent.WithMeterProvider(m))
	ctx := withTimeout(t, as("alice"), 30*time.Second)
	if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "careful", Approval: "interactive", Tools: []string{"calculate"}}}); err != nil {
		t.Fatal(err)
	}
	inv, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "careful", Messages: human("work")})
	if err != nil || inv.GetStatus() != "waiting_approval" {
		t.Fatalf("Invoke = %v, %v", inv, err)
	}
	if _, err := a.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: inv.GetRunId(), Decisions: []*agentv1.ApprovalDecision{{ToolCallId: "c1", Action: "reject"}}}); err != nil {
		t.Fatal(err)
	}
	waitStatusPending(t, a, ctx, inv.GetRunId(), "c2")
	if _, err := a.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: inv.GetRunId(), Decisions: []*agentv1.ApprovalDecision{{ToolCallId: "c2", Action: "approve"}}}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, a, ctx, inv.GetRunId(), "done")
	calc := attribute.String("tool", "calculate")
	if got := m.Value("wick.agent.tool.calls", calc, attribute.String("outcome", "rejected")); got != 1 {
		t.Errorf("rejected calls = %v, want 1", got)
	}
	if got := m.Value("wick.agent.tool.calls", calc, attribute.String("outcome", "ok")); got != 1 {
		t.Errorf("ok calls = %v, want 1", got)
	}
	m.CheckKeys("wick.", agentKeys...)
}

// TestQuotaRejectionMetric: a refusal by a limit is counted under the
// limit's flag.
func TestQuotaRejectionMetric(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		limits agent.Limits
		flag   string
		over   func(ctx context.Context, c agentv1.AgentServiceClient) error
	}{
		{"agents", agent.Limits{AgentsPerUser: 1}, "-max-agents-per-user", func(ctx context.Context, c agentv1.AgentServiceClient) error {
			for _, id := range []string{"a1", "a2"} {
				if _, err := c.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: id, Name: id}}); err != nil {
					return err
				}
			}
			return nil
		}},
		{"thread bytes", agent.Limits{ThreadBytes: 64}, "-max-thread-bytes", func(ctx context.Context, c agentv1.AgentServiceClient) error {
			resp, err := c.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: human("a message longer than the sixty-four bytes a thread may store here")})
			if err == nil && resp.GetStatus() != "done" {
				return nil
			}
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := testenv.NewMeters(t)
			s := newSuite(t, calcThenAnswer)
			a := memoryReplica(t, s, agent.WithMeterProvider(m), agent.WithLimits(c.limits))
			ctx := withTimeout(t, as("alice"), 30*time.Second)
			if err := c.over(ctx, a.client); code(err) != codes.ResourceExhausted {
				t.Fatalf("over the limit: %v, want ResourceExhausted", err)
			}
			if got := m.Value("wick.agent.quota.rejections", attribute.String("limit", c.flag)); got != 1 {
				t.Errorf("rejections of %s = %v, want 1", c.flag, got)
			}
			m.CheckKeys("wick.", agentKeys...)
		})
	}
}

// TestRedisErrorMetric: once Redis is gone, each store operation that
// fails is counted under its name; a missing key before that is an answer,
// not an error.
func TestRedisErrorMetric(t *testing.T) {
	t.Parallel()
	addr := needRedis(t)
	m := testenv.NewMeters(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	st := agent.RedisStores(rdb, agent.RedisOptions{MeterProvider: m})
	ctx := withTimeout(t, context.Background(), 30*time.Second)
	if _, err := st.Threads.Get(ctx, "alice", "t_missing"); err == nil {
		t.Fatal("Get of a missing thread succeeded")
	}
	if _, err := st.Runs.Get(ctx, "run_missing"); err == nil {
		t.Fatal("Get of a missing run succeeded")
	}
	if got := m.Value("wick.agent.redis.errors"); got != 0 {
		t.Fatalf("redis errors before the outage = %v, want 0", got)
	}
	// The test's redis-server stops; nothing answers on its port any more.
	_ = rdb.ShutdownNoSave(ctx).Err() // the server closes the connection instead of answering
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Fatal("redis-server still answers after SHUTDOWN")
	}
	ops := []struct {
		op   string
		call func() error
	}{
		{"thread.get", func() error { _, err := st.Threads.Get(ctx, "alice", "t1"); return err }},
		{"run.get", func() error { _, err := st.Runs.Get(ctx, "run_1"); return err }},
		{"quota.take", func() error { _, _, err := st.Quota.Take(ctx, "alice", "runs", "run_1", 8); return err }},
	}
	for _, o := range ops {
		if err := o.call(); err == nil {
			t.Fatalf("%s succeeded with Redis down", o.op)
		}
		if got := m.Value("wick.agent.redis.errors", attribute.String("op", o.op)); got != 1 {
			t.Errorf("redis errors of %s = %v, want 1", o.op, got)
		}
	}
	m.CheckKeys("wick.", agentKeys...)
}
