package tasks

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wick-agent/wick/platform/netguard"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent/internal/ids"
	"github.com/wick-agent/wick/services/agent/internal/tools"
)

// cpuTime is the CPU this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIdleTasks measures what 1,000 idle background tasks cost a
// replica: HTTP tasks whose status URL keeps answering "running", polled at
// a fixed interval (the backoff's cap, reached after a minute), with their
// leases renewed in Redis every 5 s. One iteration watches the process for
// one poll interval (at least 3 s) and reports its CPU per second of wall
// time; the status server runs in this process, so its side of each poll is
// counted too.
func BenchmarkIdleTasks(b *testing.B) {
	const n = 1000
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"running"}`))
	}))
	b.Cleanup(srv.Close)
	client := tools.SafeHTTPClient(netguard.New(netip.MustParsePrefix("127.0.0.0/8")))
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{testenv.Redis(b)}})
	b.Cleanup(func() { rdb.Close() })
	for _, every := range []time.Duration{time.Second, 5 * time.Second, DefaultPollMax} {
		b.Run(fmt.Sprintf("poll=%s", every), func(b *testing.B) {
			m := NewManager(NewRedisStore(rdb, ids.New("bench")), "A", nil, nil, client,
				WithPollBackoff(every, every), WithMaxRunning(0))
			m.Start(nil)
			b.Cleanup(m.Close)
			ctx := context.Background()
			for i := range n {
				if _, err := m.Begin(ctx, Spec{User: "u", ThreadID: "th", Tool: "t", Kind: KindHTTP,
					StatusURL: fmt.Sprintf("%s/status/%d", srv.URL, i)}); err != nil {
					b.Fatal(err)
				}
			}
			window := max(every, 3*time.Second)
			b.ResetTimer()
			var cpu, wall time.Duration
			for range b.N {
				c0, w0 := cpuTime(b), time.Now()
				time.Sleep(window) // the measurement is of idle time itself
				cpu += cpuTime(b) - c0
				wall += time.Since(w0)
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/wall.Seconds(), "cpu-ms/s")
		})
	}
}
