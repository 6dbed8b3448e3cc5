package runs

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wick-agent/wick/platform/runevent"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// BenchmarkRedisAppend measures logging one token event of a running run
// (what each streamed delta costs the loop) on a real redis-server.
func BenchmarkRedisAppend(b *testing.B) {
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(b)})
	b.Cleanup(func() { rdb.Close() })
	r := NewRedis(rdb)
	ctx := context.Background()
	if err := r.Put(ctx, &Run{ID: "bench", Status: StatusRunning}); err != nil {
		b.Fatal(err)
	}
	ev := loop.StreamEvent{RunID: "bench", ThreadID: "th", Data: runevent.MustFromJSON("on_chat_model_stream", map[string]any{"delta": "token "})}
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if _, err := r.Append(ctx, "bench", ev); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
