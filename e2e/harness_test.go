package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/services/gateway"
	"github.com/wick-agent/wick/services/llmgw"
	"github.com/wick-agent/wick/services/sandbox"
	"github.com/wick-agent/wick/wickserver/suite"
)

// The scripted model of the tests and its replies.
const (
	e2eModel   = "script:e2e"
	e2eAnswer  = "Done: the note says wick e2e note."
	e2eEndText = "The e2e script has finished."
)

// Users of the end-to-end suites.
const (
	aliceToken = "e2e-alice-token-0123456789"
	bobToken   = "e2e-bob-token-0123456789"
)

var (
	traceOnce sync.Once
	spans     *tracetest.InMemoryExporter
)

// installTracing collects every span of the test binary in memory. All
// services run in this process and share the global provider, as each
// binary of a deployment has its own.
func installTracing() *tracetest.InMemoryExporter {
	traceOnce.Do(func() {
		spans = tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(spans)))
		otel.SetTracerProvider(tp)
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	})
	return spans
}

// wickEnv is a running suite and what tests need to reach it.
type wickEnv struct {
	url   string
	suite *suite.Suite
	// agent calls the agent service directly over gRPC, to compare what the
	// gateway serves with what the service sends.
	agent agentv1.AgentServiceClient
	// stop stops the suite before the test ends (it also stops then).
	stop func()
}

type suiteOption func(*suite.Config)

// scripts holds the script files the tests' models replay.
var scripts = map[string]string{
	// e2e: write a file, run a command that prints it, answer; then the end text.
	"e2e": `{"delay":"2ms","turns":[
		{"text":"I will write a note.","tool_calls":[{"name":"write_file","arguments":{"path":"/workspace/notes.txt","content":"wick e2e note\n"}}]},
		{"text":"Now I will read it back.","tool_calls":[{"name":"execute","arguments":{"command":"cat notes.txt"}}]},
		{"text":"` + e2eAnswer + `"}
	],"end_text":"` + e2eEndText + `"}`,
	// kb: one answer that cites the first injected source.
	"kb": `{"turns":[{"text":"According to [1], that is the answer."}],"end_text":"According to [1]."}`,
	// kbtool: searches the knowledge base itself, then answers.
	"kbtool": `{"turns":[
		{"tool_calls":[{"name":"search_knowledge","arguments":{"query":"who do I ask for parental leave?","k":2}}]},
		{"text":"Human resources."}]}`,
	// idle: a model that thinks for a minute before its first token (the
	// benchmark's idle open stream).
	"idle": `{"delay":"60s","turns":[{"text":"late"}],"end_text":"late"}`,
	// bench50: 50 tokens 20 ms apart, no tools (the benchmark's reply).
	"bench50": `{"delay":"20ms","turns":[{"text":"` + strings.TrimSpace(strings.Repeat("token ", 50)) + `"}],"end_text":"` + strings.TrimSpace(strings.Repeat("token ", 50)) + `"}`,
}

func writeScripts(t testing.TB) string {
	dir := t.TempDir()
	if err := writeScriptFiles(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeScriptFiles writes every script into dir.
func writeScriptFiles(dir string) error {
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// startWick starts the whole suite in this process, every service on its
// own loopback gRPC port, with the scripted demo model and two users.
func startWick(t testing.TB, opts ...suiteOption) *wickEnv {
	t.Helper()
	llmCfg := llmgw.DefaultConfig()
	llmCfg.ScriptDir = writeScripts(t)
	stateDir, err := os.MkdirTemp("", "wke") // short: sandbox sockets live here
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sandbox.RemoveStateDir(stateDir) })
	cfg := suiteConfig(&llmCfg, stateDir)
	cfg.AgentOptions = append(cfg.AgentOptions, agent.WithSecretsDir(writeSecrets(t)), agent.WithSecretGrantsFile(writeGrants(t)))
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := suite.Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("start the suite: %v", err)
	}
	stop := sync.OnceFunc(func() {
		cancel()
		_ = s.Wait()
	})
	t.Cleanup(stop)
	// Tests read a run event's data as JSON clients get it.
	conn, err := dial.New(s.Addrs["agent"], dial.WithIdentity(s.Key), dial.WithDialOption(testenv.EventData()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &wickEnv{url: s.HTTPURL, suite: s, agent: agentv1.NewAgentServiceClient(conn), stop: stop}
}

// testSecrets are the mounted secrets (-secrets-dir) of every suite these
// tests start, a file each, as a Kubernetes Secret volume holds them.
var testSecrets = map[string]string{
	"mcp-token": mcpToken + "\n",
	"acp-key":   acpMountedKey + "\n",
	// Named by no user's agent: only the operator's templates use it.
	"operator-key": operatorKey + "\n",
	"acme-key":     acmeKey + "\n",
}

func writeSecrets(t testing.TB) string {
	dir := t.TempDir()
	for name, v := range testSecrets {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// suiteConfig is the tests' suite: local sandboxes under stateDir, the
// scripted models of llmCfg, two users, nothing read from the environment.
func suiteConfig(llmCfg *llmgw.Config, stateDir string) suite.Config {
	cfg := suite.Config{
		HTTPAddr: "127.0.0.1:0",
		Model:    e2eModel,
		Backend:  backend.Local,
		LLM:      llmCfg,
		Gateway: gateway.Config{
			Tokens:         map[string]string{aliceToken: "alice", bobToken: "bob"},
			MaxUploadBytes: 64 << 20,
		},
		Logger:          quietLogger(),
		LookupEnv:       func(string) (string, bool) { return "", false },
		ShutdownTimeout: 5 * time.Second,
	}
	cfg.Sandbox.StateDir = stateDir
	cfg.Sandbox.AllowLocal = true // two users share local sandboxes
	return cfg
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// as returns a context that acts as user on direct gRPC calls.
func as(ctx context.Context, user string) context.Context { return identity.WithUser(ctx, user) }

type httpResult struct {
	code   int
	header http.Header
	body   []byte
}

func (r httpResult) String() string { return string(r.body) }

// call sends one request and reads the whole answer.
func call(t testing.TB, method, url, token string, body io.Reader, hdr ...string) httpResult {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
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
	return httpResult{code: resp.StatusCode, header: resp.Header, body: b}
}

func jsonBody(v any) io.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

func userMessage(text string, extra map[string]any) map[string]any {
	m := map[string]any{"messages": []map[string]string{{"role": "user", "content": text}}}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// openSSE starts an SSE request; the response is closed when the test ends.
func openSSE(t testing.TB, ctx context.Context, method, url, token string, body io.Reader, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s = %d %s", method, url, resp.StatusCode, b)
	}
	return resp
}

// sseMessage is one event dispatched by eventStream.
type sseMessage struct {
	ID, Event, Data string
}

// eventStream is an event-stream parser written from the HTML standard's
// "interpreting an event stream" (§9.2.6), independent of the gateway's
// writer: it reads lines ending in CRLF, LF or CR, ignores comment lines,
// drops one leading space from a field value, joins data lines with LF, and
// dispatches on a blank line.
type eventStream struct {
	r      *bufio.Reader
	lastID string
}

func newEventStream(r io.Reader) *eventStream { return &eventStream{r: bufio.NewReaderSize(r, 64<<10)} }

func (e *eventStream) readLine() (string, error) {
	var line []byte
	for {
		b, err := e.r.ReadByte()
		if err != nil {
			if len(line) > 0 && errors.Is(err, io.EOF) {
				return string(line), nil
			}
			return "", err
		}
		if b == '\n' {
			return string(line), nil
		}
		if b == '\r' {
			if nb, err := e.r.Peek(1); err == nil && nb[0] == '\n' {
				_, _ = e.r.ReadByte()
			}
			return string(line), nil
		}
		line = append(line, b)
	}
}

// next returns the next event, or io.EOF when the stream ends.
func (e *eventStream) next() (sseMessage, error) {
	var data []string
	typ := ""
	for {
		line, err := e.readLine()
		if err != nil {
			return sseMessage{}, err
		}
		switch {
		case line == "":
			if data == nil {
				typ = ""
				continue
			}
			if typ == "" {
				typ = "message"
			}
			return sseMessage{ID: e.lastID, Event: typ, Data: strings.Join(data, "\n")}, nil
		case line[0] == ':':
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			typ = value
		case "data":
			data = append(data, value)
		case "id":
			if !strings.ContainsRune(value, 0) {
				e.lastID = value
			}
		}
	}
}

// readUntil reads events up to and including the first of kind event, and
// leaves the rest of the stream unread.
func readUntil(t testing.TB, r io.Reader, event string) []sseMessage {
	t.Helper()
	return newEventStream(r).until(t, event)
}

// readEvents reads events until the stream ends.
func readEvents(t testing.TB, r io.Reader) []sseMessage {
	t.Helper()
	return newEventStream(r).rest(t)
}

// until reads events up to and including the first of kind event; the
// stream can be read on from there.
func (e *eventStream) until(t testing.TB, event string) []sseMessage {
	t.Helper()
	var out []sseMessage
	for {
		ev, err := e.next()
		if err != nil {
			t.Fatalf("read event stream before %q: %v", event, err)
		}
		out = append(out, ev)
		if ev.Event == event {
			return out
		}
	}
}

// rest reads events until the stream ends.
func (e *eventStream) rest(t testing.TB) []sseMessage {
	t.Helper()
	var out []sseMessage
	for {
		ev, err := e.next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read event stream: %v", err)
		}
		out = append(out, ev)
	}
}

// waitFor polls cond until it holds or d passes, and reports the state cond
// saw last; it is for state another process settles, which has no event to
// wait on.
func waitFor(t testing.TB, what string, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	var last lastState
	testenv.Eventually(t, d, func() bool {
		ok, state := cond()
		last = lastState(state)
		return ok
	}, "%s (last: %v)", what, &last)
}

// lastState is the last state a waitFor condition reported, read when a
// failure is formatted.
type lastState string

func (s *lastState) String() string { return string(*s) }
