package llmgw_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/llmgw"
	"github.com/wick-agent/wick/services/llmgw/internal/fakellm"
	"github.com/wick-agent/wick/services/llmgw/internal/spec"
)

// localProvider is a fake Ollama or vLLM (both speak the OpenAI Chat
// Completions API) that counts the connections it accepts, not only the
// requests, so that a probe that connects and says nothing is seen too.
type localProvider struct {
	fake  *fakellm.Server
	addr  string
	conns atomic.Int64
}

func newLocalProvider(t *testing.T) *localProvider {
	t.Helper()
	p := &localProvider{fake: fakellm.New(fakellm.SSE(fakellm.Fixture("openai/text_stream.sse")))}
	srv := httptest.NewUnstartedServer(p.fake)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			p.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	p.addr = srv.Listener.Addr().String()
	return p
}

// hostClient is the gateway's provider client on a host where the local
// provider listens at its built-in default address: a dial of that address
// reaches the fake instead.
func hostClient(t *testing.T, defaultURL, fakeAddr string) *http.Client {
	t.Helper()
	u, err := url.Parse(defaultURL)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == u.Host {
			addr = fakeAddr
		}
		return d.DialContext(ctx, network, addr)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestLocalProviderDefaultGuarded: "ollama:…" and "vllm:…" resolve to a
// loopback address. A request that names such a spec, through gRPC or the
// HTTP API, is refused by the same guard as a request's own base_url — the
// local server never sees a connection, so the answer does not tell whether
// anything listens there — unless the operator configured a model at that
// address (models file, or -default-model), and then it reaches it.
func TestLocalProviderDefaultGuarded(t *testing.T) {
	t.Parallel()
	providers := []struct {
		name, spec, embed, defaultURL string
	}{
		{name: "ollama", spec: "ollama:llama3", embed: "ollama:nomic-embed-text", defaultURL: spec.OllamaBaseURL},
		{name: "vllm", spec: "vllm:meta-llama/Llama-3.1-8B-Instruct", embed: "vllm:BAAI/bge-small-en", defaultURL: spec.VLLMBaseURL},
	}
	operator := []struct {
		name      string
		configure func(*llmgw.Config, string)
	}{
		{name: "unconfigured", configure: func(*llmgw.Config, string) {}},
		{name: "models file", configure: func(c *llmgw.Config, sp string) { c.Models = []llmgw.ModelConfig{{ID: "local", Spec: sp}} }},
		{name: "default model flag", configure: func(c *llmgw.Config, sp string) { c.DefaultModel = sp }},
	}
	for _, p := range providers {
		for _, op := range operator {
			t.Run(p.name+"/"+op.name, func(t *testing.T) {
				t.Parallel()
				local := newLocalProvider(t)
				cfg := llmgw.DefaultConfig()
				cfg.Retry = fastRetry
				op.configure(&cfg, p.spec)
				svc, err := llmgw.New(cfg, llmgw.WithHTTPClient(hostClient(t, p.defaultURL, local.addr)),
					llmgw.WithLookupEnv(func(string) (string, bool) { return "", false }))
				if err != nil {
					t.Fatal(err)
				}
				key := identity.RandomKey()
				grpcClient := llmv1.NewLLMServiceClient(dialGRPC(t, serveGRPC(t, svc, key), signedAs(key, testUser)...))
				httpClient := sdkClient(t, svc, "")
				ctx := context.Background()

				_, grpcErr := grpcClient.Call(ctx, &llmv1.CallRequest{Models: models(p.spec), Messages: userHi})
				_, httpErr := httpClient.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
					Model: p.spec, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
				})

				if op.name != "unconfigured" {
					if grpcErr != nil || httpErr != nil {
						t.Fatalf("configured %s: gRPC %v, HTTP %v; want both answered", p.spec, grpcErr, httpErr)
					}
					reqs := local.fake.Requests()
					if len(reqs) != 2 || reqs[0].Path != "/v1/chat/completions" {
						t.Fatalf("the operator's %s saw %d requests (%v), want 2 chat completions", p.name, len(reqs), reqs)
					}
					return
				}
				if status.Code(grpcErr) != codes.PermissionDenied || !strings.Contains(status.Convert(grpcErr).Message(), "not allowed") {
					t.Errorf("gRPC Call: err = %v, want PermissionDenied from the guard", grpcErr)
				}
				var apiErr *openai.Error
				if !errors.As(httpErr, &apiErr) || apiErr.StatusCode != http.StatusForbidden || !strings.Contains(apiErr.Message, "not allowed") {
					t.Errorf("HTTP API: err = %v, want 403 from the guard", httpErr)
				}
				_, embedErr := grpcClient.Embed(ctx, &llmv1.EmbedRequest{Model: &llmv1.ModelSpec{Spec: p.embed}, Texts: []string{"a"}})
				if status.Code(embedErr) != codes.PermissionDenied {
					t.Errorf("gRPC Embed: err = %v, want PermissionDenied from the guard", embedErr)
				}
				// The refusal must not say what the name resolved to.
				msgs := []string{status.Convert(grpcErr).Message(), status.Convert(embedErr).Message()}
				if apiErr != nil {
					msgs = append(msgs, apiErr.Message)
				}
				for _, msg := range msgs {
					if strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, "is a loopback address") {
						t.Errorf("the refusal reveals the address: %q", msg)
					}
				}
				if n := local.conns.Load(); n != 0 {
					t.Fatalf("an unconfigured %s spec connected to the loopback default %d times", p.name, n)
				}
			})
		}
	}
}
