package threads

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// thread200 is a realistic 200-message thread: user turns, assistant tool
// calls and tool results of a few hundred bytes each.
func thread200() *loop.AgentState { return threadOf("bench", 200) }

// threadOf is a realistic thread of n messages (n a multiple of 4).
func threadOf(threadID string, n int) *loop.AgentState {
	st := &loop.AgentState{ThreadID: threadID, AgentID: "default"}
	for i := 0; len(st.Messages) < n; i++ {
		st.Messages = append(st.Messages, loop.Human(fmt.Sprintf("step %d: %s", i, benchBody)))
		st.Messages = append(st.Messages, toolRound(i)...)
		st.Messages = append(st.Messages, loop.AI("done: "+benchBody))
	}
	st.Messages = st.Messages[:n]
	return st
}

var benchBody = strings.Repeat("lorem ipsum dolor sit amet ", 12)

// toolRound is what one tool round adds to a thread: the model's call and
// the tool's result.
func toolRound(i int) []llm.Message {
	id := fmt.Sprintf("call_%d", i)
	return []llm.Message{
		loop.AI("", llm.ToolCall{ID: id, Name: "read_file", Args: map[string]any{"path": fmt.Sprintf("/workspace/f%d.txt", i)}}),
		loop.ToolMsg(id, "read_file", benchBody),
	}
}

// BenchmarkToolRound measures the save after one tool round on a
// 20-message and on a 2,000-message thread, alternately in one run, for
// each store (target: the long thread's round within 1.5× of the short
// one's). The baseline, in the same run, is the same round written whole,
// as every save was before threads were stored in two parts. Every few
// rounds each thread is written afresh at its size, untimed, so the sizes
// stay within ten messages of 20 and 2,000.
func BenchmarkToolRound(b *testing.B) {
	for _, name := range []string{"memory/append", "memory/whole", "redis/append", "redis/whole"} {
		b.Run(name, func(b *testing.B) {
			var s Store
			if strings.HasPrefix(name, "memory") {
				m := NewMemoryStore()
				b.Cleanup(func() { m.Close() })
				s = m
			} else {
				s = NewRedisStore(newRedis(b))
			}
			whole := strings.HasSuffix(name, "whole")
			ctx := context.Background()
			type thread struct {
				base *loop.AgentState
				st   *loop.AgentState
				lat  []time.Duration
			}
			ts := []*thread{{base: threadOf("round20", 20)}, {base: threadOf("round2000", 2000)}}
			reset := func(t *thread) {
				if err := s.Delete(ctx, "bench", t.base.ThreadID); err != nil {
					b.Fatal(err)
				}
				st := *t.base
				st.Messages = slices.Clone(t.base.Messages)
				if err := s.Save(ctx, "bench", &st, "", Bounds{}); err != nil {
					b.Fatal(err)
				}
				t.st = &st
			}
			for _, t := range ts {
				reset(t)
			}
			const roundsPerReset = 5
			r := 0
			b.ResetTimer()
			for b.Loop() {
				if r > 0 && r%roundsPerReset == 0 {
					b.StopTimer()
					for _, t := range ts {
						reset(t)
					}
					b.StartTimer()
				}
				for _, t := range ts {
					t.st.Messages = append(t.st.Messages, toolRound(1000+r)...)
					if whole {
						t.st.Stored = nil // the store then writes the thread whole
					}
					start := time.Now()
					if err := s.Save(ctx, "bench", t.st, "", Bounds{}); err != nil {
						b.Fatal(err)
					}
					t.lat = append(t.lat, time.Since(start))
				}
				r++
			}
			b.StopTimer()
			short, long := percentile(ts[0].lat, 0.5), percentile(ts[1].lat, 0.5)
			b.ReportMetric(micros(short), "p50-20msg-µs")
			b.ReportMetric(micros(long), "p50-2000msg-µs")
			b.ReportMetric(micros(percentile(ts[1].lat, 0.99)), "p99-2000msg-µs")
			b.ReportMetric(float64(long)/float64(short), "ratio-2000/20")
		})
	}
}

// percentile is the p-th latency of lat, which it sorts.
func percentile(lat []time.Duration, p float64) time.Duration {
	slices.Sort(lat)
	return lat[int(p*float64(len(lat)-1))]
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// BenchmarkRedisSaveLoad200 measures one Save and one Get of a 200-message
// thread on a real redis-server over loopback (target p50 ≤ 0.5 ms): the
// save of a loaded state, which appends to what is stored, and as the
// baseline in the same run the same save written whole, as every save was
// before threads were stored in two parts.
func BenchmarkRedisSaveLoad200(b *testing.B) {
	for _, whole := range []bool{false, true} {
		name := "append"
		if whole {
			name = "whole"
		}
		b.Run(name, func(b *testing.B) {
			s := NewRedisStore(newRedis(b))
			ctx := context.Background()
			st := thread200()
			if err := s.Save(ctx, "bench", st, "", Bounds{}); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				if whole {
					st.Stored = nil
				}
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
			b.ReportMetric(micros(percentile(lat, 0.50)), "p50-µs")
			b.ReportMetric(micros(percentile(lat, 0.99)), "p99-µs")
		})
	}
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

// BenchmarkUnchangedCheck2000 measures how a save tells that a 2,000-message
// thread still begins with the messages its store holds: the check every
// save runs before it may append.
func BenchmarkUnchangedCheck2000(b *testing.B) {
	st := threadOf("check", 2000)
	noteLoaded(st, "g_bench", 1, true)
	for b.Loop() {
		if base(st, st.Version) == nil {
			b.Fatal("an unchanged history was seen as changed")
		}
	}
}
