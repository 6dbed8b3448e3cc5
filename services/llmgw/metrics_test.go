package llmgw_test

import (
	"context"
	"os"
	"path/filepath"
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

// TestMetricLabelsAreBounded checks the model label of each way a request
// can name a model: the models the operator configured keep their name,
// and any string a request makes up is folded into one label, so callers
// cannot grow the series.
func TestMetricLabelsAreBounded(t *testing.T) {
	t.Parallel()
	f := fakellm.New(fakellm.SSE(fakellm.Fixture("openai/text_stream.sse")))
	url := fake(t, f)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mine.json"), []byte(`[{"text":"from a file"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		model     *llmv1.ModelSpec
		wantModel string
		wantCode  string
	}{
		{"configured", &llmv1.ModelSpec{Spec: "m"}, "gpt-4o", "OK"},
		{"named by the request", &llmv1.ModelSpec{Provider: "openai", Model: "gpt-made-up-7", BaseUrl: url + "/v1", ApiKeyEnv: "OPENAI_API_KEY"}, "other", "OK"},
		{"script of the directory", &llmv1.ModelSpec{Spec: "script:mine.json?delay=1ms"}, "mine.json", "OK"},
		{"demo script", &llmv1.ModelSpec{Spec: "script:demo"}, "demo", "OK"},
		{"showcase script", &llmv1.ModelSpec{Spec: "script:showcase"}, "showcase", "OK"},
		{"script that does not exist", &llmv1.ModelSpec{Spec: "script:no-such-" + t.Name()}, "other", "InvalidArgument"},
		{"inline script", &llmv1.ModelSpec{Spec: `script:[{"text":"inline"}]`}, "inline", "OK"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
			cfg := config(openaiModel("m", url))
			cfg.ScriptDir = dir
			cfg.AllowRequestBaseURL = true
			cfg.AllowedKeyEnvs = []string{"OPENAI_API_KEY"}
			svc, err := llmgw.New(cfg, llmgw.WithMeterProvider(mp),
				llmgw.WithLookupEnv(func(k string) (string, bool) { v, ok := keys[k]; return v, ok }))
			if err != nil {
				t.Fatal(err)
			}
			ctx := identity.WithUser(context.Background(), testUser)
			_, _ = svc.Call(ctx, &llmv1.CallRequest{Models: []*llmv1.ModelSpec{tc.model}, Messages: userHi})
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(context.Background(), &rm); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "wick.llm.calls" {
						for _, dp := range s.DataPoints {
							model, _ := dp.Attributes.Value("model")
							code, _ := dp.Attributes.Value("code")
							got = append(got, model.AsString()+" "+code.AsString())
						}
					}
				}
			}
			if want := tc.wantModel + " " + tc.wantCode; len(got) != 1 || got[0] != want {
				t.Errorf("wick.llm.calls series = %q, want [%q]", got, want)
			}
		})
	}
}

// TestTimeToFirstToken checks that a streamed call records its time to the
// first event, labelled like the call, and that a call that never reached a
// provider records none.
func TestTimeToFirstToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		models    []*llmv1.ModelSpec
		wantCount uint64
	}{
		{"streamed", models("script:demo?delay=5ms"), 1},
		{"refused before any provider", models("script:../escape"), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
			cfg := config()
			cfg.ScriptDir = t.TempDir()
			svc, err := llmgw.New(cfg, llmgw.WithMeterProvider(mp))
			if err != nil {
				t.Fatal(err)
			}
			ctx := identity.WithUser(context.Background(), testUser)
			_, _ = svc.Call(ctx, &llmv1.CallRequest{Models: tc.models, Messages: userHi})
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(context.Background(), &rm); err != nil {
				t.Fatal(err)
			}
			var count uint64
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					h, ok := m.Data.(metricdata.Histogram[float64])
					if !ok || m.Name != "wick.llm.time_to_first_token" {
						continue
					}
					for _, dp := range h.DataPoints {
						count += dp.Count
						if dp.Count > 0 && dp.Sum < 0.005 {
							t.Errorf("time to first token = %vs, want at least the script's 5ms delay", dp.Sum)
						}
						if model, _ := dp.Attributes.Value("model"); model.AsString() != "demo" {
							t.Errorf("model label = %q, want demo", model.AsString())
						}
					}
				}
			}
			if count != tc.wantCount {
				t.Errorf("time to first token recorded %d times, want %d", count, tc.wantCount)
			}
		})
	}
}
