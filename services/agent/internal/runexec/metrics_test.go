package runexec

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// TestToolMetricAllocs: recording a tool call, which happens per call,
// allocates nothing once its tool and outcome were seen.
func TestToolMetricAllocs(t *testing.T) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	o := toolObserver{m: newMetrics(mp), labels: map[string]string{"my_http_tool": toolKindHTTP}}
	ctx := context.Background()
	cases := []struct {
		name  string
		tool  string
		known bool
	}{
		{"built-in", "calculate", true},
		{"user's tool", "my_http_tool", true},
		{"unknown", "made_up", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o.ToolCallEnded(ctx, c.tool, c.known, "ok", time.Millisecond)
			if n := testing.AllocsPerRun(100, func() { o.ToolCallEnded(ctx, c.tool, c.known, "ok", time.Millisecond) }); n > 0 {
				t.Errorf("%v allocations per call", n)
			}
		})
	}
}

// BenchmarkToolMetric is the cost of recording one tool call.
func BenchmarkToolMetric(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	o := toolObserver{m: newMetrics(mp)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		o.ToolCallEnded(ctx, "calculate", true, "ok", time.Millisecond)
	}
}
