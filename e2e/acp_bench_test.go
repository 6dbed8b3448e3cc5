package e2e

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkACPTurn: one message to an agent backed by the ACP test agent,
// through the whole suite (the gateway's REST and SSE, a local sandbox):
// the agent's process started in the sandbox through the process API,
// initialize, session/load of the thread's session (replaying the
// thread's history), the prompt and its streamed answer, the thread saved.
// What a turn of an ACP agent costs beyond the agent's own thinking, which
// the test agent does not do.
func BenchmarkACPTurn(b *testing.B) {
	env := startWick(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	a := createACPAgent(b, env, ctx, buildACPAgent(b), "bench", map[string]any{"type": "local"}, "autonomous", nil)
	if run := a.send("hello"); run.events[len(run.events)-1].GetEvent() != "done" {
		b.Fatalf("first turn: %v", run.names())
	}
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		run := a.send("echo one more turn")
		lat = append(lat, time.Since(start))
		if last := run.events[len(run.events)-1]; last.GetEvent() != "done" {
			b.Fatalf("turn ended with %v", run.names())
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
