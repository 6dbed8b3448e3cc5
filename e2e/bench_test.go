package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/wick-agent/wick/platform/diag"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/services/llmgw"
	"github.com/wick-agent/wick/services/sandbox"
	"github.com/wick-agent/wick/wickserver/suite"
)

// The benchmark's load: concurrent SSE streams, each a scripted reply of
// 50 tokens 20 ms apart (script file bench50).
const (
	benchTokens   = 50
	benchInterval = 20 * time.Millisecond
	// benchIdleStreams is how many idle streams the memory figure opens.
	benchIdleStreams = 1000
)

// Environment of the benchmark.
const (
	// benchChildEnv makes the test binary serve the suite instead of
	// running tests (see TestMain): the benchmark's server process.
	benchChildEnv = "WICK_BENCH_SUITE_CHILD"
	// benchStreamsEnv adds a run with that many streams (e.g. 3000) to the
	// 100 and 1,000 of every run.
	benchStreamsEnv = "WICK_BENCH_STREAMS"
	// benchProfileEnv names a directory where the benchmark writes the
	// server's CPU profile of the first 1,000-stream run, its allocation
	// profile after it, and its heap and goroutine profiles with the idle
	// streams open.
	benchProfileEnv = "WICK_BENCH_PROFILE_DIR"
	// benchLoopbackEnv has the child's services call each other over their
	// loopback gRPC ports (suite.Config.Loopback).
	benchLoopbackEnv = "WICK_BENCH_LOOPBACK"
	// benchNoMergeEnv turns merging of a slow client's deltas off.
	benchNoMergeEnv = "WICK_BENCH_NO_MERGE"
	// benchNoMetricsEnv gives the child's services a no-op meter provider,
	// as before they exported their instruments: the baseline of what the
	// instruments cost per event.
	benchNoMetricsEnv = "WICK_BENCH_NO_METRICS"
)

// BenchmarkSuiteSSEStreams runs concurrent SSE streams through the whole
// suite: gateway → agent → LLM gateway (scripted provider, 50 tokens 20 ms
// apart), each stream a new run on a new thread. The suite runs in a child
// process (this test binary, see serveBenchChild) so that its CPU time and
// memory, read from /proc/<pid>, leave out the load client's.
//
// Figures: the added delay of token i is its arrival at the client less
// its place on the provider's schedule (token 0's arrival + i × 20 ms);
// cpu-µs/event is the server's CPU time over the SSE events the clients
// received (cpu-µs/token over the model's tokens); idle=1000 reports the
// server's live heap and stacks (live-KB/stream) and RSS growth per open
// stream waiting for its model's first token. Sub-benchmarks /loopback and
// /nomerge turn one switch off each (docs/performance.md); /floor measures
// a bare net/http server sending the same frames, the floor under the
// suite's figures on this machine.
func BenchmarkSuiteSSEStreams(b *testing.B) {
	counts := []int{100, 1000}
	if v := os.Getenv(benchStreamsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want a number of streams", benchStreamsEnv, v)
		}
		counts = append(counts, n)
	}
	most := slices.Max(counts)
	testenv.RaiseFDLimit(b, uint64(2*most+100))
	// The suite as `wick` runs it, then each switch turned off alone, at
	// 1,000 streams.
	variants := []struct {
		name   string
		env    string
		counts []int
	}{
		{"inproc", "", counts},
		{"loopback", benchLoopbackEnv + "=1", []int{1000}},
		{"nomerge", benchNoMergeEnv + "=1", []int{1000}},
		// Not Wick: the same frames from a bare net/http server
		// (floor_test.go), the floor under the figures above.
		{"floor", benchFloorEnv + "=1", counts},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			srv := startBenchChild(b, v.env)
			for id, model := range map[string]string{"bench": "script:bench50", "idle": "script:idle"} {
				if r := call(b, "POST", srv.url+"/agents", aliceToken, jsonBody(map[string]any{"agent_id": id, "model": model})); r.code != 200 {
					b.Fatalf("create agent %s: %d %s", id, r.code, r)
				}
			}
			if v.name == "inproc" || v.name == "floor" {
				// First, on a fresh process: memory of open idle streams.
				b.Run(fmt.Sprintf("idle=%d", benchIdleStreams), func(b *testing.B) { benchIdle(b, srv, benchIdleStreams) })
			}
			for _, n := range v.counts {
				b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) { benchSuiteStreams(b, srv, n) })
			}
		})
	}
}

// benchServer is the suite's child process.
type benchServer struct {
	url, pprof string
	pid        int
}

// procStat is a process's CPU time (user + system) and memory.
type procStat struct {
	cpu      time.Duration
	rss, hwm int64
}

// stat reads the child's /proc entries.
func (s *benchServer) stat(b *testing.B) procStat {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which is in parentheses: state is the
	// first, utime and stime the 12th and 13th.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const clkTck = 100 // USER_HZ on Linux
	st := procStat{cpu: time.Duration(utime+stime) * time.Second / clkTck}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		switch k {
		case "VmRSS":
			st.rss = kb << 10
		case "VmHWM":
			st.hwm = kb << 10
		}
	}
	return st
}

// live is the server's heap in use and goroutine stacks right after a
// collection (pprof's heap profile with gc=1 runs one and reports
// runtime.MemStats).
func (s *benchServer) live(b *testing.B) (heap, stacks int64) {
	b.Helper()
	resp, err := http.Get("http://" + s.pprof + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapInuse = "); ok {
			heap, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "# Stack = "); ok {
			// "# Stack = <StackInuse> / <StackSys>"
			inuse, _, _ := strings.Cut(v, " / ")
			stacks, _ = strconv.ParseInt(strings.TrimSpace(inuse), 10, 64)
		}
	}
	if heap == 0 || stacks == 0 {
		b.Fatalf("no HeapInuse or Stack in the heap profile's statistics:\n%s", body)
	}
	return heap, stacks
}

// startBenchChild starts this test binary as the suite's server and waits
// for its address; the child stops when its standard input closes.
func startBenchChild(b *testing.B, env string) *benchServer {
	b.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), benchChildEnv+"=1")
	if env != "" {
		cmd.Env = append(cmd.Env, env)
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("the suite's child process: %v", err)
	}
	url, pprof, _ := strings.Cut(strings.TrimSpace(line), " ")
	return &benchServer{url: url, pprof: pprof, pid: cmd.Process.Pid}
}

// serveBenchChild is the child process of BenchmarkSuiteSSEStreams: the
// suite as startWick configures it, the scripted bench models, no per-user
// limits (one user runs every stream), and pprof on a loopback port. It
// prints "<url> <pprof address>" and serves until its standard input closes.
func serveBenchChild() int {
	if os.Getenv(benchFloorEnv) != "" {
		return serveFloor()
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	dir, err := os.MkdirTemp("", "wkb")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer sandbox.RemoveStateDir(dir)
	llmCfg := llmgw.DefaultConfig()
	llmCfg.ScriptDir = filepath.Join(dir, "scripts")
	if err := os.Mkdir(llmCfg.ScriptDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := writeScriptFiles(llmCfg.ScriptDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := suiteConfig(&llmCfg, dir)
	cfg.Model = "script:bench50"
	cfg.AgentOptions = append(cfg.AgentOptions, agent.WithLimits(agent.Limits{}), agent.WithMerging(os.Getenv(benchNoMergeEnv) == ""))
	cfg.Loopback = os.Getenv(benchLoopbackEnv) != ""
	if os.Getenv(benchNoMetricsEnv) != "" {
		cfg.MeterProvider = noop.NewMeterProvider()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := suite.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the suite:", err)
		return 1
	}
	d, err := diag.Start(diag.Flags{PprofAddr: "127.0.0.1:0"}, nil, quietLogger())
	if err != nil {
		fmt.Fprintln(os.Stderr, "pprof:", err)
		return 1
	}
	defer d.Close(context.Background())
	fmt.Printf("%s %s\n", s.HTTPURL, d.PprofAddr)
	_, _ = io.Copy(io.Discard, os.Stdin)
	cancel()
	_ = s.Wait()
	return 0
}

// benchIdle opens n streams whose model waits a minute before its first
// token, and reports the server's RSS growth per stream once every stream
// has its first event (the run's start).
func benchIdle(b *testing.B, srv *benchServer, n int) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	first := true
	for b.Loop() {
		before := srv.stat(b)
		heapBefore, stacksBefore := srv.live(b)
		ctx, cancel := context.WithCancel(b.Context())
		var ready, closed sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			ready.Add(1)
			closed.Go(func() {
				resp, err := openStream(ctx, client, srv.url, "idle", benchBody)
				if err != nil {
					errs <- err
					ready.Done()
					return
				}
				defer resp.Body.Close()
				_, err = newEventStream(resp.Body).next()
				if err != nil {
					errs <- err
				}
				ready.Done()
				<-ctx.Done()
			})
		}
		ready.Wait()
		open := srv.stat(b)
		heapOpen, stacksOpen := srv.live(b)
		if dir := os.Getenv(benchProfileEnv); dir != "" && first {
			srv.saveProfile(b, "heap", filepath.Join(dir, "idle-heap.pprof"))
			srv.saveProfile(b, "goroutine", filepath.Join(dir, "idle-goroutine.pprof"))
		}
		cancel()
		closed.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		if first {
			// RSS counts the heap's room to grow as well (GOGC): the live
			// heap and stacks after a collection are what a stream holds.
			b.ReportMetric(float64(heapOpen+stacksOpen-heapBefore-stacksBefore)/float64(n)/1024, "live-KB/stream")
			b.ReportMetric(float64(stacksOpen-stacksBefore)/float64(n)/1024, "stacks-KB/stream")
			// Later rounds reuse the memory the first one grew.
			b.ReportMetric(float64(open.rss-before.rss)/float64(n)/1024, "RSS-KB/stream")
			b.ReportMetric(float64(open.rss)/(1<<20), "RSS-MB")
			first = false
		}
	}
}

// benchBody is the message of every benchmark stream.
const benchBody = `{"messages":[{"role":"user","content":"go"}]}`

// openStream starts a run of agentID streamed as SSE, as alice.
func openStream(ctx context.Context, client *http.Client, base, agentID, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/agents/"+agentID+"/stream", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	return resp, nil
}

// streamTiming is what one stream's client saw.
type streamTiming struct {
	firstEvent time.Duration   // request sent → first SSE frame
	lags       []time.Duration // token i's arrival − (token 0's arrival + i × interval)
	events     int             // SSE events received
	merged     int             // on_chat_model_stream events holding more than one token
}

func benchSuiteStreams(b *testing.B, srv *benchServer, n int) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	var (
		mu                      sync.Mutex
		lags, firsts            []time.Duration
		streams, events, merged int
	)
	// Profiles of the suite as wick runs it, and of the floor (prefixed).
	profile, prefix := os.Getenv(benchProfileEnv), ""
	switch {
	case n != 1000:
		profile = ""
	case strings.Contains(b.Name(), "/floor/"):
		prefix = "floor-"
	case !strings.Contains(b.Name(), "/inproc/"):
		profile = ""
	}
	st0, wall0 := srv.stat(b), time.Now()
	for b.Loop() {
		stopProfile := func() {}
		if profile != "" {
			stopProfile = srv.startCPUProfile(b, filepath.Join(profile, prefix+"cpu.pprof"))
		}
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				st, err := benchStream(b.Context(), client, srv.url)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				lags = append(lags, st.lags...)
				firsts = append(firsts, st.firstEvent)
				streams++
				events += st.events
				merged += st.merged
				mu.Unlock()
			})
		}
		wg.Wait()
		stopProfile()
		if profile != "" {
			srv.saveProfile(b, "allocs", filepath.Join(profile, prefix+"allocs.pprof"))
			profile = ""
		}
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st1, wall := srv.stat(b), time.Since(wall0)
	if len(lags) != streams*(benchTokens-1) {
		b.Fatalf("got %d token lags from %d streams, want %d", len(lags), streams, streams*(benchTokens-1))
	}
	// CPU seconds per wall second: near 2 means the two cores were the
	// server's; well below means the client or other processes took them.
	b.ReportMetric(float64(st1.cpu-st0.cpu)/float64(wall), "server-cores")
	b.ReportMetric(float64((st1.cpu-st0.cpu).Nanoseconds())/1000/float64(events), "cpu-µs/event")
	b.ReportMetric(float64((st1.cpu-st0.cpu).Nanoseconds())/1000/float64(streams*benchTokens), "cpu-µs/token")
	slices.Sort(lags)
	slices.Sort(firsts)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lags[len(lags)/2]), "p50-delay-ms")
	b.ReportMetric(ms(lags[len(lags)*99/100]), "p99-delay-ms")
	b.ReportMetric(ms(firsts[len(firsts)*99/100]), "p99-first-event-ms")
	b.ReportMetric(float64(st1.hwm)/(1<<20), "server-peak-RSS-MB")
	b.ReportMetric(float64(events)/float64(b.N), "events")
	b.ReportMetric(float64(merged)/float64(b.N), "merged-events")
	b.ReportMetric(float64(streams)/float64(b.N), "streams")
}

// startCPUProfile starts a 2-second CPU profile of the server (a
// 1,000-stream run lasts longer); the function it returns waits for it and
// writes it to path.
func (s *benchServer) startCPUProfile(b *testing.B, path string) func() {
	b.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.fetchProfile(b.Context(), b, "profile?seconds=2", path)
	}()
	return func() { <-done }
}

func (s *benchServer) saveProfile(b *testing.B, name, path string) {
	b.Helper()
	s.fetchProfile(b.Context(), b, name, path)
}

func (s *benchServer) fetchProfile(ctx context.Context, b *testing.B, name, path string) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+s.pprof+"/debug/pprof/"+name, nil)
	if err != nil {
		b.Error(err)
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Logf("profile %s: %v", name, err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if len(body) == 0 {
		b.Logf("profile %s: empty", name)
		return
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		b.Error(err)
	}
}

// benchStream runs one stream and times its tokens. Its SSE reader is
// leaner than the tests' (one buffer, no JSON decoding: each "token" in a
// delta is a token) so that the load client, on the same cores, takes as
// little as it can from the server it measures.
func benchStream(ctx context.Context, client *http.Client, base string) (streamTiming, error) {
	var st streamTiming
	start := time.Now()
	resp, err := openStream(ctx, client, base, "bench", benchBody)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 4096)
	var first time.Time
	tokens := 0
	event := ""
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return st, fmt.Errorf("after %d tokens: %w", tokens, err)
		}
		switch {
		case bytes.HasPrefix(line, []byte("event: ")):
			event = string(bytes.TrimSpace(line[len("event: "):]))
			continue
		case !bytes.HasPrefix(line, []byte("data: ")):
			continue
		}
		now := time.Now()
		st.events++
		if st.firstEvent == 0 {
			st.firstEvent = now.Sub(start)
		}
		switch event {
		case "on_chat_model_stream":
			// A client that fell behind gets adjacent deltas merged: each
			// token in the event arrived now.
			k := bytes.Count(line, []byte("token"))
			if k > 1 {
				st.merged++
			}
			for range k {
				if tokens == 0 {
					first = now
				} else {
					st.lags = append(st.lags, now.Sub(first)-time.Duration(tokens)*benchInterval)
				}
				tokens++
			}
		case "error":
			return st, fmt.Errorf("error event: %s", line)
		case "done":
			if tokens != benchTokens {
				return st, fmt.Errorf("%d tokens, want %d", tokens, benchTokens)
			}
			return st, nil
		}
	}
}
