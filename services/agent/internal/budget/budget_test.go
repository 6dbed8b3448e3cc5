package budget_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
	"github.com/wick-agent/wick/platform/usage"
	"github.com/wick-agent/wick/services/agent/internal/budget"
)

// TestBudgetResetsAtMonthStart spends a budget, is refused for the rest of
// the month and allowed again on the next month's first day, on the fake
// clock of a synctest bubble (which starts on 2000-01-01, UTC).
func TestBudgetResetsAtMonthStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits budget.Limits
		spend  usage.Counts
		want   string
	}{
		{"tokens", budget.Limits{Tokens: 1000}, usage.Counts{Calls: 1, InputTokens: 800, OutputTokens: 200}, "monthly token budget of 1000 reached (-usage-budget-tokens): user alice used 1000 tokens this month; it resets 2000-02-01"},
		{"cost", budget.Limits{CostMicroUSD: 2_500_000}, usage.Counts{Calls: 1, InputTokens: 1, CostMicroUSD: 2_600_000}, "monthly cost budget of $2.50 reached (-usage-budget-cost-usd): user alice spent $2.60 this month; it resets 2000-02-01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				reader := sdkmetric.NewManualReader()
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
				store := usage.NewMemory()
				c, err := budget.New(store, tc.limits, budget.WithMeterProvider(mp))
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Check(ctx, "alice"); err != nil {
					t.Fatalf("before any call: %v", err)
				}
				// Late on the month's last day.
				time.Sleep(31*24*time.Hour - time.Minute)
				half := tc.spend
				half.InputTokens, half.OutputTokens, half.CostMicroUSD = half.InputTokens/2, half.OutputTokens/2, half.CostMicroUSD/2
				if err := store.Record(ctx, usage.Call{User: "alice", Agent: "a", Model: "m", At: time.Now(), Counts: half}); err != nil {
					t.Fatal(err)
				}
				if err := c.Check(ctx, "alice"); err != nil {
					t.Fatalf("half spent: %v", err)
				}
				rest := usage.Counts{Calls: 1, InputTokens: tc.spend.InputTokens - half.InputTokens, OutputTokens: tc.spend.OutputTokens - half.OutputTokens, CostMicroUSD: tc.spend.CostMicroUSD - half.CostMicroUSD}
				if err := store.Record(ctx, usage.Call{User: "alice", Agent: "a", Model: "m", At: time.Now(), Counts: rest}); err != nil {
					t.Fatal(err)
				}
				err = c.Check(ctx, "alice")
				if !errors.Is(err, budget.ErrSpent) || err.Error() != tc.want {
					t.Fatalf("spent: %v\nwant %s", err, tc.want)
				}
				if code, _ := errcode.Of(err); code != codes.ResourceExhausted {
					t.Errorf("code %v", code)
				}
				if err := c.Check(ctx, "bob"); err != nil {
					t.Errorf("another user: %v", err)
				}
				time.Sleep(time.Minute) // 2000-02-01T00:00Z
				if err := c.Check(ctx, "alice"); err != nil {
					t.Fatalf("next month: %v", err)
				}
				var rm metricdata.ResourceMetrics
				if err := reader.Collect(ctx, &rm); err != nil {
					t.Fatal(err)
				}
				if got := rejections(rm); got != 1 || len(rejectionLabels(rm)) != 1 || rejectionLabels(rm)[0] != tc.name {
					t.Errorf("rejections %d by %v, want 1 by %s", got, rejectionLabels(rm), tc.name)
				}
			})
		})
	}
}

func rejections(rm metricdata.ResourceMetrics) int64 {
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "wick.usage.budget.rejections" {
				for _, dp := range s.DataPoints {
					n += dp.Value
				}
			}
		}
	}
	return n
}

func rejectionLabels(rm metricdata.ResourceMetrics) []string {
	var out []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "wick.usage.budget.rejections" {
				for _, dp := range s.DataPoints {
					v, _ := dp.Attributes.Value("budget")
					out = append(out, v.AsString())
				}
			}
		}
	}
	return out
}

func TestNoBudgetReadsNothing(t *testing.T) {
	t.Parallel()
	c, err := budget.New(failingStore{}, budget.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(context.Background(), "alice"); err != nil {
		t.Fatal(err)
	}
	c, _ = budget.New(failingStore{}, budget.Limits{Tokens: 1})
	if err := c.Check(context.Background(), "alice"); err == nil || !strings.Contains(err.Error(), "down") {
		t.Fatalf("a store that fails: %v", err)
	}
	if _, err := budget.New(failingStore{}, budget.Limits{Tokens: -1}); err == nil {
		t.Fatal("a negative budget was taken")
	}
}

type failingStore struct{ usage.Store }

func (failingStore) Month(context.Context, string, time.Time) (usage.Counts, error) {
	return usage.Counts{}, errors.New("store down")
}
