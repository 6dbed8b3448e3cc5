package llmgw

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/services/llmgw/internal/router"
)

const meterName = "github.com/wick-agent/wick/services/llmgw"

// metrics are the gateway's OpenTelemetry instruments.
type metrics struct {
	calls     metric.Int64Counter
	input     metric.Int64Counter
	output    metric.Int64Counter
	overhead  metric.Float64Histogram
	upstream  metric.Float64Histogram
	retries   metric.Int64Counter
	fallbacks metric.Int64Counter
	cost      metric.Float64Counter
}

func newMetrics(mp metric.MeterProvider) (*metrics, error) {
	m := mp.Meter(meterName)
	var r metrics
	var err error
	if r.calls, err = m.Int64Counter("wick.llm.calls", metric.WithDescription("LLM calls by outcome"), metric.WithUnit("{call}")); err != nil {
		return nil, err
	}
	if r.input, err = m.Int64Counter("wick.llm.tokens.input", metric.WithDescription("prompt tokens"), metric.WithUnit("{token}")); err != nil {
		return nil, err
	}
	if r.output, err = m.Int64Counter("wick.llm.tokens.output", metric.WithDescription("completion tokens"), metric.WithUnit("{token}")); err != nil {
		return nil, err
	}
	if r.overhead, err = m.Float64Histogram("wick.llm.overhead", metric.WithDescription("gateway time per call: wall time minus provider time and backoff waits"), metric.WithUnit("us")); err != nil {
		return nil, err
	}
	if r.upstream, err = m.Float64Histogram("wick.llm.upstream.duration", metric.WithDescription("time spent waiting on providers per call"), metric.WithUnit("s")); err != nil {
		return nil, err
	}
	if r.retries, err = m.Int64Counter("wick.llm.retries", metric.WithDescription("retried provider attempts"), metric.WithUnit("{attempt}")); err != nil {
		return nil, err
	}
	if r.fallbacks, err = m.Int64Counter("wick.llm.fallbacks", metric.WithDescription("moves to the next model of a chain"), metric.WithUnit("{fallback}")); err != nil {
		return nil, err
	}
	if r.cost, err = m.Float64Counter("wick.llm.cost", metric.WithDescription("cost of the calls to models the models file prices"), metric.WithUnit("USD")); err != nil {
		return nil, err
	}
	return &r, nil
}

func (m *metrics) record(ctx context.Context, rpc string, out router.Outcome, a accounting, err error) {
	provider, model := "", ""
	if out.Target != nil {
		provider, model = out.Target.Provider, out.Target.Model
	}
	code := codes.OK
	if err != nil {
		code = rpcstatus.Code(err)
	}
	attrs := metric.WithAttributeSet(attribute.NewSet(
		attribute.String("rpc", rpc),
		attribute.String("provider", provider),
		attribute.String("model", model),
		attribute.String("code", code.String()),
	))
	m.calls.Add(ctx, 1, attrs)
	m.input.Add(ctx, a.usage.InputTokens, attrs)
	m.output.Add(ctx, a.usage.OutputTokens, attrs)
	m.overhead.Record(ctx, float64(a.overhead.Microseconds()), attrs)
	m.upstream.Record(ctx, out.Upstream.Seconds(), attrs)
	if out.Retries > 0 {
		m.retries.Add(ctx, int64(out.Retries), attrs)
	}
	if out.Fallbacks > 0 {
		m.fallbacks.Add(ctx, int64(out.Fallbacks), attrs)
	}
	if a.usage.CostMicroUSD > 0 {
		m.cost.Add(ctx, float64(a.usage.CostMicroUSD)/1e6, metric.WithAttributeSet(attribute.NewSet(
			attribute.String("provider", provider),
			attribute.String("model", model),
		)))
	}
}
