package threads

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// thread200 is a realistic 200-message thread: user turns, assistant tool
// calls and tool results of a few hundred bytes each.
func thread200() *loop.AgentState {
	st := &loop.AgentState{ThreadID: "bench", AgentID: "default"}
	body := strings.Repeat("lorem ipsum dolor sit amet ", 12)
	for i := 0; len(st.Messages) < 200; i++ {
		id := fmt.Sprintf("call_%d", i)
		st.Messages = append(st.Messages,
			loop.Human(fmt.Sprintf("step %d: %s", i, body)),
			loop.AI("", llm.ToolCall{ID: id, Name: "read_file", Args: map[string]any{"path": fmt.Sprintf("/workspace/f%d.txt", i)}}),
			loop.ToolMsg(id, "read_file", body),
			loop.AI("done: "+body))
	}
	st.Messages = st.Messages[:200]
	return st
}

// BenchmarkRedisSaveLoad200 measures one Save and one Get of a 200-message
// thread on a real redis-server over loopback (target p50 ≤ 1 ms).
func BenchmarkRedisSaveLoad200(b *testing.B) {
	s := NewRedisStore(newRedis(b))
	ctx := context.Background()
	st := thread200()
	if err := s.Save(ctx, "bench", st, "", Bounds{}); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := s.Save(ctx, "bench", st, "", Bounds{}); err != nil {
			b.Fatal(err)
		}
		got, err := s.Get(ctx, "bench", "bench")
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		st = got
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// BenchmarkValidateHistory200 measures the history check every Save and Get
// of a 200-message thread now runs, apart from the Redis round trip.
func BenchmarkValidateHistory200(b *testing.B) {
	msgs := loop.Messages(thread200().Messages)
	for b.Loop() {
		if err := msgs.ValidateHistory(); err != nil {
			b.Fatal(err)
		}
	}
}
