package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/wickserver/suite"
)

// The benchmark: 1,000 concurrent SSE streams, each a scripted
// reply of 50 tokens 20 ms apart (script file bench50).
const (
	benchStreams  = 1000
	benchTokens   = 50
	benchInterval = 20 * time.Millisecond
)

type streamTiming struct {
	firstEvent time.Duration   // request sent → first SSE frame
	lags       []time.Duration // token i's arrival − (token 0's arrival + i × interval)
}

// BenchmarkSuiteSSEStreams runs 1,000 concurrent SSE streams through the
// whole suite in this one process: gateway → agent → LLM gateway (scripted
// provider, 50 tokens 20 ms apart). The added delay of token i is its
// arrival at the client less its place on the provider's schedule (token
// 0's arrival + i × 20 ms): what every hop and the load add. Peak memory is
// the RSS high-water mark of the one process that holds all four services
// and the 1,000 clients.
func BenchmarkSuiteSSEStreams(b *testing.B) {
	// Client, services and streams share this process: 4 descriptors a stream.
	testenv.RaiseFDLimit(b, 4*benchStreams)
	env := startWick(b, func(c *suite.Config) {
		c.Model = "script:bench50"
		// One user runs every stream, each on a thread of its own: far
		// beyond the per-user limits, which are not what this measures.
		c.AgentOptions = append(c.AgentOptions, agent.WithLimits(agent.Limits{}))
	})
	if r := call(b, "POST", env.url+"/agents", aliceToken, jsonBody(map[string]any{"agent_id": "bench", "model": "script:bench50"})); r.code != 200 {
		b.Fatalf("create the bench agent: %d %s", r.code, r)
	}
	for _, n := range []int{100, benchStreams} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) { benchSuiteStreams(b, env, n) })
	}
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchSuiteStreams(b *testing.B, env *wickEnv, benchStreams int) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchStreams}}
	defer client.CloseIdleConnections()
	var (
		mu      sync.Mutex
		lags    []time.Duration
		firsts  []time.Duration
		streams int
	)
	cpu0, wall0 := cpuTime(), time.Now()
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, benchStreams)
		for range benchStreams {
			wg.Go(func() {
				st, err := benchStream(b.Context(), client, env.url)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				lags = append(lags, st.lags...)
				firsts = append(firsts, st.firstEvent)
				streams++
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
	// CPU seconds per wall second: near 2 means the two cores were this
	// process's; well below means other processes took them.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Since(wall0)), "cpu-cores")
	if len(lags) != streams*(benchTokens-1) {
		b.Fatalf("got %d token lags from %d streams, want %d", len(lags), streams, streams*(benchTokens-1))
	}
	slices.Sort(lags)
	slices.Sort(firsts)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lags[len(lags)/2]), "p50-delay-ms")
	b.ReportMetric(ms(lags[len(lags)*99/100]), "p99-delay-ms")
	b.ReportMetric(ms(firsts[len(firsts)*99/100]), "p99-first-event-ms")
	if hwm, err := testenv.PeakRSS(); err == nil {
		b.ReportMetric(float64(hwm)/(1<<20), "peak-RSS-MB")
	}
	b.ReportMetric(float64(streams)/float64(b.N), "streams")
}

func benchStream(ctx context.Context, client *http.Client, base string) (streamTiming, error) {
	var st streamTiming
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/agents/bench/stream", strings.NewReader(`{"messages":[{"role":"user","content":"go"}]}`))
	if err != nil {
		return st, err
	}
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("Accept", "text/event-stream")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return st, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	es := newEventStream(resp.Body)
	var first time.Time
	tokens := 0
	for {
		ev, err := es.next()
		if err != nil {
			return st, fmt.Errorf("after %d tokens: %w", tokens, err)
		}
		now := time.Now()
		if st.firstEvent == 0 {
			st.firstEvent = now.Sub(start)
		}
		switch ev.Event {
		case "on_chat_model_stream":
			if tokens == 0 {
				first = now
			} else {
				st.lags = append(st.lags, now.Sub(first)-time.Duration(tokens)*benchInterval)
			}
			tokens++
		case "error":
			return st, fmt.Errorf("error event: %s", ev.Data)
		case "done":
			if tokens != benchTokens {
				return st, fmt.Errorf("%d tokens, want %d", tokens, benchTokens)
			}
			return st, nil
		}
	}
}
