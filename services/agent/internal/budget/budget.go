// Package budget refuses a user's run once their model calls of the calendar
// month (UTC) have spent the operator's monthly token or cost budget. A run
// is checked when it starts: one going when the budget is reached finishes,
// its model call in flight included, so a month may end a little over.
package budget

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
	"github.com/wick-agent/wick/platform/usage"
)

// ErrSpent matches every refusal by a budget (errors.Is); a client sees
// ResourceExhausted.
var ErrSpent = errcode.New(codes.ResourceExhausted, "monthly budget reached")

// Limits are the monthly budgets per user; 0 means none.
type Limits struct {
	// Tokens bounds input plus output tokens.
	Tokens int64
	// CostMicroUSD bounds cost, in millionths of a US dollar.
	CostMicroUSD int64
}

// Month is a user's month so far.
type Month struct {
	// Start is the month's first instant (UTC); Resets the next month's.
	Start, Resets time.Time
	usage.Counts
}

// Checker checks users against the budgets.
type Checker struct {
	store      usage.Store
	limits     Limits
	rejections metric.Int64Counter
}

type options struct{ mp metric.MeterProvider }

// Option configures a Checker.
type Option func(*options)

// WithMeterProvider sets where wick.usage.budget.rejections goes; the
// default is the global provider.
func WithMeterProvider(mp metric.MeterProvider) Option { return func(o *options) { o.mp = mp } }

// New returns a checker of limits over store.
func New(store usage.Store, limits Limits, opts ...Option) (*Checker, error) {
	o := options{mp: otel.GetMeterProvider()}
	for _, opt := range opts {
		opt(&o)
	}
	if limits.Tokens < 0 || limits.CostMicroUSD < 0 {
		return nil, fmt.Errorf("budget: the monthly budgets must not be negative")
	}
	c, err := o.mp.Meter("github.com/wick-agent/wick/services/agent/internal/budget").Int64Counter("wick.usage.budget.rejections",
		metric.WithDescription("runs refused because the user's monthly budget was spent"), metric.WithUnit("{run}"))
	if err != nil {
		return nil, err
	}
	return &Checker{store: store, limits: limits, rejections: c}, nil
}

// Limits returns the budgets.
func (c *Checker) Limits() Limits { return c.limits }

// Month returns what user spent in the month holding now.
func (c *Checker) Month(ctx context.Context, user string, now time.Time) (Month, error) {
	start := usage.MonthStart(now)
	m := Month{Start: start, Resets: start.AddDate(0, 1, 0)}
	var err error
	m.Counts, err = c.store.Month(ctx, user, now)
	if err != nil {
		return m, fmt.Errorf("read usage of user %s: %w", user, err)
	}
	return m, nil
}

// Check refuses user's new run when a budget of this month is spent; it
// reads the store only when there is a budget.
func (c *Checker) Check(ctx context.Context, user string) error {
	if c.limits == (Limits{}) {
		return nil
	}
	m, err := c.Month(ctx, user, time.Now())
	if err != nil {
		return err
	}
	resets := m.Resets.Format(usage.DayLayout)
	var refusal *Spent
	switch {
	case c.limits.Tokens > 0 && m.Tokens() >= c.limits.Tokens:
		refusal = &Spent{Budget: "tokens", msg: fmt.Sprintf("monthly token budget of %d reached (-usage-budget-tokens): user %s used %d tokens this month; it resets %s", c.limits.Tokens, user, m.Tokens(), resets)}
	case c.limits.CostMicroUSD > 0 && m.CostMicroUSD >= c.limits.CostMicroUSD:
		refusal = &Spent{Budget: "cost", msg: fmt.Sprintf("monthly cost budget of %s reached (-usage-budget-cost-usd): user %s spent %s this month; it resets %s", USD(c.limits.CostMicroUSD), user, USD(m.CostMicroUSD), resets)}
	default:
		return nil
	}
	c.rejections.Add(ctx, 1, metric.WithAttributes(attribute.String("budget", refusal.Budget)))
	return refusal
}

// Spent is a refusal by a budget.
type Spent struct {
	// Budget is the budget spent: tokens or cost.
	Budget string
	msg    string
}

func (e *Spent) Error() string { return e.msg }

// Is makes errors.Is(err, ErrSpent) true.
func (e *Spent) Is(target error) bool { return target == ErrSpent }

// Code is ErrSpent's code, since the refusal matches it without wrapping it.
func (e *Spent) Code() codes.Code { return codes.ResourceExhausted }

// USD writes millionths of a US dollar as dollars: "$12.50", "$0.004500".
func USD(micro int64) string {
	if micro%10000 == 0 {
		return fmt.Sprintf("$%.2f", float64(micro)/1e6)
	}
	return fmt.Sprintf("$%.6f", float64(micro)/1e6)
}
