package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/gateway"
)

// The benchmark's load: 1,000 concurrent SSE streams, each 50 tokens 20 ms
// apart, a chat UI's streaming at a busy hour's concurrency.
const (
	benchStreams  = 1000
	benchTokens   = 50
	benchInterval = 20 * time.Millisecond
)

// BenchmarkSSEStreams runs 1,000 concurrent SSE streams through the gateway
// from a fake agent service that emits 50 tokens 20 ms apart, each stamped
// with its send time. The delay of an event is its arrival at the SSE client
// less its send time at the agent service: the gRPC hop, grpc-gateway, the
// SSE marshaler and the HTTP hop. Client, gateway and fake agent share this
// one process, so the peak RSS is theirs together.
func BenchmarkSSEStreams(b *testing.B) {
	// Client, services and streams share this process: 3 descriptors a stream.
	testenv.RaiseFDLimit(b, 3*benchStreams)
	env := startGateway(b, gateway.Config{})
	for _, n := range []int{100, benchStreams} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) { benchStreamsN(b, env, n) })
	}
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchStreamsN(b *testing.B, env *testEnv, benchStreams int) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchStreams}}
	defer client.CloseIdleConnections()
	body := fmt.Sprintf(`{"messages":[{"role":"user","content":"paced %d %s"}]}`, benchTokens, benchInterval)
	var delays []time.Duration
	var mu sync.Mutex
	cpu0, wall0 := cpuTime(), time.Now()
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, benchStreams)
		for range benchStreams {
			wg.Go(func() {
				d, err := oneStream(b.Context(), client, env.url, body)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				delays = append(delays, d...)
				mu.Unlock()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// CPU seconds per wall second: near 2 means both cores were this process's.
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(cpu)/float64(time.Since(wall0)), "cpu-cores")
	// The process's CPU per token event: the gateway's, and the fake agent
	// service's and the SSE clients' in the same process.
	b.ReportMetric(float64(cpu.Nanoseconds())/1000/float64(len(delays)), "process-cpu-µs/event")
	if len(delays) != b.N*benchStreams*benchTokens {
		b.Fatalf("got %d token events, want %d", len(delays), b.N*benchStreams*benchTokens)
	}
	slices.Sort(delays)
	pct := func(p float64) float64 {
		return float64(delays[int(p*float64(len(delays)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(delays[len(delays)-1].Microseconds())/1000, "max-ms")
	if hwm, err := testenv.PeakRSS(); err == nil {
		b.ReportMetric(float64(hwm)/(1<<20), "peak-RSS-MB")
	}
	b.ReportMetric(float64(benchStreams), "streams")
}

func oneStream(ctx context.Context, client *http.Client, base, body string) ([]time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/agents/a1-alice/stream", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	sr := newSSEReader(resp.Body)
	var delays []time.Duration
	for {
		ev, err := sr.Next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("stream ended without done")
		}
		if err != nil {
			return nil, err
		}
		now := time.Now()
		switch ev.Event {
		case "done":
			return delays, nil
		case "error":
			return nil, fmt.Errorf("error event: %s", ev.Data)
		case "on_chat_model_stream":
			// The fake agent sends its send time as the event's name.
			var d struct {
				SentNS string `json:"name"`
			}
			if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
				return nil, err
			}
			ns, err := strconv.ParseInt(d.SentNS, 10, 64)
			if err != nil {
				return nil, err
			}
			delays = append(delays, now.Sub(time.Unix(0, ns)))
		}
	}
}
