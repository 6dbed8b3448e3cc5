package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/platform/usage"
	"github.com/wick-agent/wick/services/agent"
)

// pricedLLM is the LLM gateway's Stream for two models that report exact
// token counts: "small" (100 in, 20 out, priced by the gateway: 140 µ$)
// and "script:large.json" (1000 in, 200 out, unpriced); it answers as the
// gateway does, with the provider and model that answered and the cost.
type pricedLLM struct {
	llmv1.UnimplementedLLMServiceServer
}

func (pricedLLM) Stream(req *llmv1.StreamRequest, stream llmv1.LLMService_StreamServer) error {
	first := &llmv1.StreamResponse{Provider: "script", Model: "large.json", Delta: "large answer"}
	u := &llmv1.Usage{InputTokens: 1000, OutputTokens: 200}
	if len(req.GetModels()) > 0 && req.GetModels()[0].GetSpec() == "small" {
		first = &llmv1.StreamResponse{Provider: "script", Model: "small.json", Delta: "small answer"}
		u = &llmv1.Usage{InputTokens: 100, OutputTokens: 20, CostMicroUsd: 140}
	}
	if err := stream.Send(first); err != nil {
		return err
	}
	return stream.Send(&llmv1.StreamResponse{FinishReason: "stop", Usage: u})
}

func usageSuite(t *testing.T) *suite {
	t.Helper()
	s := newSuite(t, nil)
	s.llmAddr = s.serve(func(g *grpc.Server) { llmv1.RegisterLLMServiceServer(g, pricedLLM{}) })
	return s
}

var usageAgents = agent.WithTemplates(map[string]*agent.AgentConfig{
	"cheap": {Name: "Cheap", Model: "small"},
	"big":   {Name: "Big", Model: "script:large.json"},
})

func TestUsagePerUserAgentAndModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		stores func(t *testing.T) agent.Stores
	}{
		{"memory", func(*testing.T) agent.Stores { return agent.MemoryStores() }},
		{"redis", func(t *testing.T) agent.Stores { st, _ := redisStores(t, testenv.Redis(t), time.Minute); return st }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := usageSuite(t)
			a := s.agent(tc.stores(t), nil, usageAgents, agent.WithUsage(agent.UsageConfig{Operators: []string{"olga"}}))
			ctx := withTimeout(t, as("carol"), time.Minute)
			user := func(u string) context.Context { return withTimeout(t, as(u), time.Minute) }
			for _, r := range []struct{ user, agent string }{{"alice", "cheap"}, {"alice", "cheap"}, {"alice", "big"}, {"bob", "big"}} {
				if _, err := a.client.Invoke(user(r.user), &agentv1.InvokeRequest{AgentId: r.agent, Messages: human("hi")}); err != nil {
					t.Fatalf("%s on %s: %v", r.user, r.agent, err)
				}
			}
			day := time.Now().UTC().Format(usage.DayLayout)
			aliceRows := []*agentv1.UsageRow{
				{Day: day, User: "alice", AgentId: "big", Model: "script:large.json", Calls: 1, InputTokens: 1000, OutputTokens: 200},
				{Day: day, User: "alice", AgentId: "cheap", Model: "script:small.json", Calls: 2, InputTokens: 200, OutputTokens: 40, CostMicroUsd: 280},
			}
			bobRow := &agentv1.UsageRow{Day: day, User: "bob", AgentId: "big", Model: "script:large.json", Calls: 1, InputTokens: 1000, OutputTokens: 200}
			for _, c := range []struct {
				who  string
				all  bool
				want []*agentv1.UsageRow
			}{
				{"alice", false, aliceRows},
				{"bob", false, []*agentv1.UsageRow{bobRow}},
				{"olga", false, nil},
				{"olga", true, append(aliceRows[:2:2], bobRow)},
			} {
				resp, err := a.client.GetUsage(user(c.who), &agentv1.GetUsageRequest{All: c.all})
				if err != nil {
					t.Fatalf("%s: %v", c.who, err)
				}
				if !sameRows(resp.GetRows(), c.want) {
					t.Errorf("%s (all=%v): rows\n got %v\nwant %v", c.who, c.all, resp.GetRows(), c.want)
				}
			}
			resp, err := a.client.GetUsage(user("alice"), &agentv1.GetUsageRequest{})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC()
			if b := resp.GetBudget(); b.GetTokens() != 1440 || b.GetCostMicroUsd() != 280 || b.GetMonth() != now.Format("2006-01") ||
				b.GetResets() != usage.MonthStart(now).AddDate(0, 1, 0).Format(usage.DayLayout) || b.GetTokenBudget() != 0 {
				t.Errorf("budget = %v", b)
			}
			if _, err := a.client.GetUsage(user("alice"), &agentv1.GetUsageRequest{All: true}); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "-operator-users") {
				t.Errorf("all for a user who is no operator: %v", err)
			}
			// The run's on_usage event carries the cost of a priced model.
			st, err := a.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "cheap", Messages: human("hi")})
			if err != nil {
				t.Fatal(err)
			}
			var costs []float64
			var total *structpb.Struct
			for _, ev := range collect(t, st.Recv) {
				switch ev.GetEvent() {
				case "on_usage":
					costs = append(costs, ev.GetData().GetStructValue().GetFields()["cost_micro_usd"].GetNumberValue())
				case "done":
					total = ev.GetData().GetStructValue().GetFields()["usage"].GetStructValue()
				}
			}
			if len(costs) != 1 || costs[0] != 140 {
				t.Errorf("on_usage costs %v, want [140]", costs)
			}
			// The final event sums them.
			if f := total.GetFields(); f["input_tokens"].GetNumberValue() != 100 || f["output_tokens"].GetNumberValue() != 20 ||
				f["cost_micro_usd"].GetNumberValue() != 140 {
				t.Errorf("done's usage %v, want 100 in, 20 out, 140 µ$", total)
			}
		})
	}
}

func sameRows(got, want []*agentv1.UsageRow) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.GetDay() != w.GetDay() || g.GetUser() != w.GetUser() || g.GetAgentId() != w.GetAgentId() || g.GetModel() != w.GetModel() ||
			g.GetCalls() != w.GetCalls() || g.GetInputTokens() != w.GetInputTokens() || g.GetOutputTokens() != w.GetOutputTokens() || g.GetCostMicroUsd() != w.GetCostMicroUsd() {
			return false
		}
	}
	return true
}

func TestUsageRangeIsValidated(t *testing.T) {
	t.Parallel()
	s := usageSuite(t)
	a := memoryReplica(t, s)
	ctx := withTimeout(t, as("alice"), 30*time.Second)
	for _, tc := range []struct {
		from, to, field, want string
	}{
		{"2026-13-01", "", "from", `"2026-13-01" is not a day written YYYY-MM-DD`},
		{"2026-01-01", "yesterday", "to", `"yesterday" is not a day written YYYY-MM-DD`},
		{"2026-03-02", "2026-03-01", "from", "2026-03-02 is after to (2026-03-01)"},
		{"2025-01-01", "2026-01-02", "to", "longer than 366 days"},
	} {
		_, err := a.client.GetUsage(ctx, &agentv1.GetUsageRequest{From: tc.from, To: tc.to})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.field+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("from %q to %q: %v; want InvalidArgument naming %s", tc.from, tc.to, err, tc.field)
		}
	}
	// 366 days, both ends included, is the longest range.
	resp, err := a.client.GetUsage(ctx, &agentv1.GetUsageRequest{From: "2024-01-01", To: "2024-12-31"})
	if err != nil || resp.GetFrom() != "2024-01-01" || resp.GetTo() != "2024-12-31" {
		t.Fatalf("a leap year: %v %v", resp, err)
	}
}

// TestBudgetStopsTheNextRun spends alice's monthly token budget: the run
// that crosses it finishes, the next is refused with the budget named, and
// bob, who spent nothing, still runs. (The reset at the month's start is
// TestBudgetResetsAtMonthStart in the budget package, on a fake clock.)
func TestBudgetStopsTheNextRun(t *testing.T) {
	t.Parallel()
	s := usageSuite(t)
	a := memoryReplica(t, s, usageAgents, agent.WithUsage(agent.UsageConfig{BudgetTokens: 1500}))
	ctx := withTimeout(t, as("alice"), time.Minute)
	for i := range 2 { // 1200 tokens, then 2400: over, but that run had started
		if _, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "big", Messages: human("hi")}); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	_, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "cheap", Messages: human("hi")})
	resets := usage.MonthStart(time.Now()).AddDate(0, 1, 0).Format(usage.DayLayout)
	want := "monthly token budget of 1500 reached (-usage-budget-tokens): user alice used 2400 tokens this month; it resets " + resets
	if status.Code(err) != codes.ResourceExhausted || status.Convert(err).Message() != want {
		t.Fatalf("over budget: %v\nwant ResourceExhausted %q", err, want)
	}
	if _, err := a.client.Invoke(withTimeout(t, as("bob"), time.Minute), &agentv1.InvokeRequest{AgentId: "big", Messages: human("hi")}); err != nil {
		t.Fatalf("bob: %v", err)
	}
	resp, err := a.client.GetUsage(ctx, &agentv1.GetUsageRequest{})
	if err != nil || resp.GetBudget().GetTokenBudget() != 1500 || resp.GetBudget().GetTokens() != 2400 {
		t.Fatalf("usage: %v %v", resp, err)
	}
}
