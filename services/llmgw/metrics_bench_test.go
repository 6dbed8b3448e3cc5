package llmgw_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/telemetry"
	"github.com/wick-agent/wick/services/llmgw"
)

// BenchmarkMetricsPerToken measures a scripted reply of benchTokens tokens
// (one event each) with the instruments exported to Prometheus, as every
// process now runs, and with a no-op meter provider, as before: the
// difference over the tokens is what the instruments cost per streamed
// event (the time to first token is checked on every event, the rest is
// recorded once per call).
func BenchmarkMetricsPerToken(b *testing.B) {
	words := strings.TrimSpace(strings.Repeat("token ", benchTokens))
	req := &llmv1.CallRequest{Models: models(`script:[{"text":"` + words + `"}]`), Messages: userHi}
	ctx := identity.WithUser(context.Background(), testUser)
	providers := []struct {
		name string
		mp   func(b *testing.B) metric.MeterProvider
	}{
		{"noop", func(*testing.B) metric.MeterProvider { return noop.NewMeterProvider() }},
		{"prometheus", func(b *testing.B) metric.MeterProvider {
			mp, err := telemetry.NewMeterProvider(context.Background(), "bench", prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
			return mp
		}},
	}
	for _, p := range providers {
		b.Run(p.name, func(b *testing.B) {
			svc, err := llmgw.New(config(), llmgw.WithMeterProvider(p.mp(b)))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			c0 := cpuTime(b)
			for b.Loop() {
				if _, err := svc.Call(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime(b)-c0).Nanoseconds())/float64(b.N*benchTokens), "cpu-ns/token")
		})
	}
}
