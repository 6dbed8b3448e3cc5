package gateway_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/runevent"
	"github.com/wick-agent/wick/platform/server"
	"github.com/wick-agent/wick/services/gateway"
)

const (
	aliceToken = "tok-alice-0123456789"
	bobToken   = "tok-bob-0123456789"
)

type testEnv struct {
	url  string
	fake *fakeAgent
	gw   *gateway.Gateway
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startGateway runs the fake agent service on a real loopback gRPC server
// with identity verification, and the gateway in front of it.
func startGateway(t testing.TB, cfg gateway.Config, opts ...gateway.Option) *testEnv {
	t.Helper()
	if cfg.Tokens == nil && cfg.VerifierURL == "" {
		cfg.Tokens = map[string]string{aliceToken: "alice", bobToken: "bob"}
	}
	key := identity.RandomKey()
	fake := newFakeAgent()
	srv := server.New("agent", discardLogger(), server.WithIdentity(key), server.WithDrainDelay(0), server.WithShutdownTimeout(time.Second))
	agentv1.RegisterAgentServiceServer(srv.GRPC(), fake)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() { cancel(); <-served })

	conn, err := dial.New(lis.Addr().String(), dial.WithIdentity(key))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	opts = append([]gateway.Option{gateway.WithLogger(discardLogger()), gateway.WithHealthCheck("agent", conn)}, opts...)

	gw, err := gateway.New(cfg, conn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(gw)
	t.Cleanup(hs.Close)

	// Every user gets agent "a1".
	for _, tok := range []string{aliceToken, bobToken} {
		if cfg.Tokens[tok] == "" {
			continue
		}
		resp := do(t, hs.URL, tok, http.MethodPost, "/agents", `{"agent_id":"a1-`+cfg.Tokens[tok]+`","name":"A"}`)
		if resp.code != http.StatusOK {
			t.Fatalf("create agent: %d %s", resp.code, resp.body)
		}
	}
	return &testEnv{url: hs.URL, fake: fake, gw: gw}
}

type response struct {
	code   int
	header http.Header
	body   string
}

func do(t testing.TB, base, token, method, path, body string, hdr ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: string(b)}
}

type errBody struct {
	Code    int    `json:"code"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

func decodeErr(t *testing.T, r response) errBody {
	t.Helper()
	var e errBody
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatalf("error body %q is not JSON: %v", r.body, err)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	return e
}

func TestREST(t *testing.T) {
	t.Parallel()
	env := startGateway(t, gateway.Config{MaxBodyBytes: 1024})
	big := `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 2048) + `"}]}`
	tests := []struct {
		name, token, method, path, body string
		wantCode                        int
		wantStatus                      string // error status name, for errors
		wantIn                          string // substring of the body
	}{
		{"list with trailing slash", aliceToken, "GET", "/agents/", "", 200, "", `"agent_id":"a1-alice"`},
		{"list", aliceToken, "GET", "/agents", "", 200, "", `"agent_id":"a1-alice"`},
		{"list is per user", bobToken, "GET", "/agents", "", 200, "", `"agent_id":"a1-bob"`},
		{"create with trailing slash", aliceToken, "POST", "/agents/", `{"agent_id":"a2","max_turns":3,"backend":{"type":"local"}}`, 200, "", `"max_turns":3`},
		{"get", aliceToken, "GET", "/agents/a1-alice", "", 200, "", `"name":"A"`},
		{"other user's agent is not found", bobToken, "GET", "/agents/a1-alice", "", 404, "NOT_FOUND", `a1-alice`},
		{"invoke uses proto names", aliceToken, "POST", "/agents/a1-alice/invoke", `{"messages":[{"role":"user","content":"hi"}]}`, 200, "", `"tool_calls":[{"id":"call_1"`},
		{"missing token", "", "GET", "/agents", "", 401, "UNAUTHENTICATED", "missing bearer token"},
		{"bad token", "nope", "GET", "/agents", "", 401, "UNAUTHENTICATED", "invalid"},
		{"malformed JSON", aliceToken, "POST", "/agents/a1-alice/invoke", `{"messages":[`, 400, "INVALID_ARGUMENT", "malformed request body"},
		{"unknown field is named", aliceToken, "POST", "/agents/a1-alice/invoke", `{"mesages":[]}`, 400, "INVALID_ARGUMENT", `mesages`},
		{"wrong type is named", aliceToken, "POST", "/agents", `{"agent_id":"x","max_turns":"many"}`, 400, "INVALID_ARGUMENT", `max_turns`},
		{"validation error from the service", aliceToken, "POST", "/agents", `{"name":"no id"}`, 400, "INVALID_ARGUMENT", "agent_id is required"},
		{"oversized body", aliceToken, "POST", "/agents/a1-alice/invoke", big, 413, "RESOURCE_EXHAUSTED", "limit of 1024 bytes"},
		{"unknown API route", aliceToken, "GET", "/threads/x/nothing", "", 404, "NOT_FOUND", "no API route"},
		{"unimplemented RPC", aliceToken, "GET", "/threads", "", 501, "UNIMPLEMENTED", ""},
		{"wrong method", aliceToken, "PUT", "/agents/a1-alice/invoke", `{}`, 405, "UNIMPLEMENTED", "not allowed"},
		{"no route and no UI", "", "GET", "/nothing", "", 404, "NOT_FOUND", "no route"},
		{"health needs no token", "", "GET", "/health", "", 200, "", `"agent":"SERVING"`},
		{"health counts the caller's agents", aliceToken, "GET", "/health", "", 200, "", `"agents":`},
		{"openapi needs no token", "", "GET", "/openapi.json", "", 200, "", `"openapi": "3.1.0"`},
		{"metrics are not public by default", "", "GET", "/metrics", "", 404, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, env.url, tc.token, tc.method, tc.path, tc.body)
			if r.code != tc.wantCode {
				t.Fatalf("%s %s = %d %s, want %d", tc.method, tc.path, r.code, r.body, tc.wantCode)
			}
			if tc.wantStatus != "" {
				if e := decodeErr(t, r); e.Status != tc.wantStatus {
					t.Errorf("status = %q, want %q (body %s)", e.Status, tc.wantStatus, r.body)
				}
			}
			if !strings.Contains(r.body, tc.wantIn) {
				t.Errorf("body %s does not contain %q", r.body, tc.wantIn)
			}
		})
	}
	t.Run("401 says how to authenticate", func(t *testing.T) {
		r := do(t, env.url, "", "GET", "/agents", "")
		if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("WWW-Authenticate = %q", r.header.Get("WWW-Authenticate"))
		}
	})
	t.Run("a client cannot assert a user through metadata headers", func(t *testing.T) {
		r := do(t, env.url, bobToken, "GET", "/agents/a1-alice", "", "Grpc-Metadata-X-Wick-User", "alice")
		if r.code != http.StatusNotFound {
			t.Fatalf("got %d %s, want 404", r.code, r.body)
		}
	})
}

func TestAnonymousMode(t *testing.T) {
	t.Parallel()
	env := startGateway(t, gateway.Config{Tokens: map[string]string{}})
	if !env.gw.Anonymous() {
		t.Fatal("Anonymous() = false without tokens")
	}
	r := do(t, env.url, "", "POST", "/agents", `{"agent_id":"mine"}`)
	if r.code != 200 {
		t.Fatalf("create = %d %s", r.code, r.body)
	}
	if r := do(t, env.url, "", "GET", "/agents/mine", ""); r.code != 200 {
		t.Fatalf("get = %d %s", r.code, r.body)
	}
	// DNS rebinding: a foreign name pointed at the gateway's address.
	req, _ := http.NewRequest("GET", env.url+"/agents/mine", nil)
	req.Host = "evil.example.com"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("host evil.example.com = %d, want 403", resp.StatusCode)
	}
}

// openStream starts an SSE request and returns the response.
func openStream(t *testing.T, ctx context.Context, base, token, method, path, body string, hdr ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	sr := newSSEReader(r)
	var out []sseEvent
	for {
		ev, err := sr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
}

func TestSSEStream(t *testing.T) {
	t.Parallel()
	env := startGateway(t, gateway.Config{})
	resp := openStream(t, t.Context(), env.url, aliceToken, "POST", "/agents/a1-alice/stream", `{"messages":[{"role":"user","content":"tokens 5"}]}`)
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	for h, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	events := readAll(t, resp.Body)
	env.fake.mu.Lock()
	want := env.fake.runs["run1"]
	env.fake.mu.Unlock()
	if len(events) != len(want) || len(want) != 7 {
		t.Fatalf("got %d events, service sent %d (want 7)", len(events), len(want))
	}
	for i, ev := range events {
		if ev.ID != want[i].GetId() || ev.Event != want[i].GetEvent() {
			t.Errorf("event %d: id %q event %q, want %q %q", i, ev.ID, ev.Event, want[i].GetId(), want[i].GetEvent())
		}
		got, err := runevent.UnmarshalEvent([]byte(ev.Data))
		if err != nil {
			t.Fatalf("event %d data %q: %v", i, ev.Data, err)
		}
		if !protoEqual(got, want[i]) {
			t.Errorf("event %d data = %s, want %v", i, ev.Data, want[i])
		}
		if !strings.Contains(ev.Data, `"run_id":"run1"`) {
			t.Errorf("event %d data %s lacks proto-named run_id", i, ev.Data)
		}
	}
}

func TestSSEAcceptVariants(t *testing.T) {
	t.Parallel()
	env := startGateway(t, gateway.Config{})
	for _, accept := range []string{"text/event-stream", "text/event-stream, */*;q=0.8", "*/*", ""} {
		t.Run("accept "+accept, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), "POST", env.url+"/agents/a1-alice/stream", strings.NewReader(`{"messages":[{"role":"user","content":"tokens 1"}]}`))
			req.Header.Set("Authorization", "Bearer "+aliceToken)
			if accept != "" {
				req.Header.Set("Accept", accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("Content-Type = %q", ct)
			}
			if evs := readAll(t, resp.Body); len(evs) != 3 || evs[2].Event != "done" {
				t.Fatalf("events = %+v", evs)
			}
		})
	}
}

func TestSSEEarlyErrorIsPlainJSON(t *testing.T) {
	t.Parallel()
	env := startGateway(t, gateway.Config{})
	resp := openStream(t, t.Context(), env.url, bobToken, "POST", "/agents/a1-alice/stream", `{"messages":[{"role":"user","content":"tokens 1"}]}`)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status = %d %s, want 404", resp.StatusCode, b)
	}
	e := decodeErr(t, response{code: resp.StatusCode, header: resp.Header, body: string(b)})
	if e.Status != "NOT_FOUND" {
		t.Fatalf("error = %+v", e)
	}
}

func TestSSEMidStreamError(t *testing.T) {
	t.Parallel()
	env := startGateway(t, gateway.Config{})
	resp := openStream(t, t.Context(), env.url, aliceToken, "POST", "/agents/a1-alice/stream", `{"messages":[{"role":"user","content":"fail"}]}`)
	events := readAll(t, resp.Body)
	if len(events) != 2 || events[0].Event != "on_run_start" || events[1].Event != "error" {
		t.Fatalf("events = %+v", events)
	}
	var e errBody
	if err := json.Unmarshal([]byte(events[1].Data), &e); err != nil || e.Status != "INTERNAL" || e.Message != "internal error" {
		t.Fatalf("error frame %q: %+v %v", events[1].Data, e, err)
	}
}

func TestSSEHeartbeatAndDisconnect(t *testing.T) {
	t.Parallel()
	env := startGateway(t, gateway.Config{Heartbeat: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	resp := openStream(t, ctx, env.url, aliceToken, "POST", "/agents/a1-alice/stream", `{"messages":[{"role":"user","content":"block"}]}`)
	sr := newSSEReader(resp.Body)
	first, err := sr.Next()
	if err != nil || first.Event != "on_run_start" {
		t.Fatalf("first event %+v %v", first, err)
	}
	// The run is blocked: only heartbeats arrive.
	for {
		line, err := sr.line()
		if err != nil {
			t.Fatal(err)
		}
		if line == ": ping" {
			break
		}
		if line != "" {
			t.Fatalf("unexpected line %q while idle", line)
		}
	}
	// The client goes away: the service's stream must be cancelled.
	cancel()
	select {
	case run := <-env.fake.cancelled:
		if run != "run1" {
			t.Fatalf("cancelled %q", run)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent stream was not cancelled after the client left")
	}
}

func TestSSERejoin(t *testing.T) {
	t.Parallel()
	env := startGateway(t, gateway.Config{})
	resp := openStream(t, t.Context(), env.url, aliceToken, "POST", "/agents/a1-alice/stream", `{"messages":[{"role":"user","content":"tokens 4"}]}`)
	all := readAll(t, resp.Body)
	if len(all) != 6 {
		t.Fatalf("got %d events", len(all))
	}
	tests := []struct {
		name string
		path string
		hdr  []string
		from int
	}{
		{"Last-Event-ID header", "/runs/run1/events", []string{"Last-Event-ID", all[2].ID}, 3},
		{"after_event_id query", "/runs/run1/events?after_event_id=" + all[4].ID, nil, 5},
		{"from the start", "/runs/run1/events", nil, 0},
		{"token in the query (EventSource)", "/runs/run1/events?access_token=" + aliceToken, []string{"Last-Event-ID", all[0].ID}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := aliceToken
			if strings.Contains(tc.path, "access_token") {
				tok = ""
			}
			r := openStream(t, t.Context(), env.url, tok, "GET", tc.path, "", tc.hdr...)
			if r.StatusCode != 200 {
				b, _ := io.ReadAll(r.Body)
				t.Fatalf("status %d %s", r.StatusCode, b)
			}
			got := readAll(t, r.Body)
			want := all[tc.from:]
			if len(got) != len(want) {
				t.Fatalf("got %d events, want %d", len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("event %d = %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}
	t.Run("a retried POST with Last-Event-ID starts no second run", func(t *testing.T) {
		r := do(t, env.url, aliceToken, "POST", "/agents/a1-alice/stream", `{"messages":[{"role":"user","content":"tokens 1"}]}`, "Last-Event-ID", all[2].ID)
		if r.code != http.StatusBadRequest || !strings.Contains(r.body, "/runs/{run_id}/events") {
			t.Fatalf("= %d %s", r.code, r.body)
		}
	})
	t.Run("another user cannot join", func(t *testing.T) {
		r := openStream(t, t.Context(), env.url, bobToken, "GET", "/runs/run1/events", "")
		if r.StatusCode != http.StatusNotFound {
			t.Fatalf("status %d", r.StatusCode)
		}
	})
}

func TestConfigEvents(t *testing.T) {
	t.Parallel()
	env := startGateway(t, gateway.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	resp := openStream(t, ctx, env.url, aliceToken, "GET", "/agents/events", "")
	ev, err := newSSEReader(resp.Body).Next()
	if err != nil || ev.Event != "agent_created" || ev.ID != "1" || !strings.Contains(ev.Data, `"agent_id":"a1"`) {
		t.Fatalf("event %+v %v", ev, err)
	}
}

func TestFiles(t *testing.T) {
	t.Parallel()
	env := startGateway(t, gateway.Config{MaxUploadBytes: 8 << 20, UploadChunkBytes: 100 << 10})
	data := make([]byte, 5<<20+123)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	put := func(token, path string, body io.Reader, length int64) response {
		req, _ := http.NewRequest("PUT", env.url+path, body)
		req.Header.Set("Authorization", "Bearer "+token)
		req.ContentLength = length
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{code: resp.StatusCode, header: resp.Header, body: string(b)}
	}
	r := put(aliceToken, "/agents/a1-alice/files/raw/workspace/data.bin", bytes.NewReader(data), int64(len(data)))
	if r.code != 200 || !strings.Contains(r.body, `"bytes_written":"5243003"`) || !strings.Contains(r.body, `"path":"/workspace/data.bin"`) {
		t.Fatalf("upload = %d %s", r.code, r.body)
	}
	req, _ := http.NewRequest("GET", env.url+"/agents/a1-alice/files/raw/workspace/data.bin", nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(got, data) || resp.ContentLength != int64(len(data)) {
		t.Fatalf("download = %d, %d bytes (Content-Length %d), equal %v", resp.StatusCode, len(got), resp.ContentLength, bytes.Equal(got, data))
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("download lacks nosniff")
	}

	t.Run("too large by Content-Length", func(t *testing.T) {
		r := put(aliceToken, "/agents/a1-alice/files/raw/big1", bytes.NewReader(make([]byte, 9<<20)), 9<<20)
		if r.code != 413 {
			t.Fatalf("= %d %s", r.code, r.body)
		}
	})
	t.Run("too large while streaming writes nothing", func(t *testing.T) {
		// An unknown length (chunked) is cut off at the limit.
		r := put(aliceToken, "/agents/a1-alice/files/raw/big2", io.MultiReader(bytes.NewReader(make([]byte, 9<<20))), -1)
		if r.code != 413 {
			t.Fatalf("= %d %s", r.code, r.body)
		}
		if env.fake.hasFile("alice", "a1-alice", "/big2") {
			t.Fatal("a partial upload was written")
		}
	})
	t.Run("other user", func(t *testing.T) {
		r := do(t, env.url, bobToken, "GET", "/agents/a1-alice/files/raw/workspace/data.bin", "")
		if r.code != 404 {
			t.Fatalf("= %d %s", r.code, r.body)
		}
		r = put(bobToken, "/agents/a1-alice/files/raw/x", strings.NewReader("x"), 1)
		if r.code != 404 {
			t.Fatalf("upload = %d %s", r.code, r.body)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		r := do(t, env.url, aliceToken, "GET", "/agents/a1-alice/files/raw/nope", "")
		if e := decodeErr(t, r); r.code != 404 || e.Status != "NOT_FOUND" {
			t.Fatalf("= %d %s", r.code, r.body)
		}
	})
	t.Run("no token", func(t *testing.T) {
		if r := do(t, env.url, "", "GET", "/agents/a1-alice/files/raw/workspace/data.bin", ""); r.code != 401 {
			t.Fatalf("= %d", r.code)
		}
	})
}

func wsURL(base, path string) string { return "ws" + strings.TrimPrefix(base, "http") + path }

func TestTerminal(t *testing.T) {
	t.Parallel()
	env := startGateway(t, gateway.Config{CORSOrigins: []string{"https://ui.example.com"}})
	hdr := http.Header{"Authorization": {"Bearer " + aliceToken}}

	t.Run("session", func(t *testing.T) {
		conn, _, err := websocket.Dial(t.Context(), wsURL(env.url, "/agents/a1-alice/terminal?rows=30&cols=100"), &websocket.DialOptions{HTTPHeader: hdr})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.CloseNow()
		if sz := <-env.fake.resizes; sz.GetRows() != 30 || sz.GetCols() != 100 {
			t.Fatalf("start size %v", sz)
		}
		if err := conn.Write(t.Context(), websocket.MessageBinary, []byte("ls\n")); err != nil {
			t.Fatal(err)
		}
		typ, b, err := conn.Read(t.Context())
		if err != nil || typ != websocket.MessageBinary || string(b) != "echo:ls\n" {
			t.Fatalf("read %v %q %v", typ, b, err)
		}
		if err := conn.Write(t.Context(), websocket.MessageText, []byte(`{"type":"resize","rows":50,"cols":120}`)); err != nil {
			t.Fatal(err)
		}
		if sz := <-env.fake.resizes; sz.GetRows() != 50 || sz.GetCols() != 120 {
			t.Fatalf("resize %v", sz)
		}
		if err := conn.Write(t.Context(), websocket.MessageBinary, []byte("exit\n")); err != nil {
			t.Fatal(err)
		}
		typ, b, err = conn.Read(t.Context())
		if err != nil || typ != websocket.MessageText || string(b) != `{"type":"exit","code":3}` {
			t.Fatalf("exit frame %v %q %v", typ, b, err)
		}
		_, _, err = conn.Read(t.Context())
		if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
			t.Fatalf("close = %v", err)
		}
	})
	t.Run("client closes", func(t *testing.T) {
		conn, _, err := websocket.Dial(t.Context(), wsURL(env.url, "/agents/a1-alice/terminal"), &websocket.DialOptions{HTTPHeader: hdr})
		if err != nil {
			t.Fatal(err)
		}
		<-env.fake.resizes
		if err := conn.Close(websocket.StatusNormalClosure, "bye"); err != nil {
			t.Fatalf("close: %v", err)
		}
	})
	t.Run("bad control frame", func(t *testing.T) {
		conn, _, err := websocket.Dial(t.Context(), wsURL(env.url, "/agents/a1-alice/terminal"), &websocket.DialOptions{HTTPHeader: hdr})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.CloseNow()
		<-env.fake.resizes
		_ = conn.Write(t.Context(), websocket.MessageText, []byte(`{"type":"dance"}`))
		_, _, err = conn.Read(t.Context())
		if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
			t.Fatalf("close = %v", err)
		}
	})
	for _, tc := range []struct {
		name   string
		path   string
		hdr    http.Header
		status int
	}{
		{"other user", "/agents/a1-alice/terminal", http.Header{"Authorization": {"Bearer " + bobToken}}, 404},
		{"no token", "/agents/a1-alice/terminal", nil, 401},
		{"foreign origin", "/agents/a1-alice/terminal", http.Header{"Authorization": {"Bearer " + aliceToken}, "Origin": {"https://evil.example.com"}}, 403},
		{"bad size", "/agents/a1-alice/terminal?rows=0", hdr, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, resp, err := websocket.Dial(t.Context(), wsURL(env.url, tc.path), &websocket.DialOptions{HTTPHeader: tc.hdr})
			if err == nil || resp == nil || resp.StatusCode != tc.status {
				code := 0
				if resp != nil {
					code = resp.StatusCode
				}
				t.Fatalf("dial: status %d err %v, want %d", code, err, tc.status)
			}
		})
	}
	t.Run("allowed origin", func(t *testing.T) {
		h := http.Header{"Authorization": {"Bearer " + aliceToken}, "Origin": {"https://ui.example.com"}}
		conn, _, err := websocket.Dial(t.Context(), wsURL(env.url, "/agents/a1-alice/terminal"), &websocket.DialOptions{HTTPHeader: h})
		if err != nil {
			t.Fatal(err)
		}
		<-env.fake.resizes
		conn.Close(websocket.StatusNormalClosure, "")
	})
}

func TestCORS(t *testing.T) {
	t.Parallel()
	env := startGateway(t, gateway.Config{CORSOrigins: []string{"https://ui.example.com"}})
	r := do(t, env.url, "", "OPTIONS", "/agents", "", "Origin", "https://ui.example.com", "Access-Control-Request-Method", "POST")
	if r.code != 204 || r.header.Get("Access-Control-Allow-Origin") != "https://ui.example.com" {
		t.Fatalf("preflight = %d %v", r.code, r.header)
	}
	// Both places a browser client may put the token.
	for _, h := range []string{"Authorization", "X-Api-Key"} {
		if !strings.Contains(r.header.Get("Access-Control-Allow-Headers"), h) {
			t.Errorf("preflight allows headers %q, want %s among them", r.header.Get("Access-Control-Allow-Headers"), h)
		}
	}
	r = do(t, env.url, aliceToken, "GET", "/agents", "", "Origin", "https://evil.example.com")
	if r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("foreign origin allowed: %v", r.header)
	}
	r = do(t, env.url, aliceToken, "GET", "/agents", "", "Origin", "https://ui.example.com")
	if r.header.Get("Access-Control-Allow-Origin") != "https://ui.example.com" {
		t.Fatalf("allowed origin not marked: %v", r.header)
	}
	for _, tc := range []struct {
		origin string
		code   int
	}{
		{"https://evil.example.com", 403},
		{"https://ui.example.com", 200},
		{env.url, 200}, // same origin
		{"", 200},      // not a browser
	} {
		r := do(t, env.url, aliceToken, "POST", "/agents/a1-alice/invoke", `{"messages":[{"role":"user","content":"x"}]}`, "Origin", tc.origin)
		if r.code != tc.code {
			t.Errorf("POST from origin %q = %d %s, want %d", tc.origin, r.code, r.body, tc.code)
		}
	}
}

func TestUI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "index.html"), []byte("<html>app</html>"), 0o644))
	must(t, os.MkdirAll(filepath.Join(dir, "assets"), 0o755))
	for name, data := range map[string]string{"app-1a2b.js": "js", "app-1a2b.css": "css", "font-1a2b.woff2": "woff2", "logo-1a2b.svg": "<svg/>"} {
		must(t, os.WriteFile(filepath.Join(dir, "assets", name), []byte(data), 0o644))
	}
	must(t, os.WriteFile(filepath.Join(dir, "favicon.ico"), []byte("ico"), 0o644))
	env := startGateway(t, gateway.Config{UIDir: dir})
	const (
		html      = "text/html; charset=utf-8"
		noCache   = "no-cache"
		immutable = "public, max-age=31536000, immutable"
	)
	for _, tc := range []struct {
		path, want        string
		code              int
		contentType       string
		cacheControl      string
		cacheControlFixed bool
	}{
		{"/", "<html>app</html>", 200, html, noCache, true},
		{"/chat/123", "<html>app</html>", 200, html, noCache, true},
		{"/agents-view/x/y", "<html>app</html>", 200, html, noCache, true},
		{"/assets/app-1a2b.js", "js", 200, "text/javascript; charset=utf-8", immutable, true},
		{"/assets/app-1a2b.css", "css", 200, "text/css; charset=utf-8", immutable, true},
		{"/assets/font-1a2b.woff2", "woff2", 200, "font/woff2", immutable, true},
		{"/assets/logo-1a2b.svg", "<svg/>", 200, "image/svg+xml", immutable, true},
		// Outside assets/ a name carries no hash: the browser's heuristics apply.
		{"/favicon.ico", "ico", 200, "image/x-icon", "", true},
		{"/assets/missing.js", "NOT_FOUND", 404, "application/json", "", false},
		{"/../../etc/passwd", "<html>app</html>", 200, html, noCache, true},
	} {
		r := do(t, env.url, "", "GET", tc.path, "")
		if r.code != tc.code || !strings.Contains(r.body, tc.want) {
			t.Errorf("GET %s = %d %q", tc.path, r.code, r.body)
		}
		if got := r.header.Get("Content-Type"); got != tc.contentType {
			t.Errorf("GET %s: Content-Type %q, want %q", tc.path, got, tc.contentType)
		}
		if got := r.header.Get("Cache-Control"); tc.cacheControlFixed && got != tc.cacheControl {
			t.Errorf("GET %s: Cache-Control %q, want %q", tc.path, got, tc.cacheControl)
		}
	}
	// index.html revalidates: a conditional request is answered 304.
	r := do(t, env.url, "", "GET", "/", "")
	if lm := r.header.Get("Last-Modified"); lm == "" {
		t.Error("index.html has no Last-Modified to revalidate against")
	} else if r := do(t, env.url, "", "GET", "/", "", "If-Modified-Since", lm); r.code != http.StatusNotModified {
		t.Errorf("conditional GET / = %d, want 304", r.code)
	}
	// The API keeps its JSON 404s.
	if r := do(t, env.url, aliceToken, "GET", "/agents/a1-alice/nothing", ""); r.code != 404 || !strings.Contains(r.body, "NOT_FOUND") {
		t.Errorf("API 404 = %d %s", r.code, r.body)
	}
}

// TestNoUI: without a UI build a browser that opens the suite reads how to
// build one; every other unknown path stays a JSON 404.
func TestNoUI(t *testing.T) {
	t.Parallel()
	empty := t.TempDir() // a directory without index.html is no UI either
	for name, dir := range map[string]string{"no -ui-dir": "", "no index.html": empty, "missing directory": filepath.Join(empty, "nope")} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := startGateway(t, gateway.Config{UIDir: dir})
			r := do(t, env.url, "", "GET", "/", "")
			if r.code != 404 || !strings.Contains(r.body, "make ui") || !strings.Contains(r.body, "-ui-dir ui/dist") {
				t.Errorf("GET / = %d %q, want a page saying how to build the UI", r.code, r.body)
			}
			if ct := r.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("GET /: Content-Type %q", ct)
			}
			if r := do(t, env.url, "", "HEAD", "/", ""); r.code != 404 || r.body != "" {
				t.Errorf("HEAD / = %d %q", r.code, r.body)
			}
			if r := do(t, env.url, "", "GET", "/chat/1", ""); r.code != 404 || !strings.Contains(r.body, "NOT_FOUND") {
				t.Errorf("GET /chat/1 = %d %q, want a JSON 404", r.code, r.body)
			}
			if r := do(t, env.url, "", "POST", "/", "{}"); r.code != 404 || !strings.Contains(r.body, "NOT_FOUND") {
				t.Errorf("POST / = %d %q, want a JSON 404", r.code, r.body)
			}
		})
	}
}

func TestCheckUIDir(t *testing.T) {
	t.Parallel()
	good := t.TempDir()
	must(t, os.WriteFile(filepath.Join(good, "index.html"), []byte("<html></html>"), 0o644))
	for _, tc := range []struct {
		dir  string
		want string // in the error; "" when the directory is servable
	}{
		{good, ""},
		{"", "make ui"},
		{t.TempDir(), "has no index.html"},
		{filepath.Join(good, "missing"), "UI directory"},
	} {
		err := gateway.CheckUIDir(tc.dir)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckUIDir(%q) = %v", tc.dir, err)
		case tc.want != "" && (!errors.Is(err, gateway.ErrNoUI) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckUIDir(%q) = %v, want ErrNoUI saying %q", tc.dir, err, tc.want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestVerifier(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	verifier := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		switch r.Header.Get("Authorization") {
		case "Bearer ext-carol":
			_, _ = w.Write([]byte(`{"user":"carol"}`))
		case "Bearer ext-broken":
			w.WriteHeader(500)
		default:
			w.WriteHeader(401)
		}
	}))
	t.Cleanup(verifier.Close)
	env := startGateway(t, gateway.Config{VerifierURL: verifier.URL, Tokens: map[string]string{aliceToken: "alice"}})
	if r := do(t, env.url, "ext-carol", "POST", "/agents", `{"agent_id":"c"}`); r.code != 200 {
		t.Fatalf("carol create = %d %s", r.code, r.body)
	}
	if r := do(t, env.url, "ext-carol", "GET", "/agents/c", ""); r.code != 200 {
		t.Fatalf("carol get = %d %s", r.code, r.body)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("verifier asked %d times for one token, want 1 (cached)", n)
	}
	if r := do(t, env.url, "ext-nobody", "GET", "/agents", ""); r.code != 401 {
		t.Errorf("unknown token = %d", r.code)
	}
	if r := do(t, env.url, "ext-broken", "GET", "/agents", ""); r.code != 503 {
		t.Errorf("verifier failure = %d, want 503", r.code)
	}
	if r := do(t, env.url, aliceToken, "GET", "/agents", ""); r.code != 200 {
		t.Errorf("static token = %d", r.code)
	}
}

func TestLLMProxy(t *testing.T) {
	t.Parallel()
	var sawUser atomic.Value
	llm := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := identity.User(r.Context())
		sawUser.Store(u)
		_, _ = w.Write([]byte(`{"object":"list"}`))
	})
	env := startGateway(t, gateway.Config{}, gateway.WithLLMHandler(llm))
	if r := do(t, env.url, "", "GET", "/v1/models", ""); r.code != 401 {
		t.Fatalf("no token = %d", r.code)
	}
	if r := do(t, env.url, aliceToken, "GET", "/v1/models", ""); r.code != 200 || r.body != `{"object":"list"}` {
		t.Fatalf("models = %d %s", r.code, r.body)
	}
	if u := sawUser.Load(); u != "alice" {
		t.Fatalf("LLM handler saw user %v", u)
	}
}

func TestLLMReverseProxy(t *testing.T) {
	t.Parallel()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer llm-secret" || r.URL.Path != "/v1/chat/completions" {
			w.WriteHeader(401)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {}\n\ndata: [DONE]\n\n"))
	}))
	t.Cleanup(upstream.Close)
	env := startGateway(t, gateway.Config{LLMURL: upstream.URL, LLMToken: "llm-secret"})
	r := do(t, env.url, aliceToken, "POST", "/v1/chat/completions", `{"model":"x","stream":true}`)
	if r.code != 200 || r.body != "data: {}\n\ndata: [DONE]\n\n" {
		t.Fatalf("proxy = %d %q", r.code, r.body)
	}
}

// TestLLMProxySignsUser: the proxy to a separate LLM gateway signs the user
// it authenticated into the request (the LLM gateway verifies it with the
// suite's key), drops an identity the client made up, and takes the token
// from X-Api-Key, where Anthropic's clients send it.
func TestLLMProxySignsUser(t *testing.T) {
	t.Parallel()
	key := identity.RandomKey()
	seen := make(chan string, 4)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, err := key.FromHTTP(r)
		if err != nil {
			seen <- "error: " + err.Error()
			w.WriteHeader(401)
			return
		}
		user, _ := identity.User(ctx)
		seen <- user + " key=" + r.Header.Get("X-Api-Key")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(upstream.Close)
	env := startGateway(t, gateway.Config{LLMURL: upstream.URL}, gateway.WithIdentityKey(key))
	tests := []struct {
		name  string
		token string
		hdr   []string
		want  string
	}{
		{name: "bearer", token: aliceToken, want: "alice key="},
		{name: "x-api-key", hdr: []string{"X-Api-Key", bobToken}, want: "bob key="},
		{name: "client-made identity dropped", token: aliceToken, hdr: []string{"X-Wick-User", "bob", "X-Wick-User-Sig", "00"}, want: "alice key="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, env.url, tt.token, "POST", "/v1/messages", `{"model":"x"}`, tt.hdr...)
			if r.code != 200 {
				t.Fatalf("proxy = %d %q", r.code, r.body)
			}
			if got := <-seen; got != tt.want {
				t.Fatalf("upstream saw %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSpanNamesAreRoutes(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	env := startGateway(t, gateway.Config{}, gateway.WithTracerProvider(tp))
	resp := openStream(t, t.Context(), env.url, aliceToken, "POST", "/agents/a1-alice/stream", `{"messages":[{"role":"user","content":"tokens 1"}]}`)
	readAll(t, resp.Body)
	do(t, env.url, aliceToken, "GET", "/agents/a1-alice/files/raw/x/y", "")
	want := map[string]bool{"POST /agents/{agent_id}/stream": false, "GET /agents/{agent_id}/files/raw/{path...}": false, "POST /agents": false}
	for _, s := range exp.GetSpans() {
		if _, ok := want[s.Name]; ok {
			want[s.Name] = true
		}
	}
	for name, seen := range want {
		if !seen {
			var names []string
			for _, s := range exp.GetSpans() {
				names = append(names, s.Name)
			}
			t.Errorf("no span %q among %v", name, names)
		}
	}
}

func TestStreamAsJSONLines(t *testing.T) {
	t.Parallel()
	env := startGateway(t, gateway.Config{})
	r := do(t, env.url, aliceToken, "POST", "/agents/a1-alice/stream", `{"messages":[{"role":"user","content":"tokens 2"}]}`, "Accept", "application/json")
	lines := strings.Split(strings.TrimSpace(r.body), "\n")
	if r.code != 200 || len(lines) != 4 {
		t.Fatalf("= %d %q", r.code, r.body)
	}
	for _, l := range lines {
		var env struct {
			Result map[string]any `json:"result"`
		}
		if err := json.Unmarshal([]byte(l), &env); err != nil || env.Result["run_id"] != "run1" {
			t.Fatalf("line %q: %v", l, err)
		}
	}
}

// TestSSEForwardMetric: each event of a stream is observed in
// wick_gateway_sse_event_forward_seconds once its frame is flushed.
func TestSSEForwardMetric(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	env := startGateway(t, gateway.Config{}, gateway.WithRegistry(reg))
	resp := openStream(t, t.Context(), env.url, aliceToken, "POST", "/agents/a1-alice/stream", `{"messages":[{"role":"user","content":"tokens 5"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	events := readAll(t, resp.Body)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var count uint64
	for _, mf := range mfs {
		if mf.GetName() == "wick_gateway_sse_event_forward_seconds" {
			count = mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	if len(events) != 7 || count != uint64(len(events)) {
		t.Fatalf("%d events observed, %d sent", count, len(events))
	}
}

// TestPublicMetrics checks /metrics on the public listener: 404 unless the
// operator turns it on, then behind the metrics token when one is set (the
// users' bearer tokens do not open it).
func TestPublicMetrics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cfg      gateway.Config
		token    string
		wantCode int
	}{
		{"off by default", gateway.Config{}, "", 404},
		{"off by default, even with a user's token", gateway.Config{}, aliceToken, 404},
		{"on without a token", gateway.Config{PublicMetrics: true}, "", 200},
		{"on with a token, none sent", gateway.Config{PublicMetrics: true, MetricsToken: "scrape-secret"}, "", 401},
		{"on with a token, a user's sent", gateway.Config{PublicMetrics: true, MetricsToken: "scrape-secret"}, aliceToken, 401},
		{"on with a token, sent", gateway.Config{PublicMetrics: true, MetricsToken: "scrape-secret"}, "scrape-secret", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := startGateway(t, tc.cfg)
			r := do(t, env.url, tc.token, "GET", "/metrics", "")
			if r.code != tc.wantCode {
				t.Fatalf("GET /metrics = %d %s, want %d", r.code, r.body, tc.wantCode)
			}
			if tc.wantCode == 200 && !strings.Contains(r.body, "wick_gateway_http_requests_total") {
				t.Errorf("metrics body lacks wick_gateway_http_requests_total:\n%s", r.body)
			}
		})
	}
}
