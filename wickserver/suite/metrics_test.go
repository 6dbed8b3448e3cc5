package suite

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/wick-agent/wick/platform/testenv"
)

// scrape reads url's metrics, sums each family's samples over their labels,
// and returns the sums by family name.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				out[name] += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[name] += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[name] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// streamUsage runs one message on the default agent over SSE and returns the
// input and output tokens its on_usage events report.
func streamUsage(t *testing.T, base string) (in, out float64) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", base+"/agents/default/stream",
		strings.NewReader(`{"messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "on_usage":
			var ev struct {
				Data struct {
					InputTokens  float64 `json:"input_tokens"`
					OutputTokens float64 `json:"output_tokens"`
				} `json:"data"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
				t.Fatal(err)
			}
			in += ev.Data.InputTokens
			out += ev.Data.OutputTokens
		}
	}
	return in, out
}

// TestRunMovesLLMMetrics runs the scripted model through the suite and reads
// the LLM gateway's token counters, as Prometheus names them, on /metrics.
func TestRunMovesLLMMetrics(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := localConfig(t)
	cfg.Gateway.PublicMetrics = true
	s, err := Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = s.Wait() })
	before := scrape(t, s.HTTPURL+"/metrics")
	in, out := streamUsage(t, s.HTTPURL)
	if in == 0 || out == 0 {
		t.Fatalf("the run reported %v input and %v output tokens, want some", in, out)
	}
	after := scrape(t, s.HTTPURL+"/metrics")
	// A run is counted finished once its executor returns, which is after
	// its last event reached the client.
	testenv.Eventually(t, 10*time.Second, func() bool {
		after = scrape(t, s.HTTPURL+"/metrics")
		return after["wick_agent_runs_finished_total"] > before["wick_agent_runs_finished_total"]
	}, "the run counted finished")
	tests := []struct {
		name string
		want float64
	}{
		{"wick_llm_tokens_input_total", in},
		{"wick_llm_tokens_output_total", out},
	}
	for _, tc := range tests {
		if got := after[tc.name] - before[tc.name]; got != tc.want {
			t.Errorf("%s moved by %v, want %v (the run's on_usage events)", tc.name, got, tc.want)
		}
	}
	// The agent and sandbox services record on the suite's provider too.
	for _, name := range []string{"wick_llm_calls_total", "wick_llm_time_to_first_token_seconds", "wick_llm_upstream_duration_seconds", "wick_llm_overhead_microseconds",
		"wick_agent_runs_started_total", "wick_agent_runs_finished_total", "wick_agent_run_duration_seconds", "wick_sandbox_create_duration_seconds"} {
		if after[name] <= before[name] {
			t.Errorf("%s did not move: %v before, %v after", name, before[name], after[name])
		}
	}
}
