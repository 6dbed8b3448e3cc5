package llmgw

import (
	"context"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/services/llmgw/internal/router"
	"github.com/wick-agent/wick/services/llmgw/internal/script"
	"github.com/wick-agent/wick/services/llmgw/internal/spec"
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
	ttft      metric.Float64Histogram
	cost      metric.Float64Counter
}

// ttftBuckets are the bounds, in seconds, of the time to first token: from
// a local model's tens of milliseconds to a reasoning model's minute.
var ttftBuckets = []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64}

// Labels of a model nobody configured.
const (
	// otherModel is the model label of a spec a request named: requests
	// choose any string, and each would be a series of its own.
	otherModel = "other"
	// inlineScript is the model label of a script given whole in a request.
	inlineScript = "inline"
)

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
	if r.ttft, err = m.Float64Histogram("wick.llm.time_to_first_token", metric.WithDescription("time from a call's arrival to the first event from its provider (retries and fallbacks included); calls that streamed nothing are not recorded"), metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(ttftBuckets...)); err != nil {
		return nil, err
	}
	if r.cost, err = m.Float64Counter("wick.llm.cost", metric.WithDescription("cost of the calls to models the models file prices"), metric.WithUnit("USD")); err != nil {
		return nil, err
	}
	return &r, nil
}

// record counts one finished call; model is its bounded label (modelLabel).
func (m *metrics) record(ctx context.Context, rpc, model string, out router.Outcome, a accounting, err error) {
	provider := ""
	if out.Target != nil {
		provider = out.Target.Provider
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
	if a.firstEvent > 0 {
		m.ttft.Record(ctx, a.firstEvent.Seconds(), metric.WithAttributeSet(attribute.NewSet(
			attribute.String("provider", provider),
			attribute.String("model", model),
			attribute.String("code", code.String()),
		)))
	}
	if a.usage.CostMicroUSD > 0 {
		m.cost.Add(ctx, float64(a.usage.CostMicroUSD)/1e6, metric.WithAttributeSet(attribute.NewSet(
			attribute.String("provider", provider),
			attribute.String("model", model),
		)))
	}
}

// modelLabel is the model label of a call's target: its model when the
// operator configured it (models file entries and their chains, the default
// models), or when it is a script of the script directory (or an embedded one);
// otherModel or inlineScript when a request named it. A label per distinct
// string a request sends would let callers grow the series without bound.
func (s *Service) modelLabel(t *router.Target) string {
	switch {
	case t == nil:
		return ""
	case s.reg.configured[t.Name]:
		return t.Model
	case t.Provider != spec.Script:
		return otherModel
	}
	m := strings.TrimSpace(t.Model)
	if strings.HasPrefix(m, "{") || strings.HasPrefix(m, "[") {
		return inlineScript
	}
	name, _, err := script.SplitName(m)
	if err != nil {
		return otherModel
	}
	if name == script.DemoName || name == script.ShowcaseName {
		return name
	}
	if s.cfg.ScriptDir == "" {
		return otherModel
	}
	root, err := os.OpenRoot(s.cfg.ScriptDir)
	if err != nil {
		return otherModel
	}
	defer root.Close()
	if fi, err := root.Stat(name); err != nil || !fi.Mode().IsRegular() {
		return otherModel
	}
	return name
}
