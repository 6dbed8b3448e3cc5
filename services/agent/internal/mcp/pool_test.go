package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wick-agent/wick/platform/netguard"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/mcp/mcptest"
	"github.com/wick-agent/wick/services/agent/internal/tools"
)

const testToken = "tok-mcp-test"

// serveHTTP serves the test server on loopback; while down is set every
// request answers 503, as a server that stopped would.
func serveHTTP(t *testing.T) (url string, down *atomic.Bool) {
	t.Helper()
	down = new(atomic.Bool)
	h := mcptest.Handler(mcptest.New(mcptest.Options{}), testToken)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "stopped", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, down
}

// loopbackClient is the SSRF guard's client with loopback allowed, as an
// operator's -tool-allow-nets would.
func loopbackClient() *http.Client {
	return tools.SafeHTTPClient(netguard.New(netip.MustParsePrefix("127.0.0.0/8")))
}

func newPool(t *testing.T, client *http.Client, opts ...Option) *Pool {
	t.Helper()
	p := New(nil, client, nil, opts...)
	t.Cleanup(p.Close)
	return p
}

// listed drops the unavailable servers of Pool.Tools.
func listed(ts []loop.Tool, _ []Unavailable) []loop.Tool { return ts }

func byName(ts []loop.Tool) map[string]loop.Tool {
	out := map[string]loop.Tool{}
	for _, t := range ts {
		out[t.Name()] = t
	}
	return out
}

func names(ts []loop.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name())
	}
	slices.Sort(out)
	return out
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestHTTPServerTools(t *testing.T) {
	t.Parallel()
	url, _ := serveHTTP(t)
	ctx := testCtx(t)
	p := newPool(t, loopbackClient())
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	// The same server twice, under two names, one with a short timeout.
	cfg := []loop.MCPServerCfg{{Name: "srv", URL: url, Headers: auth}, {Name: "short", URL: url, Headers: auth, Timeout: 300 * time.Millisecond}}
	ts := byName(listed(p.Tools(ctx, "alice", "dev", nil, cfg)))

	// Namespaced, with their schemas; the tool whose schema is a string
	// is refused and the others work.
	want := []string{"short__big", "short__echo", "short__grow", "short__progress", "short__wait", "srv__big", "srv__echo", "srv__grow", "srv__progress", "srv__wait"}
	if got := names(listed(p.Tools(ctx, "alice", "dev", nil, cfg))); !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	echo := ts["srv__echo"]
	if props, _ := echo.Parameters()["properties"].(map[string]any); props["text"] == nil || echo.Description() != "Echoes its text." {
		t.Fatalf("echo's schema %v, description %q", echo.Parameters(), echo.Description())
	}
	if out, err := echo.Execute(ctx, map[string]any{"text": "hi"}); err != nil || out != "echo: hi" {
		t.Fatalf("echo = %q, %v", out, err)
	}

	// Past the server's timeout the call fails, and the server goes on.
	if _, err := ts["short__wait"].Execute(ctx, nil); err == nil || !strings.Contains(err.Error(), "did not answer wait within 300ms") {
		t.Fatalf("wait = %v, want the timeout", err)
	}
	if out, err := echo.Execute(ctx, map[string]any{"text": "again"}); err != nil || out != "echo: again" {
		t.Fatalf("echo after the timeout = %q, %v", out, err)
	}

	// 10 MB come back capped to their head and tail.
	out, err := ts["srv__big"].Execute(ctx, map[string]any{"size": 10_000_000})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > DefaultMaxOutputChars+200 || !strings.HasPrefix(out, "BEGIN") || !strings.HasSuffix(out, "END") || !strings.Contains(out, "truncated 8") {
		t.Fatalf("big: %d characters, head %q, tail %q", len(out), out[:20], out[len(out)-20:])
	}

	// A list change is picked up by the next listing.
	if out, err := ts["srv__grow"].Execute(ctx, nil); err != nil || out != "added late" {
		t.Fatalf("grow = %q, %v", out, err)
	}
	// The next run's listing has the new tool.
	late := byName(listed(p.Tools(ctx, "alice", "dev", nil, cfg)))["srv__late"]
	if late == nil {
		t.Fatal("the new tool is not listed")
	}
	if out, err := late.Execute(ctx, nil); err != nil || out != "late tool answered" {
		t.Fatalf("late = %q, %v", out, err)
	}
}

// TestHTTPRefused: a server behind a missing header, or on an address the
// SSRF guard refuses, gives no tools and the agent runs without them.
func TestHTTPRefused(t *testing.T) {
	t.Parallel()
	url, _ := serveHTTP(t)
	for _, tc := range []struct {
		name    string
		client  *http.Client
		headers map[string]string
	}{
		{"no token", loopbackClient(), nil},
		{"loopback not allowed", tools.SafeHTTPClient(nil), map[string]string{"Authorization": "Bearer " + testToken}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPool(t, tc.client)
			cfg := []loop.MCPServerCfg{{Name: "srv", URL: url, Headers: tc.headers}}
			ts, down := p.Tools(testCtx(t), "alice", "dev", nil, cfg)
			if len(ts) != 0 {
				t.Fatalf("tools = %v, want none", names(ts))
			}
			if len(down) != 1 || down[0].Server != "srv" || down[0].Err == "" {
				t.Fatalf("unavailable = %+v, want srv with its error", down)
			}
		})
	}
}

// TestServerRestartedOnce: a server that stops is started again on the
// next call, once; after it stops again its calls are tool errors.
func TestServerRestartedOnce(t *testing.T) {
	t.Parallel()
	url, down := serveHTTP(t)
	ctx := testCtx(t)
	p := newPool(t, loopbackClient())
	cfg := []loop.MCPServerCfg{{Name: "srv", URL: url, Headers: map[string]string{"Authorization": "Bearer " + testToken}}}
	echo := byName(listed(p.Tools(ctx, "alice", "dev", nil, cfg)))["srv__echo"]
	if echo == nil {
		t.Fatal("no echo tool")
	}
	call := func() (string, error) { return echo.Execute(ctx, map[string]any{"text": "x"}) }
	if _, err := call(); err != nil {
		t.Fatal(err)
	}
	down.Store(true)
	if _, err := call(); err == nil || !strings.Contains(err.Error(), "started again on the next call") {
		t.Fatalf("call to a stopped server = %v", err)
	}
	down.Store(false)
	if out, err := call(); err != nil || out != "echo: x" {
		t.Fatalf("call after the restart = %q, %v", out, err)
	}
	down.Store(true)
	if _, err := call(); err == nil || !strings.Contains(err.Error(), "already restarted 1 time(s)") {
		t.Fatalf("second stop = %v", err)
	}
	down.Store(false)
	if _, err := call(); err == nil || !strings.Contains(err.Error(), "unavailable until the agent's configuration changes") {
		t.Fatalf("call after the second stop = %v, want a tool error", err)
	}
	// A changed configuration is a new server.
	cfg[0].Timeout = time.Minute
	echo = byName(listed(p.Tools(ctx, "alice", "dev", nil, cfg)))["srv__echo"]
	if out, err := call(); echo == nil || err != nil || out != "echo: x" {
		t.Fatalf("call with the new configuration = %q, %v", out, err)
	}
}

// TestIdleConnectionClosed: a connection no run used for the idle timeout
// is closed by the sweeper, and the next run connects again.
func TestIdleConnectionClosed(t *testing.T) {
	t.Parallel()
	url, _ := serveHTTP(t)
	ctx := testCtx(t)
	p := newPool(t, loopbackClient(), WithIdleTimeout(time.Millisecond))
	cfg := []loop.MCPServerCfg{{Name: "srv", URL: url, Headers: map[string]string{"Authorization": "Bearer " + testToken}}}
	if len(listed(p.Tools(ctx, "alice", "dev", nil, cfg))) == 0 {
		t.Fatal("no tools")
	}
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for open := 1; open > 0; {
		select {
		case <-ctx.Done():
			t.Fatal("the idle connection was never closed")
		case <-poll.C:
		}
		p.mu.Lock()
		open = len(p.servers)
		p.mu.Unlock()
	}
	echo := byName(listed(p.Tools(ctx, "alice", "dev", nil, cfg)))["srv__echo"]
	if out, err := echo.Execute(ctx, map[string]any{"text": "back"}); err != nil || out != "echo: back" {
		t.Fatalf("echo after the idle close = %q, %v", out, err)
	}
}

// BenchmarkHTTPCall is one echo call through the pool to the test server
// over streamable HTTP on loopback (the connection already open).
func BenchmarkHTTPCall(b *testing.B) {
	h := mcptest.Handler(mcptest.New(mcptest.Options{}), testToken)
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	p := New(nil, loopbackClient(), nil)
	b.Cleanup(p.Close)
	ctx := context.Background()
	cfg := []loop.MCPServerCfg{{Name: "srv", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer " + testToken}}}
	echo := byName(listed(p.Tools(ctx, "alice", "dev", nil, cfg)))["srv__echo"]
	if echo == nil {
		b.Fatal("no echo tool")
	}
	args := map[string]any{"text": "hi"}
	for b.Loop() {
		if _, err := echo.Execute(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}
