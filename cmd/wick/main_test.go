package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
)

// startWick runs wick with args on loopback ports and returns the REST URL
// and the metrics line of what it printed; the cleanup stops it as a
// supervisor would (SIGINT) and waits for run to return.
func startWick(t *testing.T, args ...string) (restURL, metricsLine string) {
	t.Helper()
	base := []string{"-http-addr", "127.0.0.1:0", "-gateway-grpc-addr", "127.0.0.1:0", "-agent-addr", "127.0.0.1:0",
		"-sandbox-addr", "127.0.0.1:0", "-llm-addr", "127.0.0.1:0", "-sandbox", "local", "-sandbox-state-dir", t.TempDir(),
		"-log-level", "error"}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(append(base, args...), pw)
		pw.CloseWithError(errors.Join(err, io.EOF))
		done <- err
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if u, ok := strings.CutPrefix(line, "REST API"); ok {
			restURL = strings.Fields(u)[0]
		}
		if m, ok := strings.CutPrefix(line, "metrics"); ok {
			metricsLine = strings.TrimSpace(m)
		}
		if strings.HasPrefix(line, "Try:") {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if restURL == "" {
		t.Fatalf("wick did not start: %v", <-done)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
		if err := <-done; err != nil {
			t.Errorf("run = %v", err)
		}
	})
	return restURL, metricsLine
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestMetricsListeners checks where wick serves /metrics: on -metrics-addr,
// with the LLM gateway's OpenTelemetry instruments and the gateway's own
// Prometheus metrics in one registry; on the public listener only with
// -public-metrics. Not parallel: each case stops wick with a signal to the
// process.
func TestMetricsListeners(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantPublic int
		wantOwn    bool
	}{
		{"metrics on their own listener", []string{"-metrics-addr", "127.0.0.1:0"}, http.StatusNotFound, true},
		{"public metrics", []string{"-metrics-addr", "", "-public-metrics"}, http.StatusOK, false},
		{"public metrics behind a token", []string{"-metrics-addr", "", "-public-metrics", "-metrics-token", "scrape"}, http.StatusUnauthorized, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rest, metrics := startWick(t, tc.args...)
			// A call of the LLM gateway, so that its counters have a series.
			resp, err := http.Post(rest+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"model":"script:demo","messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST /v1/chat/completions = %s", resp.Status)
			}
			code, body := get(t, rest+"/metrics")
			if code != tc.wantPublic {
				t.Fatalf("GET /metrics on the public listener = %d, want %d", code, tc.wantPublic)
			}
			if code == http.StatusOK && !strings.Contains(body, "wick_gateway_http_requests_total") {
				t.Errorf("public /metrics lacks the gateway's metrics")
			}
			if own := metrics != rest+"/metrics" && strings.HasPrefix(metrics, "http://"); own != tc.wantOwn {
				t.Fatalf("metrics line %q, want its own listener: %v", metrics, tc.wantOwn)
			}
			if !tc.wantOwn {
				return
			}
			url := metrics
			code, body = get(t, url)
			if code != http.StatusOK {
				t.Fatalf("GET %s = %d", url, code)
			}
			for _, want := range []string{"wick_llm_calls_total{", "wick_llm_tokens_input_total{", "wick_gateway_http_requests_total", "target_info", "go_goroutines"} {
				if !strings.Contains(body, want) {
					t.Errorf("-metrics-addr lacks %s", want)
				}
			}
			if strings.Contains(body, "otel_scope_") {
				t.Errorf("-metrics-addr has otel_scope_ labels")
			}
		})
	}
}

// TestBusyDefaultMetricsPort checks that a wick that finds the default
// metrics port taken (another wick on the host) starts without it, and
// says so, while a taken address the operator gave stops it.
func TestBusyDefaultMetricsPort(t *testing.T) {
	l, err := net.Listen("tcp", DefaultMetricsAddr)
	if err == nil {
		t.Cleanup(func() { l.Close() })
	} // else someone else holds it: busy either way.
	if _, metrics := startWick(t); !strings.HasPrefix(metrics, "off") {
		t.Errorf("metrics line %q, want off", metrics)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	err = run([]string{"-metrics-addr", busy.Addr().String(), "-log-level", "error"}, io.Discard)
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "-metrics-addr") {
		t.Errorf("run with a taken -metrics-addr = %v, want it refused", err)
	}
}
