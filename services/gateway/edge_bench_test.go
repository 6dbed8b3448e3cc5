package gateway_test

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/identity"
)

// benchEvents is the length of each stream of BenchmarkGRPCEdge/stream.
const benchEvents = 500

// BenchmarkGRPCEdge measures what the gRPC edge adds to a call of the
// agent service (a fake one, on its own loopback server) over calling the
// service directly as the suite's processes do, in the same run: each
// iteration makes the same call both ways.
//
//   - unary: GetAgent; p50 of each way and their difference (added-p50-µs).
//   - stream: a Stream of 500 events; the process's CPU time per event each
//     way and their difference (added-cpu-µs/event). Client, edge and
//     service share this process, so the difference is the edge's cost.
func BenchmarkGRPCEdge(b *testing.B) {
	env := startEdge(b)
	edge := env.client(b)
	if _, err := edge.CreateAgent(bearer(b.Context(), aliceToken), &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "bench"}}); err != nil {
		b.Fatal(err)
	}
	viaEdge := bearer(b.Context(), aliceToken)
	direct := identity.WithUser(b.Context(), "alice")

	b.Run("unary", func(b *testing.B) {
		req := &agentv1.GetAgentRequest{AgentId: "bench"}
		var d, e []time.Duration
		for b.Loop() {
			t0 := time.Now()
			if _, err := env.direct.GetAgent(direct, req); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if _, err := edge.GetAgent(viaEdge, req); err != nil {
				b.Fatal(err)
			}
			d, e = append(d, t1.Sub(t0)), append(e, time.Since(t1))
		}
		pd, pe := percentile(d, 50), percentile(e, 50)
		b.ReportMetric(micros(pd), "direct-p50-µs")
		b.ReportMetric(micros(pe), "edge-p50-µs")
		b.ReportMetric(micros(pe-pd), "added-p50-µs")
		b.ReportMetric(micros(percentile(e, 99)-percentile(d, 99)), "added-p99-µs")
	})

	b.Run("stream", func(b *testing.B) {
		req := &agentv1.StreamRequest{AgentId: "bench", Messages: []*agentv1.Message{{Role: "user", Content: fmt.Sprintf("tokens %d", benchEvents-2)}}}
		var cpuDirect, cpuEdge time.Duration
		var events int
		for b.Loop() {
			c0 := cpuTime()
			n, err := drain(env.direct.Stream(direct, req))
			if err != nil {
				b.Fatal(err)
			}
			c1 := cpuTime()
			m, err := drain(edge.Stream(viaEdge, req))
			if err != nil {
				b.Fatal(err)
			}
			c2 := cpuTime()
			if n != benchEvents || m != benchEvents {
				b.Fatalf("%d events direct, %d through the edge, want %d", n, m, benchEvents)
			}
			cpuDirect += c1 - c0
			cpuEdge += c2 - c1
			events += benchEvents
		}
		b.ReportMetric(micros(cpuDirect)/float64(events), "direct-cpu-µs/event")
		b.ReportMetric(micros(cpuEdge)/float64(events), "edge-cpu-µs/event")
		b.ReportMetric(micros(cpuEdge-cpuDirect)/float64(events), "added-cpu-µs/event")
	})
}

// drain reads a stream to its end and counts its messages.
func drain(st interface {
	Recv() (*agentv1.StreamResponse, error)
}, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		_, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
