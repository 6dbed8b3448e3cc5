package llmgw_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/llmgw"
	"github.com/wick-agent/wick/services/llmgw/internal/fakellm"
)

func TestMetrics(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	f := fakellm.New(fakellm.SSE(fakellm.Fixture("openai/text_stream.sse")))
	svc, err := llmgw.New(config(openaiModel("m", fake(t, f))), llmgw.WithMeterProvider(mp),
		llmgw.WithLookupEnv(func(k string) (string, bool) { v, ok := keys[k]; return v, ok }))
	if err != nil {
		t.Fatal(err)
	}
	// Called directly, so the verified user the server's interceptor would set is set here.
	if _, err := svc.Call(identity.WithUser(context.Background(), testUser), &llmv1.CallRequest{Models: models("m"), Messages: userHi}); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			seen[m.Name] = true
			if s, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range s.DataPoints {
					sums[m.Name] += dp.Value
				}
			}
		}
	}
	if sums["wick.llm.tokens.input"] != 14 || sums["wick.llm.tokens.output"] != 47 || sums["wick.llm.calls"] != 1 {
		t.Errorf("sums = %v", sums)
	}
	if !seen["wick.llm.overhead"] || !seen["wick.llm.upstream.duration"] {
		t.Errorf("metrics = %v", seen)
	}
}
