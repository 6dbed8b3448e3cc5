package agent

import (
	"context"
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/usage"
	"github.com/wick-agent/wick/services/agent/internal/budget"
)

// KnowledgeAgent is the agent that the knowledge base's embedding calls
// count on: a document's embeddings are not made for one agent.
const KnowledgeAgent = "knowledge"

// UsageConfig configures usage accounting: the monthly budgets per user and
// the operators who may see every user's usage.
type UsageConfig struct {
	// BudgetTokens bounds a user's tokens (input plus output) per calendar
	// month (UTC); 0: none.
	BudgetTokens int64
	// BudgetCostUSD bounds a user's cost in US dollars per calendar month
	// (UTC), by the LLM gateway's prices; 0: none.
	BudgetCostUSD float64
	// Operators are the users who may read every user's usage.
	Operators []string
}

// RegisterFlags defines the usage flags on fs, writing into c.
func (c *UsageConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.Int64Var(&c.BudgetTokens, "usage-budget-tokens", c.BudgetTokens, "tokens (input plus output) a user may spend per calendar month (UTC) before new runs are refused; 0: no budget")
	fs.Float64Var(&c.BudgetCostUSD, "usage-budget-cost-usd", c.BudgetCostUSD, "US dollars a user may spend per calendar month (UTC), by the LLM gateway's prices, before new runs are refused; 0: no budget")
	fs.Func("operator-users", "comma-separated users who may read every user's usage (GET /usage?all=true)", func(v string) error {
		for _, u := range strings.Split(v, ",") {
			if u = strings.TrimSpace(u); u != "" {
				c.Operators = append(c.Operators, u)
			}
		}
		return nil
	})
}

// limits converts the budgets; a cost that is not a finite amount ≥ 0 is
// an error.
func (c UsageConfig) limits() (budget.Limits, error) {
	if c.BudgetCostUSD < 0 || math.IsNaN(c.BudgetCostUSD) || math.IsInf(c.BudgetCostUSD, 0) {
		return budget.Limits{}, fmt.Errorf("agent: -usage-budget-cost-usd must be a finite amount, not negative")
	}
	return budget.Limits{Tokens: c.BudgetTokens, CostMicroUSD: int64(math.Round(c.BudgetCostUSD * 1e6))}, nil
}

// WithUsage sets the monthly budgets and the operators (UsageConfig).
func WithUsage(c UsageConfig) Option { return func(o *options) { o.usage = c } }

// recordUsage records one model call of user's agent. A call whose usage
// cannot be recorded is logged and not failed: the tokens are spent.
func (s *Service) recordUsage(ctx context.Context, user, agentID, provider, model string, u llm.Usage) {
	c := usage.Call{User: user, Agent: agentID, Model: usage.ModelName(provider, model), At: time.Now(), Counts: usage.Counts{
		Calls: 1, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CostMicroUSD: u.CostMicroUSD,
	}}
	if err := s.st.Usage.Record(context.WithoutCancel(ctx), c); err != nil {
		s.logger.WarnContext(ctx, "record usage", "user", user, "agent", agentID, "error", err.Error())
	}
}

// GetUsage implements agentv1.AgentServiceServer.
func (s *Service) GetUsage(ctx context.Context, req *agentv1.GetUsageRequest) (*agentv1.GetUsageResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	from, to, err := usageRange(req.GetFrom(), req.GetTo(), now)
	if err != nil {
		return nil, err
	}
	who := user
	if req.GetAll() {
		if !slices.Contains(s.cfg.usage.Operators, user) {
			return nil, status.Error(codes.PermissionDenied, "all: only operators (-operator-users) may read every user's usage")
		}
		who = ""
	}
	rows, err := s.st.Usage.Rows(ctx, who, from, to)
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	month, err := s.budget.Month(ctx, user, now)
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	l := s.budget.Limits()
	out := &agentv1.GetUsageResponse{
		From: from.Format(usage.DayLayout), To: to.Format(usage.DayLayout),
		Budget: &agentv1.UsageBudget{
			Month: month.Start.Format("2006-01"), Tokens: month.Tokens(), CostMicroUsd: month.CostMicroUSD,
			TokenBudget: l.Tokens, CostBudgetMicroUsd: l.CostMicroUSD, Resets: month.Resets.Format(usage.DayLayout),
		},
	}
	for _, r := range rows {
		out.Rows = append(out.Rows, &agentv1.UsageRow{
			Day: r.Day, User: r.User, AgentId: r.Agent, Model: r.Model,
			Calls: r.Calls, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CostMicroUsd: r.CostMicroUSD,
		})
	}
	return out, nil
}

// usageRange parses a GetUsage range: from defaults to the first day of
// now's month, to to today; from ≤ to, at most usage.MaxRangeDays days.
func usageRange(fromS, toS string, now time.Time) (from, to time.Time, err error) {
	from, to = usage.MonthStart(now), usage.Day(now)
	if fromS != "" {
		if from, err = time.Parse(usage.DayLayout, fromS); err != nil {
			return from, to, invalid("from", fmt.Sprintf("%q is not a day written YYYY-MM-DD", fromS))
		}
	}
	if toS != "" {
		if to, err = time.Parse(usage.DayLayout, toS); err != nil {
			return from, to, invalid("to", fmt.Sprintf("%q is not a day written YYYY-MM-DD", toS))
		}
	}
	switch {
	case from.After(to):
		return from, to, invalid("from", fmt.Sprintf("%s is after to (%s)", from.Format(usage.DayLayout), to.Format(usage.DayLayout)))
	case to.Sub(from) >= usage.MaxRangeDays*24*time.Hour:
		return from, to, invalid("to", fmt.Sprintf("the range from %s to %s is longer than %d days", from.Format(usage.DayLayout), to.Format(usage.DayLayout), usage.MaxRangeDays))
	}
	return from, to, nil
}
