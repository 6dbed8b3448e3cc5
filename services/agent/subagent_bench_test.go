package agent_test

import (
	"context"
	"io"
	"sort"
	"testing"
	"time"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/services/agent"
)

// BenchmarkSubagentHop measures what one sub-agent hop adds over calling
// the same model directly. Two agents run the same shape through the
// service over loopback gRPC (memory stores, the fake LLM gateway
// answering at once): the model asks for one tool call, then answers.
// "direct" calls native_model, a tool that makes one model call itself
// through the LLM gateway; "hop" calls task, whose general-purpose child
// makes that one model call and answers. Both runs make three model calls,
// so the difference is the hop: the child's configuration, thread lock,
// loop, save and wrapped events.
func BenchmarkSubagentHop(b *testing.B) {
	s := newSuite(b, script(func(c conversation) reply {
		switch {
		case c.goal == "direct" && c.turns == 0:
			return reply{calls: []*llmv1.ToolCall{call("d1", "native_model", nil)}}
		case c.goal == "hop" && c.turns == 0:
			return reply{calls: []*llmv1.ToolCall{task("t1", "", "answer")}}
		default:
			return text("ok")
		}
	}))
	llm := llmv1.NewLLMServiceClient(s.conn(s.llmAddr))
	direct := &agent.FuncTool{ToolName: "native_model", Fn: func(ctx context.Context, _ map[string]any) (string, error) {
		st, err := llm.Stream(ctx, &llmv1.StreamRequest{Messages: []*llmv1.Message{{Role: "user", Content: "answer"}}})
		if err != nil {
			return "", err
		}
		for {
			if _, err := st.Recv(); err == io.EOF {
				return "ok", nil
			} else if err != nil {
				return "", err
			}
		}
	}}
	// Every run leaves a thread (a hop two); the bound on threads per user
	// is not what is measured.
	lim := agent.DefaultLimits()
	lim.ThreadsPerUser = 0
	r := s.agent(agent.MemoryStores(), nil, agent.WithNativeTools(direct), agent.WithLimits(lim))
	ctx := as("alice")
	for _, id := range []string{"direct", "hop"} {
		if _, err := r.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: id, Tools: []string{"task", "native_model"}}}); err != nil {
			b.Fatal(err)
		}
	}
	run := func(id string) time.Duration {
		start := time.Now()
		resp, err := r.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: id, Messages: human(id)})
		if err != nil || resp.GetContent() != "ok" {
			b.Fatalf("%s: %v, %v", id, resp, err)
		}
		return time.Since(start)
	}
	var directs, hops []time.Duration
	for b.Loop() {
		// Alternating keeps a load change on the shared machine from
		// landing on one side only.
		directs = append(directs, run("direct"))
		hops = append(hops, run("hop"))
	}
	p50 := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	d, h := p50(directs), p50(hops)
	b.ReportMetric(float64(d.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(h.Microseconds()), "hop-p50-µs")
	b.ReportMetric(float64((h - d).Microseconds()), "overhead-p50-µs")
}
