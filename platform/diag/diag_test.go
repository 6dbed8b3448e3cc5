package diag

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestPprofOnlyOnLoopback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true},
		{"[::1]:0", true},
		{"localhost:0", true},
		{"0.0.0.0:0", false},
		{":0", false},
		{"[::]:0", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			l, err := Start(Flags{PprofAddr: tt.addr}, nil, slog.New(slog.DiscardHandler))
			if !tt.ok {
				if !errors.Is(err, ErrNotLoopback) {
					t.Fatalf("Start(%q) = %v, want ErrNotLoopback", tt.addr, err)
				}
				return
			}
			if err != nil {
				if strings.Contains(err.Error(), "cannot assign requested address") {
					t.Skipf("no %s here: %v", tt.addr, err)
				}
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close(context.Background()) })
			body := get(t, "http://"+l.PprofAddr+"/debug/pprof/")
			if !strings.Contains(body, "goroutine") {
				t.Fatalf("pprof index: %.200s", body)
			}
		})
	}
}

func TestOffByDefault(t *testing.T) {
	t.Parallel()
	l, err := Start(Flags{}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil || l.PprofAddr != "" || l.MetricsAddr != "" || len(l.servers) != 0 {
		t.Fatalf("Start with no addresses = %+v, %v", l, err)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "wick_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(3)
	l, err := Start(Flags{MetricsAddr: "127.0.0.1:0"}, reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	if body := get(t, "http://"+l.MetricsAddr+"/metrics"); !strings.Contains(body, "wick_test_total 3") {
		t.Fatalf("metrics: %s", body)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}
