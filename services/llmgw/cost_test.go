package llmgw_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/usage"
	"github.com/wick-agent/wick/services/llmgw"
)

// pricedScript reports 1000 prompt and 200 completion tokens per call.
const pricedScript = `script:[{"text":"ok","usage":{"input_tokens":1000,"output_tokens":200}},{"text":"again","usage":{"input_tokens":1000,"output_tokens":200}}]`

func TestPriceTurnsTokensIntoCost(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	cfg := config(
		llmgw.ModelConfig{ID: "priced", Spec: pricedScript, Price: &llmgw.Price{Input: 2.5, Output: 10}},
		llmgw.ModelConfig{ID: "free", Spec: pricedScript},
		llmgw.ModelConfig{ID: "chain", Fallback: []string{"priced"}},
	)
	svc, err := llmgw.New(cfg, llmgw.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	ctx := identity.WithUser(context.Background(), testUser)
	// 1000 × $2.50/M + 200 × $10/M = $0.0045 = 4500 µ$.
	for _, tc := range []struct {
		model   string
		want    int64
		trailer []string
	}{
		{"priced", 4500, []string{"4500"}},
		{"chain", 4500, []string{"4500"}},
		{"free", 0, nil},
	} {
		var tr metadata.MD
		resp, err := svc.Call(grpc.NewContextWithServerTransportStream(ctx, &trailerStream{md: &tr}), &llmv1.CallRequest{Models: models(tc.model), Messages: userHi})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetUsage().GetCostMicroUsd(); got != tc.want || resp.GetUsage().GetInputTokens() != 1000 {
			t.Errorf("%s: usage %v, want cost %d", tc.model, resp.GetUsage(), tc.want)
		}
		if got := tr.Get(llmgw.TrailerCostMicroUSD); strings.Join(got, ",") != strings.Join(tc.trailer, ",") {
			t.Errorf("%s: cost trailer %v, want %v", tc.model, got, tc.trailer)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var cost float64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[float64]); ok && m.Name == "wick.llm.cost" {
				for _, dp := range s.DataPoints {
					cost += dp.Value
					if dp.Attributes.Len() != 2 || !dp.Attributes.HasValue("provider") || !dp.Attributes.HasValue("model") {
						t.Errorf("cost labels %v, want provider and model", dp.Attributes.ToSlice())
					}
				}
			}
		}
	}
	if cost < 0.008999 || cost > 0.009001 {
		t.Errorf("wick.llm.cost = %v, want 0.009", cost)
	}
}

func TestBadPrice(t *testing.T) {
	t.Parallel()
	for name, m := range map[string]llmgw.ModelConfig{
		"negative": {ID: "m", Spec: pricedScript, Price: &llmgw.Price{Input: -1}},
		"chain":    {ID: "c", Fallback: []string{"script:demo"}, Price: &llmgw.Price{Input: 1}},
	} {
		if _, err := llmgw.New(config(m)); err == nil || !strings.Contains(err.Error(), "price") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// trailerStream is the server transport stream of a direct call, which
// keeps the trailer the call sets.
type trailerStream struct{ md *metadata.MD }

func (s *trailerStream) Method() string               { return "/wick.llm.v1.LLMService/Call" }
func (s *trailerStream) SetHeader(metadata.MD) error  { return nil }
func (s *trailerStream) SendHeader(metadata.MD) error { return nil }
func (s *trailerStream) SetTrailer(md metadata.MD) error {
	*s.md = metadata.Join(*s.md, md)
	return nil
}

func TestHTTPAPIRecordsUsage(t *testing.T) {
	t.Parallel()
	rec := usage.NewMemory()
	cfg := config(llmgw.ModelConfig{ID: "priced", Spec: pricedScript, Price: &llmgw.Price{Input: 2.5, Output: 10}})
	svc, err := llmgw.New(cfg, llmgw.WithUsageRecorder(rec))
	if err != nil {
		t.Fatal(err)
	}
	// Mounted in-process, the way the REST gateway does: the user is in the
	// request's context.
	h := svc.HTTPHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(identity.WithUser(r.Context(), r.Header.Get("X-Test-User"))))
	}))
	t.Cleanup(srv.Close)
	post := func(user, agent, path, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Test-User", user)
		if agent != "" {
			req.Header.Set(usage.AgentHeader, agent)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", path, resp.Status)
		}
		return resp
	}
	resp := post("alice", "coder", "/v1/chat/completions", `{"model":"priced","messages":[{"role":"user","content":"hi"}]}`)
	if got := resp.Header.Get(llmgw.TrailerCostMicroUSD); got != "4500" {
		t.Errorf("cost header %q, want 4500", got)
	}
	post("bob", "", "/v1/messages", `{"model":"priced","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`)

	// Yesterday too, for a test that runs over midnight.
	rows, err := rec.Rows(context.Background(), "", time.Now().Add(-24*time.Hour), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		rows[i].Day = ""
	}
	day := ""
	c := usage.Counts{Calls: 1, InputTokens: 1000, OutputTokens: 200, CostMicroUSD: 4500}
	want := []usage.Row{
		{Day: day, User: "alice", Agent: "coder", Model: "script:inline", Counts: c},
		{Day: day, User: "bob", Agent: usage.External, Model: "script:inline", Counts: c},
	}
	if len(rows) != len(want) || rows[0] != want[0] || rows[1] != want[1] {
		t.Errorf("rows\n got %+v\nwant %+v", rows, want)
	}
}
