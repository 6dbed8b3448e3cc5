package llmgw_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/server"
	"github.com/wick-agent/wick/services/llmgw"
	"github.com/wick-agent/wick/services/llmgw/internal/fakellm"
	"github.com/wick-agent/wick/services/llmgw/internal/router"
)

const testKey = "sk-test-secret-value"

// fastRetry keeps retry tests quick; backoff is still exponential with jitter.
var fastRetry = router.Policy{MaxRetries: 2, BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond, MaxRetryAfter: time.Second}

type gateway struct {
	client llmv1.LLMServiceClient
	svc    *llmgw.Service
	addr   string
	key    *identity.Key
}

// testUser is the user every test call asserts.
const testUser = "tester"

// newGateway serves svc on the suite's gRPC server, which verifies signed
// identities with a fresh key, and returns a client that signs every call as
// testUser — as the agent service's connection signs the user of its run.
func newGateway(t *testing.T, cfg llmgw.Config, env map[string]string) gateway {
	t.Helper()
	svc, err := llmgw.New(cfg, llmgw.WithLookupEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
	if err != nil {
		t.Fatal(err)
	}
	key := identity.RandomKey()
	addr := serveGRPC(t, svc, key)
	conn := dialGRPC(t, addr, signedAs(key, testUser)...)
	return gateway{client: llmv1.NewLLMServiceClient(conn), svc: svc, addr: addr, key: key}
}

// serveGRPC serves svc on loopback with the suite's server and its identity
// interceptors, until the test ends.
func serveGRPC(tb testing.TB, svc *llmgw.Service, key *identity.Key) string {
	tb.Helper()
	srv := server.New("llmgw-test", slog.New(slog.NewTextHandler(io.Discard, nil)), server.WithIdentity(key), server.WithDrainDelay(0))
	svc.Register(srv.GRPC())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, lis); close(done) }()
	tb.Cleanup(func() { cancel(); <-done })
	return lis.Addr().String()
}

func dialGRPC(tb testing.TB, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	tb.Helper()
	conn, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return conn
}

// signedAs returns dial options that sign every call as user with key.
func signedAs(key *identity.Key, user string) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(key.Sign(ctx, method, user), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(key.Sign(ctx, method, user), desc, cc, method, opts...)
		}),
	}
}

// TestGRPCRequiresIdentity: every LLMService RPC spends the gateway's keys,
// so a call without the suite's signed identity, or signed with another key,
// is Unauthenticated; a signed call is answered.
func TestGRPCRequiresIdentity(t *testing.T) {
	t.Parallel()
	gw := newGateway(t, config(), keys)
	call := &llmv1.CallRequest{Models: models("script:demo"), Messages: userHi}
	tests := []struct {
		name string
		opts []grpc.DialOption
		code codes.Code
	}{
		{name: "unsigned", code: codes.Unauthenticated},
		{name: "signed with another key", opts: signedAs(identity.RandomKey(), testUser), code: codes.Unauthenticated},
		{name: "signed", opts: signedAs(gw.key, testUser), code: codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := llmv1.NewLLMServiceClient(dialGRPC(t, gw.addr, tt.opts...))
			_, err := c.Call(context.Background(), call)
			if status.Code(err) != tt.code {
				t.Errorf("Call: %v, want %v", err, tt.code)
			}
			_, err = c.ListModels(context.Background(), &llmv1.ListModelsRequest{})
			if status.Code(err) != tt.code {
				t.Errorf("ListModels: %v, want %v", err, tt.code)
			}
			st, err := c.Stream(context.Background(), &llmv1.StreamRequest{Models: call.Models, Messages: call.Messages})
			if err == nil {
				for err == nil {
					_, err = st.Recv()
				}
				if err == io.EOF {
					err = nil
				}
			}
			if status.Code(err) != tt.code {
				t.Errorf("Stream: %v, want %v", err, tt.code)
			}
		})
	}
	// Health stays open to probes that carry no identity.
	if _, err := healthpb.NewHealthClient(dialGRPC(t, gw.addr)).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("health without identity: %v", err)
	}
}

func fake(t *testing.T, f *fakellm.Server) string {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL
}

func config(models ...llmgw.ModelConfig) llmgw.Config {
	cfg := llmgw.DefaultConfig()
	cfg.Retry = fastRetry
	cfg.Models = models
	// The fake providers listen on loopback, which a request's own base_url
	// may not reach by default.
	cfg.RequestBaseURLAllowNets = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	return cfg
}

func openaiModel(id, url string) llmgw.ModelConfig {
	return llmgw.ModelConfig{ID: id, Provider: "openai", Model: "gpt-4o", BaseURL: url + "/v1", APIKeyEnv: "OPENAI_API_KEY"}
}

func anthropicModel(id, url string) llmgw.ModelConfig {
	return llmgw.ModelConfig{ID: id, Provider: "anthropic", Model: "claude-sonnet-4-20250514", BaseURL: url, APIKeyEnv: "ANTHROPIC_API_KEY"}
}

var keys = map[string]string{"OPENAI_API_KEY": testKey, "ANTHROPIC_API_KEY": testKey}

func models(names ...string) []*llmv1.ModelSpec {
	var out []*llmv1.ModelSpec
	for _, n := range names {
		out = append(out, &llmv1.ModelSpec{Spec: n})
	}
	return out
}

var userHi = []*llmv1.Message{{Role: "user", Content: "hi"}}

type streamed struct {
	msgs    []*llmv1.StreamResponse
	text    string
	final   *llmv1.StreamResponse
	trailer metadata.MD
	err     error
}

func stream(t *testing.T, c llmv1.LLMServiceClient, req *llmv1.StreamRequest) streamed {
	t.Helper()
	st, err := c.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var out streamed
	for {
		m, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			out.err = err
			break
		}
		out.msgs = append(out.msgs, m)
		out.text += m.GetDelta()
		out.final = m
	}
	out.trailer = st.Trailer()
	return out
}

func TestStreamOpenAIToolCallsOverGRPC(t *testing.T) {
	t.Parallel()
	f := fakellm.New(fakellm.SSE(fakellm.Fixture("openai/parallel_tool_calls.sse")))
	gw := newGateway(t, config(openaiModel("fake-gpt", fake(t, f))), keys)
	got := stream(t, gw.client, &llmv1.StreamRequest{Models: models("fake-gpt"), Messages: userHi})
	if got.err != nil {
		t.Fatal(got.err)
	}
	if first := got.msgs[0]; first.GetModel() != "gpt-4o" || first.GetProvider() != "openai" {
		t.Errorf("first message = %v", first)
	}
	deltas := 0
	for _, m := range got.msgs {
		if m.GetToolCallDelta() != nil {
			deltas++
		}
	}
	if deltas < 10 {
		t.Errorf("tool-call deltas = %d, want each fragment", deltas)
	}
	fin := got.final
	if fin.GetFinishReason() != "tool_calls" || fin.GetUsage().GetInputTokens() != 149 || fin.GetUsage().GetOutputTokens() != 60 {
		t.Errorf("final = %v", fin)
	}
	calls := fin.GetToolCalls()
	if len(calls) != 2 || calls[0].GetName() != "GetWeatherArgs" || calls[0].GetArguments().AsMap()["city"] != "Edinburgh" || calls[1].GetArguments().AsMap()["ticker"] != "AAPL" {
		t.Errorf("tool calls = %v", calls)
	}
	if got.trailer.Get(llmgw.TrailerInputTokens)[0] != "149" || got.trailer.Get(llmgw.TrailerOutputTokens)[0] != "60" || len(got.trailer.Get(llmgw.TrailerOverheadUS)) != 1 {
		t.Errorf("trailer = %v", got.trailer)
	}
	if auth := f.Requests()[0].Header.Get("Authorization"); auth != "Bearer "+testKey {
		t.Errorf("provider got Authorization %q", auth)
	}
}

func TestCallAnthropicOverGRPC(t *testing.T) {
	t.Parallel()
	f := fakellm.New(fakellm.SSE(fakellm.Fixture("anthropic/tool_use_response.txt")))
	gw := newGateway(t, config(anthropicModel("fake-claude", fake(t, f))), keys)
	var trailer metadata.MD
	resp, err := gw.client.Call(context.Background(), &llmv1.CallRequest{Models: models("fake-claude"), Messages: userHi}, grpc.Trailer(&trailer))
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetContent() != "I'll check the current weather in Paris for you." || resp.GetFinishReason() != "tool_calls" || resp.GetProvider() != "anthropic" {
		t.Errorf("resp = %v", resp)
	}
	if len(resp.GetToolCalls()) != 1 || resp.GetToolCalls()[0].GetArguments().AsMap()["location"] != "Paris" {
		t.Errorf("tool calls = %v", resp.GetToolCalls())
	}
	if trailer.Get(llmgw.TrailerInputTokens)[0] != "377" || trailer.Get(llmgw.TrailerOutputTokens)[0] != "65" {
		t.Errorf("trailer = %v", trailer)
	}
}

// TestAnthropicProtocolErrorAtTheEdge: a stream that ends with message_stop but
// sends a delta for a block it never started answers Internal, naming the
// fault, after one request — not Unavailable, which callers retry.
func TestAnthropicProtocolErrorAtTheEdge(t *testing.T) {
	t.Parallel()
	body := "event: message_start\ndata: " + `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"claude","usage":{"input_tokens":5,"output_tokens":1}}}` + "\n\n" +
		"event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"x"}}` + "\n\n" +
		"event: message_delta\ndata: " + `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}` + "\n\n" +
		"event: message_stop\ndata: " + `{"type":"message_stop"}` + "\n\n"
	f := fakellm.New(fakellm.SSE([]byte(body)))
	gw := newGateway(t, config(anthropicModel("fake-claude", fake(t, f))), keys)
	_, err := gw.client.Call(context.Background(), &llmv1.CallRequest{Models: models("fake-claude"), Messages: userHi})
	if status.Code(err) != codes.Internal || !strings.Contains(status.Convert(err).Message(), "content block 1, which was never started") {
		t.Fatalf("err = %v, want Internal naming the block never started", err)
	}
	if f.Count() != 1 {
		t.Errorf("provider saw %d requests, want 1", f.Count())
	}
}

func TestFallbackFromFailingModel(t *testing.T) {
	t.Parallel()
	bad := fakellm.New(fakellm.Status(503, nil, `{"error":{"message":"down"}}`))
	good := fakellm.New(fakellm.SSE(fakellm.Fixture("anthropic/basic_response.txt")))
	gw := newGateway(t, config(openaiModel("bad", fake(t, bad)), anthropicModel("good", fake(t, good))), keys)
	got := stream(t, gw.client, &llmv1.StreamRequest{Models: models("bad", "good"), Messages: userHi})
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.text != "Hello there!" || got.msgs[0].GetProvider() != "anthropic" {
		t.Errorf("text %q from %v", got.text, got.msgs[0])
	}
	if bad.Count() != 1+fastRetry.MaxRetries || good.Count() != 1 {
		t.Errorf("bad served %d, good %d", bad.Count(), good.Count())
	}
}

func TestNamedChainFromModelsFile(t *testing.T) {
	t.Parallel()
	bad := fakellm.New(fakellm.Status(400, nil, `{"error":{"message":"no"}}`))
	good := fakellm.New(fakellm.SSE(fakellm.Fixture("openai/text_stream.sse")))
	dir := t.TempDir()
	file := filepath.Join(dir, "models.yaml")
	yaml := "default: smart\nmodels:\n" +
		"  - id: first\n    provider: anthropic\n    model: claude-x\n    base_url: " + fake(t, bad) + "\n" +
		"  - id: second\n    provider: openai\n    model: gpt-4o\n    base_url: " + fake(t, good) + "/v1\n    api_key_env: OPENAI_API_KEY\n" +
		"  - id: smart\n    fallback: [first, second]\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config()
	cfg.ModelsFile = file
	gw := newGateway(t, cfg, keys)
	resp, err := gw.client.Call(context.Background(), &llmv1.CallRequest{Messages: userHi}) // default: smart
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetProvider() != "openai" || bad.Count() != 1 {
		t.Errorf("resp from %s, first served %d (400 must not be retried)", resp.GetProvider(), bad.Count())
	}
	list, err := gw.client.ListModels(context.Background(), &llmv1.ListModelsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]*llmv1.Model{}
	for _, m := range list.GetModels() {
		ids[m.GetId()] = m
	}
	if ids["smart"].GetProvider() != "fallback" || ids["smart"].GetModel() != "first,second" || ids["demo"] == nil {
		t.Errorf("models = %v", list.GetModels())
	}
}

func TestNoFallbackAfterFirstDelta(t *testing.T) {
	t.Parallel()
	first := fakellm.New(fakellm.Cut([]byte(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}` + "\n\n")))
	second := fakellm.New(fakellm.SSE(fakellm.Fixture("anthropic/basic_response.txt")))
	gw := newGateway(t, config(openaiModel("first", fake(t, first)), anthropicModel("second", fake(t, second))), keys)
	got := stream(t, gw.client, &llmv1.StreamRequest{Models: models("first", "second"), Messages: userHi})
	if status.Code(got.err) != codes.Unavailable {
		t.Fatalf("err = %v, want Unavailable", got.err)
	}
	if got.text != "Hel" || first.Count() != 1 || second.Count() != 0 {
		t.Errorf("text %q, first served %d, second %d", got.text, first.Count(), second.Count())
	}
}

func TestRetryOn429ThenSuccess(t *testing.T) {
	t.Parallel()
	f := fakellm.New(
		fakellm.Status(429, map[string]string{"Retry-After": "0.001"}, `{"error":{"message":"slow"}}`),
		fakellm.Status(529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
		fakellm.SSE(fakellm.Fixture("anthropic/basic_response.txt")),
	)
	gw := newGateway(t, config(anthropicModel("c", fake(t, f))), keys)
	resp, err := gw.client.Call(context.Background(), &llmv1.CallRequest{Models: models("c"), Messages: userHi})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetContent() != "Hello there!" || f.Count() != 3 {
		t.Errorf("content %q after %d requests", resp.GetContent(), f.Count())
	}
}

func TestCancelReachesProvider(t *testing.T) {
	t.Parallel()
	canceled := make(chan struct{})
	f := fakellm.New(fakellm.Hang([]byte(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`+"\n\n"), canceled))
	gw := newGateway(t, config(openaiModel("m", fake(t, f))), keys)
	ctx, cancel := context.WithCancel(context.Background())
	st, err := gw.client.Stream(ctx, &llmv1.StreamRequest{Models: models("m"), Messages: userHi})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := st.Recv(); err != nil || m.GetDelta() != "Hel" {
		t.Fatalf("first message %v, %v", m, err)
	}
	cancel()
	select {
	case <-canceled:
	case <-time.After(30 * time.Second):
		t.Fatal("cancelling the gRPC stream did not cancel the provider request")
	}
}

func TestErrorsAtTheEdge(t *testing.T) {
	t.Parallel()
	f := fakellm.New(fakellm.SSE(fakellm.Fixture("openai/text_stream.sse")))
	url := fake(t, f) + "/v1"
	tests := []struct {
		name   string
		env    map[string]string
		models []*llmv1.ModelSpec
		msgs   []*llmv1.Message
		code   codes.Code
		msg    string
	}{
		{name: "missing key names the variable", env: map[string]string{}, models: models("gpt-4o"), code: codes.FailedPrecondition, msg: "OPENAI_API_KEY"},
		{name: "key variable not allowed", models: []*llmv1.ModelSpec{{Provider: "openai", Model: "m", ApiKeyEnv: "HOME"}}, code: codes.PermissionDenied, msg: "HOME"},
		{name: "key variable sent to a caller's base_url", models: []*llmv1.ModelSpec{{Provider: "openai", Model: "m", BaseUrl: url, ApiKeyEnv: "OPENAI_API_KEY"}}, code: codes.PermissionDenied, msg: "only sent"},
		{name: "unknown bare name", models: models("llama3"), code: codes.InvalidArgument, msg: "provider:model"},
		{name: "spec and object", models: []*llmv1.ModelSpec{{Spec: "gpt-4o", Provider: "openai"}}, code: codes.InvalidArgument, msg: "not both"},
		{name: "no messages", models: models("script:demo"), msgs: []*llmv1.Message{}, code: codes.InvalidArgument, msg: "message"},
		{name: "bad role", models: models("script:demo"), msgs: []*llmv1.Message{{Role: "robot", Content: "x"}}, code: codes.InvalidArgument, msg: "robot"},
		{name: "script outside the script dir", models: models("script:../../etc/passwd"), code: codes.InvalidArgument, msg: "script"},
		{name: "chain too long", models: models("script:demo", "script:demo", "script:demo", "script:demo", "script:demo", "script:demo", "script:demo", "script:demo", "script:demo"), code: codes.InvalidArgument, msg: "at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := tt.env
			if env == nil {
				env = keys
			}
			cfg := config()
			cfg.ScriptDir = t.TempDir()
			gw := newGateway(t, cfg, env)
			msgs := tt.msgs
			if msgs == nil {
				msgs = userHi
			}
			_, err := gw.client.Call(context.Background(), &llmv1.CallRequest{Models: tt.models, Messages: msgs})
			if status.Code(err) != tt.code || !strings.Contains(status.Convert(err).Message(), tt.msg) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.code, tt.msg)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Fatalf("error holds the key: %v", err)
			}
		})
	}
	if f.Count() != 0 {
		t.Errorf("a refused spec reached the provider %d times", f.Count())
	}
}

func TestRequestBaseURLWithoutKey(t *testing.T) {
	t.Parallel()
	f := fakellm.New(fakellm.SSE(fakellm.Fixture("openai/text_stream.sse")))
	url := fake(t, f) + "/v1"
	gw := newGateway(t, config(), keys)
	resp, err := gw.client.Call(context.Background(), &llmv1.CallRequest{Models: []*llmv1.ModelSpec{{Provider: "openai", Model: "local", BaseUrl: url}}, Messages: userHi})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetFinishReason() != "stop" || f.Requests()[0].Header.Get("Authorization") != "" {
		t.Fatalf("resp %v, Authorization %q", resp, f.Requests()[0].Header.Get("Authorization"))
	}

	cfg := config()
	cfg.AllowRequestBaseURL = false
	locked := newGateway(t, cfg, keys)
	_, err = locked.client.Call(context.Background(), &llmv1.CallRequest{Models: []*llmv1.ModelSpec{{Provider: "openai", Model: "local", BaseUrl: url}}, Messages: userHi})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("err = %v, want PermissionDenied", err)
	}
}

// A request's own base_url reaches public addresses only: not the
// operator's loopback (the gateway's own HTTP API, a local Ollama), private
// networks or cloud metadata, unless the operator allowlists them. A models
// file's base URL is the operator's choice and is not limited.
func TestRequestBaseURLGuard(t *testing.T) {
	t.Parallel()
	f := fakellm.New(fakellm.SSE(fakellm.Fixture("openai/text_stream.sse")))
	url := fake(t, f) + "/v1"
	guarded := llmgw.DefaultConfig()
	guarded.Retry = fastRetry
	gw := newGateway(t, guarded, keys)
	for _, u := range []string{url, strings.Replace(url, "127.0.0.1", "localhost", 1), "http://169.254.169.254/v1", "http://10.0.0.1:1/v1"} {
		_, err := gw.client.Call(context.Background(), &llmv1.CallRequest{Models: []*llmv1.ModelSpec{{Provider: "openai", Model: "local", BaseUrl: u}}, Messages: userHi})
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "not allowed") {
			t.Fatalf("base_url %s: err = %v, want PermissionDenied for a refused address", u, err)
		}
		if strings.Contains(u, "localhost") && strings.Contains(status.Convert(err).Message(), "127.0.0.1") {
			t.Fatalf("base_url %s: the refusal %q reveals the address the name resolved to", u, err)
		}
	}
	if f.Count() != 0 {
		t.Fatalf("the guarded base_url reached the provider %d times", f.Count())
	}

	configured := llmgw.DefaultConfig()
	configured.Retry = fastRetry
	configured.Models = []llmgw.ModelConfig{{ID: "local", Provider: "openai", Model: "local", BaseURL: url}}
	op := newGateway(t, configured, keys)
	if _, err := op.client.Call(context.Background(), &llmv1.CallRequest{Models: []*llmv1.ModelSpec{{Spec: "local"}}, Messages: userHi}); err != nil {
		t.Fatalf("configured base URL: %v", err)
	}
	if f.Count() != 1 {
		t.Fatalf("provider saw %d requests, want 1", f.Count())
	}
}

func TestMalformedArgumentsOverGRPC(t *testing.T) {
	t.Parallel()
	body := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"path\": tru"}}]},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" + "data: [DONE]\n\n"
	f := fakellm.New(fakellm.SSE([]byte(body)))
	gw := newGateway(t, config(openaiModel("m", fake(t, f))), keys)
	resp, err := gw.client.Call(context.Background(), &llmv1.CallRequest{Models: models("m"), Messages: userHi})
	if err != nil {
		t.Fatal(err)
	}
	tc := resp.GetToolCalls()
	if len(tc) != 1 || tc[0].GetArgumentsError() == "" || tc[0].GetArguments() != nil || tc[0].GetId() != "call_1" {
		t.Fatalf("tool calls = %v", tc)
	}
}

func TestScriptDemoTurnByTurn(t *testing.T) {
	t.Parallel()
	gw := newGateway(t, config(), map[string]string{})
	msgs := []*llmv1.Message{{Role: "user", Content: "make me a program"}}
	wantTools := []string{"write_file", "execute", ""}
	for turn, want := range wantTools {
		got := stream(t, gw.client, &llmv1.StreamRequest{Models: models("script:demo?delay=0s"), Messages: msgs})
		if got.err != nil {
			t.Fatal(got.err)
		}
		calls := got.final.GetToolCalls()
		if want == "" {
			if len(calls) != 0 || got.final.GetFinishReason() != "stop" || got.text == "" {
				t.Fatalf("turn %d: %v", turn, got.final)
			}
			break
		}
		if len(calls) != 1 || calls[0].GetName() != want || got.final.GetFinishReason() != "tool_calls" {
			t.Fatalf("turn %d: calls %v", turn, calls)
		}
		msgs = append(msgs,
			&llmv1.Message{Role: "assistant", Content: got.text, ToolCalls: calls},
			&llmv1.Message{Role: "tool", ToolCallId: calls[0].GetId(), Name: want, Content: "ok"})
	}
}

func TestScriptFromDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := `{"turns":[{"text":"from a file","tool_calls":[{"name":"grep","arguments":{"pattern":"x","path":"/workspace"}}]}]}`
	if err := os.WriteFile(filepath.Join(dir, "mine.json"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config()
	cfg.ScriptDir = dir
	gw := newGateway(t, cfg, nil)
	resp, err := gw.client.Call(context.Background(), &llmv1.CallRequest{Models: models("script:mine.json"), Messages: userHi})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetContent() != "from a file" || resp.GetToolCalls()[0].GetArguments().AsMap()["pattern"] != "x" {
		t.Fatalf("resp = %v", resp)
	}
	inline := `script:[{"text":"inline"}]`
	resp, err = gw.client.Call(context.Background(), &llmv1.CallRequest{Models: models(inline), Messages: userHi})
	if err != nil || resp.GetContent() != "inline" {
		t.Fatalf("inline: %v, %v", resp, err)
	}
}

// TestEmbeddedScripts: the embedded scripts answer without a script
// directory.
func TestEmbeddedScripts(t *testing.T) {
	t.Parallel()
	gw := newGateway(t, config(), nil)
	for _, tc := range []struct{ model, tool string }{
		{"script:demo", "write_file"},
		{"script:showcase", "read_file"},
		{"script:showcase?delay=0s", "read_file"},
	} {
		resp, err := gw.client.Call(context.Background(), &llmv1.CallRequest{Models: models(tc.model), Messages: userHi})
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if calls := resp.GetToolCalls(); len(calls) != 1 || calls[0].GetName() != tc.tool {
			t.Fatalf("%s: first turn %v, want a %s call", tc.model, resp, tc.tool)
		}
	}
	if _, err := gw.client.Call(context.Background(), &llmv1.CallRequest{Models: models("script:missing"), Messages: userHi}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("script:missing without a script directory: %v", err)
	}
}

func TestListModelsNeverShowsKeys(t *testing.T) {
	t.Parallel()
	gw := newGateway(t, config(openaiModel("with-key", "http://127.0.0.1:1"), llmgw.ModelConfig{ID: "without-key", Spec: "claude-x"}), map[string]string{"OPENAI_API_KEY": testKey})
	resp, err := gw.client.ListModels(context.Background(), &llmv1.ListModelsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range resp.GetModels() {
		got[m.GetId()] = m.GetKeyConfigured()
	}
	if !got["with-key"] || got["without-key"] || !got["demo"] {
		t.Errorf("key_configured = %v", got)
	}
	if strings.Contains(resp.String(), testKey) {
		t.Fatal("ListModels returned a key")
	}
}

func TestBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  llmgw.Config
	}{
		{name: "duplicate id", cfg: config(llmgw.ModelConfig{ID: "a", Spec: "gpt-4o"}, llmgw.ModelConfig{ID: "a", Spec: "gpt-4o"})},
		{name: "unknown default", cfg: func() llmgw.Config { c := config(); c.DefaultModel = "nonsense"; return c }()},
		{name: "chain of chains", cfg: config(llmgw.ModelConfig{ID: "a", Fallback: []string{"gpt-4o"}}, llmgw.ModelConfig{ID: "b", Fallback: []string{"a"}})},
		{name: "lower-case key variable", cfg: config(llmgw.ModelConfig{ID: "a", Provider: "openai", Model: "m", APIKeyEnv: "path"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := llmgw.New(tt.cfg); err == nil {
				t.Fatal("New accepted a bad configuration")
			}
		})
	}
}

func TestSecretsDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "OPENAI_API_KEY"), []byte(testKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := fakellm.New(fakellm.SSE(fakellm.Fixture("openai/text_stream.sse")))
	cfg := config(openaiModel("m", fake(t, f)))
	cfg.SecretsDir = dir
	gw := newGateway(t, cfg, map[string]string{})
	if _, err := gw.client.Call(context.Background(), &llmv1.CallRequest{Models: models("m"), Messages: userHi}); err != nil {
		t.Fatal(err)
	}
	if got := f.Requests()[0].Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Fatalf("Authorization = %q", got)
	}
}

func TestPerCallTimeout(t *testing.T) {
	t.Parallel()
	canceled := make(chan struct{})
	f := fakellm.New(fakellm.Hang(nil, canceled))
	gw := newGateway(t, config(openaiModel("m", fake(t, f))), keys)
	_, err := gw.client.Call(context.Background(), &llmv1.CallRequest{Models: models("m"), Messages: userHi, Timeout: durationpb.New(50 * time.Millisecond)})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	<-canceled // the provider request was cancelled, not left hanging
}

func TestReplyLargerThanLimit(t *testing.T) {
	t.Parallel()
	f := fakellm.New(fakellm.SSE(fakellm.Fixture("openai/text_stream.sse")))
	cfg := config(openaiModel("m", fake(t, f)))
	cfg.MaxResponseBytes = 20
	gw := newGateway(t, cfg, keys)
	_, err := gw.client.Call(context.Background(), &llmv1.CallRequest{Models: models("m"), Messages: userHi})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "20 bytes") {
		t.Fatalf("err = %v, want ResourceExhausted", err)
	}
}
