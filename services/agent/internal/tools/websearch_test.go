package tools

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/quota"
)

const testSearchKey = "sk-test-0123456789"

// fakeProvider serves one recorded answer of a search provider after
// checking the request is the one its API reference documents.
func fakeProvider(t *testing.T, provider string, status int, header http.Header, body []byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bad := func(format string, args ...any) {
			t.Errorf(provider+": "+format, args...)
			http.Error(w, "bad request", http.StatusBadRequest)
		}
		switch provider {
		case ProviderSearXNG:
			if r.Method != http.MethodGet || r.URL.Path != "/searx/search" || r.URL.Query().Get("format") != "json" || r.URL.Query().Get("q") != "wick agent" {
				bad("request %s %s", r.Method, r.URL)
				return
			}
		case ProviderBrave:
			if r.Method != http.MethodGet || r.URL.Query().Get("q") != "wick agent" || r.URL.Query().Get("count") != "2" || r.Header.Get("X-Subscription-Token") != testSearchKey {
				bad("request %s %s token %q", r.Method, r.URL, r.Header.Get("X-Subscription-Token"))
				return
			}
		case ProviderTavily:
			var req struct {
				Query      string `json:"query"`
				MaxResults int    `json:"max_results"`
			}
			if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer "+testSearchKey || r.Header.Get("Content-Type") != "application/json" ||
				json.NewDecoder(r.Body).Decode(&req) != nil || req.Query != "wick agent" || req.MaxResults != 2 {
				bad("request %s %s auth %q body %+v", r.Method, r.URL, r.Header.Get("Authorization"), req)
				return
			}
		}
		for k, v := range header {
			w.Header()[k] = v
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "websearch", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func userCtx(user string) context.Context {
	return identity.WithUser(context.Background(), user)
}

// TestWebSearch searches through each provider's recorded answers: results
// come back as title, url and snippet (markup removed, at most k), and a
// refusal or a rate limit is an error naming the provider, never the key.
func TestWebSearch(t *testing.T) {
	t.Parallel()
	html := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	cases := []struct {
		name, provider, path string
		status               int
		header               http.Header
		body                 []byte
		want                 []SearchResult
		wantErr              []string
	}{
		{name: "searxng", provider: ProviderSearXNG, path: "/searx", status: 200, body: fixture(t, "searxng_ok.json"), want: []SearchResult{
			{Title: "Wick & agents", URL: "https://example.org/wick", Snippet: "An agent platform in Go."},
			{Title: "Second", URL: "https://example.com/second", Snippet: "The second result."},
		}},
		{name: "searxng json off", provider: ProviderSearXNG, path: "/searx", status: 403, header: html, body: []byte("<html><body><h1>Forbidden</h1></body></html>"),
			wantErr: []string{"SearXNG answered HTTP 403", "format json", "Forbidden"}},
		{name: "searxng limiter", provider: ProviderSearXNG, path: "/searx", status: 429, header: html, body: []byte("Too Many Requests"),
			wantErr: []string{"SearXNG is rate limiting", "HTTP 429", "Too Many Requests"}},
		{name: "brave", provider: ProviderBrave, path: "/res/v1/web/search", status: 200, body: fixture(t, "brave_ok.json"), want: []SearchResult{
			{Title: "Wick & agents", URL: "https://example.org/wick", Snippet: "An agent platform in Go."},
			{Title: "Second", URL: "https://example.com/second", Snippet: "The second result."},
		}},
		{name: "brave bad token", provider: ProviderBrave, path: "/res/v1/web/search", status: 401, body: fixture(t, "brave_401.json"),
			wantErr: []string{"Brave Search answered HTTP 401", "subscription token is invalid"}},
		{name: "brave rate limit", provider: ProviderBrave, path: "/res/v1/web/search", status: 429,
			header: http.Header{"X-Ratelimit-Limit": {"1, 2000"}, "X-Ratelimit-Reset": {"1, 1419704"}}, body: fixture(t, "brave_429.json"),
			wantErr: []string{"Brave Search is rate limiting", "HTTP 429", "rate limit exceeded for plan"}},
		{name: "tavily", provider: ProviderTavily, path: "/search", status: 200, body: fixture(t, "tavily_ok.json"), want: []SearchResult{
			{Title: "Wick & agents", URL: "https://example.org/wick", Snippet: "An agent platform in Go."},
			{Title: "Second", URL: "https://example.com/second", Snippet: "The second result."},
		}},
		{name: "tavily bad key", provider: ProviderTavily, path: "/search", status: 401, body: fixture(t, "tavily_401.json"),
			wantErr: []string{"Tavily answered HTTP 401", "missing or invalid API key"}},
		{name: "tavily rate limit", provider: ProviderTavily, path: "/search", status: 429, header: http.Header{"Retry-After": {"7"}}, body: fixture(t, "tavily_429.json"),
			wantErr: []string{"Tavily is rate limiting", "retry after 7s", "excessive requests"}},
		{name: "not json", provider: ProviderTavily, path: "/search", status: 200, body: []byte(`{"answer": "no list"}`),
			wantErr: []string{"Tavily answered JSON of another shape"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeProvider(t, tc.provider, tc.status, tc.header, tc.body)
			cfg := SearchConfig{Provider: tc.provider, URL: srv.URL + tc.path}
			if tc.provider != ProviderSearXNG {
				cfg.Key = func(context.Context) (string, error) { return testSearchKey, nil }
			}
			tool, err := NewWebSearch(cfg)
			if err != nil {
				t.Fatal(err)
			}
			out, err := tool.Execute(userCtx("alice"), map[string]any{"query": "wick agent", "k": float64(2)})
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("search = %s, want an error", out)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				if strings.Contains(err.Error(), testSearchKey) {
					t.Errorf("error %q holds the key", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []SearchResult
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("result %s: %v", out, err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("results = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("result %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestWebSearchConfig: a provider without what it needs, or an unknown
// one, is refused when the tool is built; bad arguments when it is called.
func TestWebSearchConfig(t *testing.T) {
	t.Parallel()
	key := func(context.Context) (string, error) { return "k", nil }
	for _, tc := range []struct {
		name string
		cfg  SearchConfig
		want string
	}{
		{"searxng without url", SearchConfig{Provider: ProviderSearXNG}, "SearXNG needs its base URL"},
		{"brave without key", SearchConfig{Provider: ProviderBrave}, "Brave Search needs an API key"},
		{"tavily without key", SearchConfig{Provider: ProviderTavily}, "Tavily needs an API key"},
		{"unknown", SearchConfig{Provider: "bing", Key: key}, `provider "bing"`},
		{"bad url", SearchConfig{Provider: ProviderSearXNG, URL: "ftp://searx"}, "http:// or https://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := NewWebSearch(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewWebSearch = %v, want %q", err, tc.want)
			}
		})
	}
	tool, err := NewWebSearch(SearchConfig{Provider: ProviderSearXNG, URL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []map[string]any{{}, {"query": " "}, {"query": "x", "k": float64(0)}, {"query": "x", "k": 1.5}} {
		if _, err := tool.Execute(userCtx("alice"), args); err == nil {
			t.Errorf("Execute(%v) succeeded", args)
		}
	}
}

// TestWebSearchKLimits: k defaults to DefaultSearchResults and is lowered
// to MaxSearchResults.
func TestWebSearchKLimits(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		seen []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Query().Get("count"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"type": "search"}`))
	}))
	t.Cleanup(srv.Close)
	tool, err := NewWebSearch(SearchConfig{Provider: ProviderBrave, URL: srv.URL, Key: func(context.Context) (string, error) { return "k", nil }})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []map[string]any{{"query": "q"}, {"query": "q", "k": float64(500)}} {
		out, err := tool.Execute(userCtx("alice"), args)
		if err != nil || out != "[]" {
			t.Fatalf("Execute(%v) = %q, %v; want [] (no web results)", args, out, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, ",") != "5,20" {
		t.Fatalf("counts asked = %v, want 5,20", seen)
	}
}

// TestWebRateLimit: past its rate a user's call is refused with the limit
// and its flag, before any request leaves; another user is not.
func TestWebRateLimit(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("hello"))
	}))
	t.Cleanup(srv.Close)
	rates := quota.NewMemory()
	limit := quota.RateLimit{Limit: quota.Limit{Max: 2, Name: "calls per user per minute", Unit: "calls in the last minute", Flag: "-web-rate-per-minute"}, Window: time.Minute}
	search, err := NewWebSearch(SearchConfig{Provider: ProviderSearXNG, URL: srv.URL}, WithWebRate(rates, limit))
	if err != nil {
		t.Fatal(err)
	}
	fetch := NewFetchURL(WithWebRate(rates, limit), WithFetchGuard(netguardNone(), srv.Listener.Addr().String()))
	for _, tc := range []struct {
		tool interface {
			Execute(context.Context, map[string]any) (string, error)
		}
		name string
		args map[string]any
	}{{search, WebSearch, map[string]any{"query": "q"}}, {fetch, FetchURL, map[string]any{"url": srv.URL}}} {
		before := calls.Load()
		for range 2 {
			_, _ = tc.tool.Execute(userCtx("alice"), tc.args)
		}
		_, err := tc.tool.Execute(userCtx("alice"), tc.args)
		if !errors.Is(err, quota.ErrExceeded) {
			t.Fatalf("%s: third call = %v, want ErrExceeded", tc.name, err)
		}
		for _, w := range []string{"user alice has 2 " + tc.name + " calls in the last minute", "the limit of " + tc.name + " calls per user per minute is 2", "-web-rate-per-minute", "try again in"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: refusal %q does not say %q", tc.name, err, w)
			}
		}
		if calls.Load()-before != 2 {
			t.Errorf("%s: %d requests left, want 2", tc.name, calls.Load()-before)
		}
		if _, err := tc.tool.Execute(userCtx("bob"), tc.args); errors.Is(err, quota.ErrExceeded) {
			t.Errorf("%s: bob refused by alice's count: %v", tc.name, err)
		}
	}
}
