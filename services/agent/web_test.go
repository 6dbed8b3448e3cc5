package agent_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/services/agent"
)

// TestWebTools: web_search is offered only with a provider, and the default
// agent names the web tools offered; without a provider, a call of
// web_search is an unknown tool's. With Brave, the key comes from the
// mounted secret the flag names. The names are reserved either way.
func TestWebTools(t *testing.T) {
	t.Parallel()
	const key = "brave-key-from-secret"
	brave := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Subscription-Token") != key {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"type": "ErrorResponse", "error": {"status": 401, "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The provided subscription token is invalid."}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"type": "search", "web": {"type": "search", "results": [{"title": "Owls", "url": "https://example.org/owls", "description": "All about <strong>owls</strong>."}]}}`))
	}))
	t.Cleanup(brave.Close)
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "BRAVE_API_KEY"), []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withBrave := agent.DefaultWebConfig()
	withBrave.SearchProvider, withBrave.SearchURL, withBrave.KeySecret = "brave", brave.URL, "BRAVE_API_KEY"
	noSearch := agent.DefaultWebConfig()
	for _, tc := range []struct {
		name      string
		opts      []agent.Option
		wantTools string
		wantCall  string
	}{
		{"no web tools", nil, "calculate,datetime", `unknown tool \"web_search\"`},
		{"fetch only", noSearch.Options(), "calculate,datetime,fetch_url", `unknown tool \"web_search\"`},
		{"brave", append(withBrave.Options(), agent.WithSecretsDir(secrets)), "calculate,datetime,web_search,fetch_url",
			`web_search=[{"title":"Owls","url":"https://example.org/owls","snippet":"All about owls."}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSuite(t, lastTool(call("w1", "web_search", map[string]any{"query": "owls"})))
			a := s.agent(agent.MemoryStores(), nil, tc.opts...)
			ctx := withTimeout(t, as("alice"), 30*time.Second)
			ga, err := a.client.GetAgent(ctx, &agentv1.GetAgentRequest{AgentId: "default"})
			if err != nil || strings.Join(ga.GetAgent().GetTools(), ",") != tc.wantTools {
				t.Fatalf("default agent's tools = %v, %v; want %s", ga.GetAgent().GetTools(), err, tc.wantTools)
			}
			if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "researcher", Tools: []string{"web_search"}}}); err != nil {
				t.Fatal(err)
			}
			resp, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "researcher", Messages: human("owls?")})
			if err != nil || !strings.Contains(resp.GetContent(), strings.ReplaceAll(tc.wantCall, `\"`, `"`)) {
				t.Fatalf("Invoke = %q, %v; want %s", resp.GetContent(), err, tc.wantCall)
			}
			params, _ := structpb.NewStruct(map[string]any{"type": "object"})
			for _, name := range []string{"web_search", "fetch_url"} {
				_, err := a.client.RegisterTool(ctx, &agentv1.RegisterToolRequest{Tool: &agentv1.ToolDefinition{Name: name, Url: "https://example.invalid/x", Parameters: params}})
				if code(err) != codes.InvalidArgument {
					t.Errorf("RegisterTool %s = %v, want InvalidArgument", name, err)
				}
			}
		})
	}
}

// TestWebToolsConfig: New refuses a provider configuration that cannot work.
func TestWebToolsConfig(t *testing.T) {
	t.Parallel()
	s := newSuite(t, lastTool())
	for _, tc := range []struct {
		name string
		edit func(*agent.WebConfig)
		want string
	}{
		{"brave without key", func(c *agent.WebConfig) { c.SearchProvider = "brave" }, "Brave Search needs an API key"},
		{"searxng without url", func(c *agent.WebConfig) { c.SearchProvider = "searxng" }, "SearXNG needs its base URL"},
		{"unknown provider", func(c *agent.WebConfig) { c.SearchProvider = "bing" }, `provider "bing"`},
		{"bad secret name", func(c *agent.WebConfig) { c.SearchProvider, c.KeySecret = "tavily", "../key" }, "-web-search-key-secret"},
		{"negative rate", func(c *agent.WebConfig) { c.RatePerMinute = -1 }, "-web-rate-per-minute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := agent.DefaultWebConfig()
			tc.edit(&cfg)
			_, err := agent.New(agent.Deps{
				LLM: llmv1.NewLLMServiceClient(s.conn(s.llmAddr)), Sandbox: sandboxv1.NewSandboxServiceClient(s.conn(s.sbAddr)), Stores: agent.MemoryStores(),
			}, cfg.Options()...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want %q", err, tc.want)
			}
		})
	}
}
