package llmgw_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/llmgw"
	"github.com/wick-agent/wick/services/llmgw/internal/fakellm"
	"github.com/wick-agent/wick/services/llmgw/internal/openai"
	"github.com/wick-agent/wick/services/llmgw/internal/script"
)

// benchLatency is the fake provider's fixed latency before it answers.
const benchLatency = 2 * time.Millisecond

// shortStream is a small reply, so that the benchmark measures the gateway
// rather than JSON decoding of a long answer (which both paths share).
var shortStream = []byte(
	`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":" there!"},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}` + "\n\n" +
		"data: [DONE]\n\n")

type benchEnv struct {
	addr    string
	key     *identity.Key
	conn    *grpc.ClientConn
	client  llmv1.LLMServiceClient
	direct  *openai.Provider
	fakeURL string
}

// newBenchEnv starts the fake provider and the gateway on the suite's real
// gRPC server (otel stats handler, interceptors) over loopback TCP.
func newBenchEnv(b *testing.B) benchEnv {
	b.Helper()
	// The binary runs with this GC setting (cmd/wick-llmgw); so does the benchmark.
	old := debug.SetGCPercent(llmgw.RecommendedGCPercent)
	b.Cleanup(func() { debug.SetGCPercent(old) })
	// The handler is used bare (not through fakellm.Server) so that the fake
	// does not record requests and spends as little CPU as it can.
	fakeSrv := httptest.NewServer(fakellm.SSEAfter(benchLatency, shortStream))
	b.Cleanup(fakeSrv.Close)
	cfg := config(openaiModel("fake", fakeSrv.URL))
	svc, err := llmgw.New(cfg, llmgw.WithLookupEnv(func(k string) (string, bool) { v, ok := keys[k]; return v, ok }))
	if err != nil {
		b.Fatal(err)
	}
	key := identity.RandomKey()
	addr := serveGRPC(b, svc, key)
	env := benchEnv{
		addr:    addr,
		key:     key,
		direct:  openai.New(llmgw.NewHTTPClient(), fakeSrv.URL+"/v1", testKey),
		fakeURL: fakeSrv.URL,
	}
	env.conn = env.dialConn(b)
	env.client = llmv1.NewLLMServiceClient(env.conn)
	return env
}

// benchClients is the number of client connections of the throughput benchmark.
const benchClients = 4

func (e benchEnv) dial(b *testing.B) llmv1.LLMServiceClient {
	return llmv1.NewLLMServiceClient(e.dialConn(b))
}

// dialConn dials the gateway signing every call, as the agent service does.
func (e benchEnv) dialConn(b *testing.B) *grpc.ClientConn {
	b.Helper()
	return dialGRPC(b, e.addr, signedAs(e.key, testUser)...)
}

var benchMsgs = []*llmv1.Message{{Role: "user", Content: "Say hello."}}

func benchDirect(b *testing.B, p *openai.Provider) (total, ttft time.Duration) {
	start := time.Now()
	first := time.Duration(0)
	_, err := p.Stream(context.Background(), llm.Request{Model: "gpt-4o", Messages: []llm.Message{{Role: "user", Content: "Say hello."}}}, func(ev llm.Event) error {
		if first == 0 {
			first = time.Since(start)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return time.Since(start), first
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// BenchmarkUnaryAddedLatency measures a unary Call through the gateway
// against a direct SDK call to the same fake provider, interleaved in the
// same run; the difference of the percentiles is the added latency.
func BenchmarkUnaryAddedLatency(b *testing.B) {
	env := newBenchEnv(b)
	req := &llmv1.CallRequest{Models: models("fake"), Messages: benchMsgs}
	for range 50 { // warm connections on both paths
		benchDirect(b, env.direct)
		if _, err := env.client.Call(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	health := healthpb.NewHealthClient(env.conn)
	var direct, gw, overhead, hop []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, _ := benchDirect(b, env.direct)
		direct = append(direct, d)
		// A health check on the same connection is the bare cost of one
		// gRPC round trip through the same server, for comparison.
		hs := time.Now()
		if _, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
			b.Fatal(err)
		}
		hop = append(hop, time.Since(hs))
		var tr metadata.MD
		start := time.Now()
		if _, err := env.client.Call(context.Background(), req, grpc.Trailer(&tr)); err != nil {
			b.Fatal(err)
		}
		gw = append(gw, time.Since(start))
		if v := tr.Get(llmgw.TrailerOverheadUS); len(v) == 1 {
			n, _ := strconv.Atoi(v[0])
			overhead = append(overhead, time.Duration(n)*time.Microsecond)
		}
	}
	b.StopTimer()
	b.ReportMetric(us(percentile(direct, 0.5)), "direct-p50-µs")
	b.ReportMetric(us(percentile(gw, 0.5)), "gateway-p50-µs")
	b.ReportMetric(us(percentile(gw, 0.5)-percentile(direct, 0.5)), "added-p50-µs")
	b.ReportMetric(us(percentile(gw, 0.99)-percentile(direct, 0.99)), "added-p99-µs")
	b.ReportMetric(us(percentile(overhead, 0.5)), "trailer-overhead-p50-µs")
	b.ReportMetric(us(percentile(hop, 0.5)), "grpc-roundtrip-p50-µs")
}

// BenchmarkStreamTTFTOverhead measures time to the first token through the
// gateway's Stream against the direct SDK stream.
func BenchmarkStreamTTFTOverhead(b *testing.B) {
	env := newBenchEnv(b)
	req := &llmv1.StreamRequest{Models: models("fake"), Messages: benchMsgs}
	gwTTFT := func() time.Duration {
		start := time.Now()
		st, err := env.client.Stream(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		var first time.Duration
		for {
			m, err := st.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if first == 0 && m.GetDelta() != "" {
				first = time.Since(start)
			}
		}
		return first
	}
	for range 50 {
		benchDirect(b, env.direct)
		gwTTFT()
	}
	var direct, gw []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, d := benchDirect(b, env.direct)
		direct = append(direct, d)
		gw = append(gw, gwTTFT())
	}
	b.StopTimer()
	b.ReportMetric(us(percentile(direct, 0.5)), "direct-ttft-p50-µs")
	b.ReportMetric(us(percentile(gw, 0.5)), "gateway-ttft-p50-µs")
	b.ReportMetric(us(percentile(gw, 0.5)-percentile(direct, 0.5)), "ttft-overhead-p50-µs")
	b.ReportMetric(us(percentile(gw, 0.99)-percentile(direct, 0.99)), "ttft-overhead-p99-µs")
}

// BenchmarkThroughput runs many concurrent unary Calls through the gateway
// (fake provider, client and gateway all in this process on the same cores)
// and reports requests per second; any error fails the benchmark.
func BenchmarkThroughput(b *testing.B) {
	env := newBenchEnv(b)
	req := &llmv1.CallRequest{Models: models("fake"), Messages: benchMsgs}
	// Several agent replicas call one gateway: each client connection is
	// one HTTP/2 connection, as a replica's would be.
	clients := []llmv1.LLMServiceClient{env.client}
	for range benchClients - 1 {
		clients = append(clients, env.dial(b))
	}
	var errs atomic.Int64
	var next atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	cpu0 := cpuTime(b)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		c := clients[int(next.Add(1))%len(clients)]
		for pb.Next() {
			if _, err := c.Call(context.Background(), req); err != nil {
				errs.Add(1)
			}
		}
	})
	elapsed := time.Since(start)
	cpu := cpuTime(b) - cpu0
	b.StopTimer()
	if n := errs.Load(); n > 0 {
		b.Fatalf("%d of %d calls failed", n, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(0, "errors")
	// CPU per request of the whole process (client, gateway and fake
	// provider): what bounds throughput when the cores are not shared with
	// other work; 2 cores / this = requests per second on an idle 2-core box.
	perReq := cpu / time.Duration(b.N)
	b.ReportMetric(us(perReq), "cpu-µs/req")
	b.ReportMetric(2*float64(time.Second)/float64(perReq), "req/s-at-2-idle-cores")
}

// cpuTime is the CPU time (user + system) the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchTokens is the length of the scripted reply of the HTTP streaming
// benchmark: long enough that per-token costs dominate per-request ones.
const benchTokens = 200

// BenchmarkHTTPStreamPerToken measures a streamed reply of the scripted
// model (no delay) through each HTTP model API, client and server on
// loopback in this process, against the same reply taken from the provider
// directly: the wall time and the process's CPU per token the API adds.
func BenchmarkHTTPStreamPerToken(b *testing.B) {
	words := strings.Repeat("token ", benchTokens)
	model := `script:[{"text":"` + strings.TrimSpace(words) + `"}]`
	svc, err := llmgw.New(config())
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(svc.HTTPHandler())
	b.Cleanup(srv.Close)
	direct := script.New(&script.Script{Turns: []script.Turn{{Text: strings.TrimSpace(words)}}}, 0)
	user := `[{"role":"user","content":"Say it."}]`
	apis := []struct {
		name, path, body string
	}{
		{"chat-completions", "/v1/chat/completions", `{"model":` + strconv.Quote(model) + `,"stream":true,"messages":` + user + `}`},
		{"messages", "/v1/messages", `{"model":` + strconv.Quote(model) + `,"max_tokens":1024,"stream":true,"messages":` + user + `}`},
	}
	// The reply from the provider itself, without HTTP, JSON or SSE.
	directPerToken := func() (wall, cpu time.Duration) {
		const n = 200
		c0, t0 := cpuTime(b), time.Now()
		for range n {
			if _, err := direct.Stream(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "Say it."}}}, func(llm.Event) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t0) / (n * benchTokens), (cpuTime(b) - c0) / (n * benchTokens)
	}
	for _, api := range apis {
		b.Run(api.name, func(b *testing.B) {
			call := func() {
				resp, err := http.Post(srv.URL+api.path, "application/json", strings.NewReader(api.body))
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || n < benchTokens*10 {
					b.Fatalf("= %d, %d bytes, %v", resp.StatusCode, n, err)
				}
			}
			for range 20 {
				call()
			}
			dWall, dCPU := directPerToken()
			b.ResetTimer()
			c0, t0 := cpuTime(b), time.Now()
			for i := 0; i < b.N; i++ {
				call()
			}
			wall, cpu := time.Since(t0), cpuTime(b)-c0
			b.StopTimer()
			tokens := time.Duration(b.N * benchTokens)
			b.ReportMetric(us(wall/tokens-dWall), "added-wall-µs/token")
			b.ReportMetric(us(cpu/tokens-dCPU), "added-cpu-µs/token")
		})
	}
}
