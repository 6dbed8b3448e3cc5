package runexec

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/wick-agent/wick/services/agent/internal/meters"
)

// Kinds of runs, by what executes them.
const (
	runKindLoop = "loop"
	runKindACP  = "acp"
)

// Tool labels of calls whose tool name is not the operator's: the user's
// HTTP tools and MCP servers' tools are labelled by kind, so that the
// label takes few values; a name the agent has no tool for is "unknown".
const (
	toolKindHTTP    = "http"
	toolKindMCP     = "mcp"
	toolKindUnknown = "unknown"
)

// metrics are the executor's instruments: runs and tool calls.
type metrics struct {
	started      metric.Int64Counter
	finished     metric.Int64Counter
	runDuration  metric.Float64Histogram
	toolCalls    metric.Int64Counter
	toolDuration metric.Float64Histogram
	kinds        *meters.Sets[string]
	statuses     *meters.Sets[string]
	tools        *meters.Sets[toolKey]
}

type toolKey struct{ tool, outcome string }

func newMetrics(mp metric.MeterProvider) *metrics {
	m := meters.Meter(mp)
	var r metrics
	var errs [5]error
	r.started, errs[0] = m.Int64Counter("wick.agent.runs.started", metric.WithDescription("runs started, by kind (loop: Wick's loop; acp: an external agent)"), metric.WithUnit("{run}"))
	r.finished, errs[1] = m.Int64Counter("wick.agent.runs.finished", metric.WithDescription("runs ended, by final status"), metric.WithUnit("{run}"))
	r.runDuration, errs[2] = m.Float64Histogram("wick.agent.run.duration", metric.WithDescription("wall time of a run, by final status"), metric.WithUnit("s"))
	r.toolCalls, errs[3] = m.Int64Counter("wick.agent.tool.calls", metric.WithDescription("tool calls, by tool and outcome"), metric.WithUnit("{call}"))
	r.toolDuration, errs[4] = m.Float64Histogram("wick.agent.tool.duration", metric.WithDescription("time a tool call ran, by tool and outcome"), metric.WithUnit("s"))
	for _, err := range errs {
		if err != nil {
			otel.Handle(err) // only an invalid name fails, and the names are constants
		}
	}
	r.kinds = meters.NewSets(func(k string) attribute.Set { return attribute.NewSet(attribute.String("kind", k)) })
	r.statuses = meters.NewSets(func(s string) attribute.Set { return attribute.NewSet(attribute.String("status", s)) })
	r.tools = meters.NewSets(func(k toolKey) attribute.Set {
		return attribute.NewSet(attribute.String("tool", k.tool), attribute.String("outcome", k.outcome))
	})
	return &r
}

func (m *metrics) runStarted(ctx context.Context, kind string) {
	m.started.Add(ctx, 1, m.kinds.Get(kind).Add...)
}

func (m *metrics) runFinished(ctx context.Context, status string, d time.Duration) {
	set := m.statuses.Get(status)
	m.finished.Add(ctx, 1, set.Add...)
	m.runDuration.Record(ctx, d.Seconds(), set.Record...)
}

// toolObserver records a run's tool calls; labels maps the names of tools
// that are not the operator's to their kind.
type toolObserver struct {
	m      *metrics
	labels map[string]string
}

// ToolCallEnded implements loop.ToolObserver.
func (o toolObserver) ToolCallEnded(ctx context.Context, name string, known bool, outcome string, d time.Duration) {
	tool := name
	if !known {
		tool = toolKindUnknown
	} else if kind, ok := o.labels[name]; ok {
		tool = kind
	}
	set := o.m.tools.Get(toolKey{tool, outcome})
	o.m.toolCalls.Add(ctx, 1, set.Add...)
	o.m.toolDuration.Record(ctx, d.Seconds(), set.Record...)
}
