package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/runevent"
)

// runEvents is an SSE stream decoded: the frames and their StreamEvents.
type runEvents struct {
	frames []sseMessage
	events []*agentv1.StreamEvent
}

// frameEvent reads an SSE frame's data as a run event, typed payload and
// JSON data both, as a gRPC event reads in these tests (testenv.EventData).
func frameEvent(data string) (*agentv1.StreamEvent, error) {
	ev, err := runevent.UnmarshalEvent([]byte(data))
	if err != nil {
		return nil, err
	}
	return ev, runevent.FillData(ev)
}

func decodeRun(t testing.TB, frames []sseMessage) runEvents {
	t.Helper()
	r := runEvents{frames: frames}
	for i, f := range frames {
		ev, err := frameEvent(f.Data)
		if err != nil {
			t.Fatalf("frame %d data %q: %v", i, f.Data, err)
		}
		if f.ID != ev.GetId() || f.Event != ev.GetEvent() {
			t.Errorf("frame %d: id %q event %q, but its data says id %q event %q", i, f.ID, f.Event, ev.GetId(), ev.GetEvent())
		}
		r.events = append(r.events, ev)
	}
	return r
}

func (r runEvents) runID() string    { return r.events[0].GetRunId() }
func (r runEvents) threadID() string { return r.events[len(r.events)-1].GetThreadId() }

func (r runEvents) text() string {
	var b strings.Builder
	for _, ev := range r.events {
		if ev.GetEvent() == "on_chat_model_stream" {
			b.WriteString(ev.GetData().GetStructValue().GetFields()["delta"].GetStringValue())
		}
	}
	return b.String()
}

func (r runEvents) find(kind, name string) *agentv1.StreamEvent {
	for _, ev := range r.events {
		if ev.GetEvent() == kind && (name == "" || ev.GetName() == name) {
			return ev
		}
	}
	return nil
}

// joinRun reads a run's whole log straight from the agent service.
func joinRun(t testing.TB, env *wickEnv, user, runID, after string) []*agentv1.StreamEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(as(context.Background(), user), time.Minute)
	defer cancel()
	st, err := env.agent.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: runID, AfterEventId: after})
	if err != nil {
		t.Fatal(err)
	}
	var out []*agentv1.StreamEvent
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("JoinRun: %v", err)
		}
		out = append(out, m.GetEvent())
	}
}

// checkDemoRun checks a run of script:e2e: the model writes a file, runs a
// command that prints it, and answers.
func checkDemoRun(t testing.TB, r runEvents) {
	t.Helper()
	if len(r.events) < 5 {
		t.Fatalf("only %d events: %+v", len(r.events), r.frames)
	}
	if first := r.events[0].GetEvent(); first != "on_run_start" {
		t.Errorf("first event %q, want on_run_start", first)
	}
	last := r.events[len(r.events)-1]
	if last.GetEvent() != "done" || last.GetThreadId() == "" {
		t.Fatalf("last event %v, want done with a thread id", last)
	}
	if r.find("on_tool_start", "write_file") == nil || r.find("on_tool_end", "write_file") == nil {
		t.Errorf("no write_file tool events")
	}
	exec := r.find("on_tool_end", "execute")
	if exec == nil {
		t.Fatalf("no execute tool end")
	}
	if out, _ := json.Marshal(exec.GetData()); !strings.Contains(string(out), `wick e2e note`) {
		t.Errorf("execute output %s does not show the written file", out)
	}
	if !strings.Contains(r.text(), e2eAnswer) {
		t.Errorf("answer %q lacks %q", r.text(), e2eAnswer)
	}
	for _, ev := range r.events {
		if ev.GetEvent() == "error" {
			t.Errorf("error event: %v", ev)
		}
	}
}

func TestConversation(t *testing.T) {
	exp := installTracing()
	env := startWick(t)

	// A conversation over SSE, parsed by the test's own parser.
	resp := openSSE(t, t.Context(), "POST", env.url+"/agents/default/stream", aliceToken, jsonBody(userMessage("hello", nil)))
	for h, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("header %s = %q, want %q", h, got, want)
		}
	}
	run := decodeRun(t, readEvents(t, resp.Body))
	checkDemoRun(t, run)

	t.Run("SSE events equal the service's events one by one", func(t *testing.T) {
		want := joinRun(t, env, "alice", run.runID(), "")
		if len(want) != len(run.events) {
			t.Fatalf("SSE gave %d events, the run log has %d", len(run.events), len(want))
		}
		for i := range want {
			if !proto.Equal(run.events[i], want[i]) {
				t.Errorf("event %d: SSE %v, service %v", i, run.events[i], want[i])
			}
		}
	})

	t.Run("the written file is in the workspace", func(t *testing.T) {
		r := call(t, "GET", env.url+"/agents/default/files/raw/workspace/notes.txt", aliceToken, nil)
		if r.code != 200 || r.String() != "wick e2e note\n" {
			t.Fatalf("download = %d %q", r.code, r)
		}
	})

	t.Run("the thread continues in a second request", func(t *testing.T) {
		// No enqueue: the thread is free once "done" has been seen.
		r := call(t, "POST", env.url+"/agents/default/invoke", aliceToken, jsonBody(userMessage("and now?", map[string]any{"thread_id": run.threadID()})))
		if r.code != 200 {
			t.Fatalf("invoke = %d %s", r.code, r)
		}
		var inv struct {
			ThreadID string `json:"thread_id"`
			Content  string `json:"content"`
			Status   string `json:"status"`
		}
		if err := json.Unmarshal(r.body, &inv); err != nil {
			t.Fatal(err)
		}
		// A script plays the turn after the assistant messages the thread has.
		if inv.ThreadID != run.threadID() || inv.Content != e2eEndText {
			t.Fatalf("continued invoke = %+v", inv)
		}
		th := call(t, "GET", env.url+"/threads/"+run.threadID(), aliceToken, nil)
		if th.code != 200 || !strings.Contains(th.String(), `"content":"hello"`) || !strings.Contains(th.String(), `"content":"and now?"`) {
			t.Fatalf("thread = %d %s", th.code, th)
		}
		if !strings.Contains(th.String(), `"tool_calls"`) || !strings.Contains(th.String(), `"tool_call_id"`) {
			t.Errorf("thread JSON lacks proto-named tool fields: %s", th)
		}
	})

	t.Run("invoke answers with one JSON body", func(t *testing.T) {
		r := call(t, "POST", env.url+"/agents/default/invoke", aliceToken, jsonBody(userMessage("hello again", nil)))
		if r.code != 200 || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("invoke = %d %s", r.code, r)
		}
		var inv struct {
			Content  string            `json:"content"`
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(r.body, &inv); err != nil {
			t.Fatal(err)
		}
		if inv.Content != e2eAnswer || len(inv.Messages) < 5 {
			t.Fatalf("invoke content %q with %d messages", inv.Content, len(inv.Messages))
		}
	})

	t.Run("the run is one connected trace", func(t *testing.T) {
		checkTrace(t, exp, "POST /agents/{agent_id}/stream", run.runID(), []string{
			"wick.agent.v1.AgentService/Stream",
			"wick.llm.v1.LLMService/",
			"wick.sandbox.v1.SandboxService/",
		})
	})
}

// checkTrace finds a trace whose root is the gateway span named root and
// whose spans form one tree — every span's parent is in the trace — that
// reaches each of the wanted span-name prefixes, and returns its spans.
func checkTrace(t *testing.T, exp *tracetest.InMemoryExporter, root, runID string, want []string) []tracetest.SpanStub {
	t.Helper()
	var last string
	var found []tracetest.SpanStub
	waitFor(t, "a connected trace from the gateway", 15*time.Second, func() (bool, string) {
		all := exp.GetSpans()
		byTrace := map[trace.TraceID][]tracetest.SpanStub{}
		for _, s := range all {
			byTrace[s.SpanContext.TraceID()] = append(byTrace[s.SpanContext.TraceID()], s)
		}
		for _, s := range all {
			if s.Name != root || s.Parent.IsValid() {
				continue
			}
			tr := byTrace[s.SpanContext.TraceID()]
			if !hasRun(tr, runID) {
				continue
			}
			ok, state := connected(tr, want)
			last = state
			if ok {
				found = tr
				return true, ""
			}
		}
		return false, last
	})
	return found
}

// hasRun reports whether a span of the trace carries the run id, when the
// services record it; a trace without any run attribute is not excluded.
func hasRun(tr []tracetest.SpanStub, runID string) bool {
	anyRun := false
	for _, s := range tr {
		for _, a := range s.Attributes {
			if strings.Contains(string(a.Key), "run") {
				anyRun = true
				if a.Value.String() == runID {
					return true
				}
			}
		}
	}
	return !anyRun
}

func connected(tr []tracetest.SpanStub, want []string) (bool, string) {
	ids := map[trace.SpanID]bool{}
	for _, s := range tr {
		ids[s.SpanContext.SpanID()] = true
	}
	roots := 0
	var names []string
	for _, s := range tr {
		names = append(names, s.Name)
		if !s.Parent.IsValid() {
			roots++
			continue
		}
		if !ids[s.Parent.SpanID()] {
			return false, fmt.Sprintf("span %q has a parent outside the trace; spans: %v", s.Name, names)
		}
	}
	if roots != 1 {
		return false, fmt.Sprintf("%d roots; spans: %v", roots, names)
	}
	for _, w := range want {
		found := false
		for _, n := range names {
			if strings.HasPrefix(n, w) {
				found = true
			}
		}
		if !found {
			return false, fmt.Sprintf("no span %q; spans: %v", w, names)
		}
	}
	return true, ""
}

func TestRejoinAfterDisconnect(t *testing.T) {
	env := startWick(t)

	t.Run("a background run continues and is re-joined without loss", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		resp := openSSE(t, ctx, "POST", env.url+"/agents/default/stream", aliceToken, jsonBody(userMessage("hello", map[string]any{"background": true})))
		seen := readUntil(t, resp.Body, "on_tool_start")
		cancel() // the client goes away mid-run
		runID := decodeRun(t, seen).runID()

		rest := openSSE(t, t.Context(), "GET", env.url+"/runs/"+runID+"/events", aliceToken, nil, "Last-Event-ID", seen[len(seen)-1].ID)
		joined := append(seen, readEvents(t, rest.Body)...)
		run := decodeRun(t, joined)
		checkDemoRun(t, run)
		want := joinRun(t, env, "alice", runID, "")
		if len(want) != len(run.events) {
			t.Fatalf("re-joined stream has %d events, the run log %d", len(run.events), len(want))
		}
		for i := range want {
			if !proto.Equal(run.events[i], want[i]) {
				t.Fatalf("event %d: got %v, want %v", i, run.events[i], want[i])
			}
		}
	})

	t.Run("a client that goes away cancels its run", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		resp := openSSE(t, ctx, "POST", env.url+"/agents/default/stream", aliceToken, jsonBody(userMessage("hello", nil)))
		first, err := newEventStream(resp.Body).next()
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		runID := decodeRun(t, []sseMessage{first}).runID()
		waitFor(t, "the run to be cancelled", 30*time.Second, func() (bool, string) {
			r := call(t, "GET", env.url+"/runs/"+runID, aliceToken, nil)
			return strings.Contains(r.String(), `"status":"cancelled"`), r.String()
		})
	})
}

func TestTerminalWebSocket(t *testing.T) {
	env := startWick(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(env.url, "http")+"/agents/default/terminal?rows=30&cols=100",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + aliceToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"resize","rows":40,"cols":120}`)); err != nil {
		t.Fatal(err)
	}
	if err := conn.Write(ctx, websocket.MessageBinary, []byte("echo e2e-$((40+2))\n")); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for !strings.Contains(out.String(), "e2e-42") {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (output so far %q)", err, out.String())
		}
		if typ == websocket.MessageBinary {
			out.Write(b)
		}
	}
	if err := conn.Write(ctx, websocket.MessageBinary, []byte("exit 7\n")); err != nil {
		t.Fatal(err)
	}
	for {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("close: %v", err)
			}
			break
		}
		if typ == websocket.MessageText {
			if string(b) != `{"type":"exit","code":7}` {
				t.Fatalf("exit frame %s", b)
			}
		}
	}
}

func TestLargeFile(t *testing.T) {
	env := startWick(t)
	const size = 50 << 20
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	url := env.url + "/agents/default/files/raw/workspace/big.bin"
	req, _ := http.NewRequest("PUT", url, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), fmt.Sprintf(`"bytes_written":"%d"`, size)) {
		t.Fatalf("upload = %d %s", resp.StatusCode, b)
	}
	req, _ = http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil || resp.StatusCode != 200 || n != size {
		t.Fatalf("download = %d, %d bytes, %v", resp.StatusCode, n, err)
	}
	if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatal("downloaded bytes differ from the uploaded ones")
	}

	t.Run("over the limit is refused and nothing is written", func(t *testing.T) {
		big := io.LimitReader(zeroReader{}, 65<<20) // no Content-Length: cut while streaming
		req, _ := http.NewRequest("PUT", env.url+"/agents/default/files/raw/workspace/too-big.bin", big)
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413", resp.StatusCode)
		}
		if r := call(t, "GET", env.url+"/agents/default/files/raw/workspace/too-big.bin", aliceToken, nil); r.code != 404 {
			t.Fatalf("a refused upload left a file: %d", r.code)
		}
	})
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestUsersAreIsolated(t *testing.T) {
	env := startWick(t)
	// Alice's own agent, a thread and a file.
	if r := call(t, "POST", env.url+"/agents/", aliceToken, jsonBody(map[string]any{"agent_id": "alice-only", "model": e2eModel, "backend": map[string]any{"type": "local"}})); r.code != 200 {
		t.Fatalf("create = %d %s", r.code, r)
	}
	inv := call(t, "POST", env.url+"/agents/alice-only/invoke", aliceToken, jsonBody(userMessage("hello", nil)))
	var res struct {
		ThreadID string `json:"thread_id"`
		RunID    string `json:"run_id"`
	}
	if inv.code != 200 || json.Unmarshal(inv.body, &res) != nil || res.ThreadID == "" {
		t.Fatalf("invoke = %d %s", inv.code, inv)
	}

	for _, tc := range []struct{ method, path string }{
		{"GET", "/agents/alice-only"},
		{"DELETE", "/agents/alice-only"},
		{"POST", "/agents/alice-only/invoke"},
		{"GET", "/threads/" + res.ThreadID},
		{"GET", "/threads/" + res.ThreadID + "/tasks"},
		{"GET", "/runs/" + res.RunID},
		{"GET", "/agents/alice-only/files/raw/workspace/notes.txt"},
		{"GET", "/agents/alice-only/files/read?path=/workspace/notes.txt"},
	} {
		t.Run("bob "+tc.method+" "+tc.path, func(t *testing.T) {
			var body io.Reader
			if tc.method == "POST" {
				body = jsonBody(userMessage("hi", nil))
			}
			r := call(t, tc.method, env.url+tc.path, bobToken, body)
			if r.code != http.StatusNotFound {
				t.Fatalf("= %d %s, want 404", r.code, r)
			}
			if r := call(t, tc.method, env.url+tc.path, "", nil); r.code != http.StatusUnauthorized {
				t.Fatalf("without a token = %d, want 401", r.code)
			}
		})
	}
	t.Run("alice lists her thread's tasks", func(t *testing.T) {
		if r := call(t, "GET", env.url+"/threads/"+res.ThreadID+"/tasks", aliceToken, nil); r.code != http.StatusOK {
			t.Fatalf("= %d %s, want 200", r.code, r)
		}
	})
	t.Run("bob cannot open alice's terminal", func(t *testing.T) {
		_, resp, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(env.url, "http")+"/agents/alice-only/terminal",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + bobToken}}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("dial = %v %v, want 404", resp, err)
		}
	})
	t.Run("bob's default agent has its own workspace", func(t *testing.T) {
		if r := call(t, "PUT", env.url+"/agents/default/files/raw/workspace/secret.txt", aliceToken, strings.NewReader("alice's")); r.code != 200 {
			t.Fatalf("upload = %d %s", r.code, r)
		}
		if r := call(t, "GET", env.url+"/agents/default/files/raw/workspace/secret.txt", bobToken, nil); r.code != 404 {
			t.Fatalf("bob reads alice's file: %d %s", r.code, r)
		}
	})
	t.Run("bob cannot re-join alice's run", func(t *testing.T) {
		r := call(t, "GET", env.url+"/runs/"+res.RunID+"/events", bobToken, nil, "Accept", "text/event-stream")
		if r.code != http.StatusNotFound {
			t.Fatalf("= %d %s", r.code, r)
		}
	})
}

func TestRequestErrors(t *testing.T) {
	env := startWick(t)
	big := `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 5<<20) + `"}]}`
	long := strings.Repeat("a", 300)
	for _, tc := range []struct {
		name, method, path, token, body string
		code                            int
		in                              string
	}{
		{"no token", "GET", "/agents/", "", "", 401, "UNAUTHENTICATED"},
		{"bad token", "GET", "/agents/", "nope", "", 401, "UNAUTHENTICATED"},
		{"malformed JSON", "POST", "/agents/default/invoke", aliceToken, `{"messages": [`, 400, "malformed request body"},
		{"unknown field", "POST", "/agents/default/invoke", aliceToken, `{"mesages": []}`, 400, "mesages"},
		{"oversized body", "POST", "/agents/default/invoke", aliceToken, big, 413, "RESOURCE_EXHAUSTED"},
		{"unknown agent", "POST", "/agents/nobody/stream", aliceToken, `{"messages":[{"role":"user","content":"hi"}]}`, 404, "NOT_FOUND"},
		{"upload a 300-byte name", "PUT", "/agents/default/files/raw/workspace/" + long, aliceToken, "x", 400, "255 bytes per name"},
		{"download a 300-byte name", "GET", "/agents/default/files/raw/workspace/" + long, aliceToken, "", 400, "255 bytes per name"},
		{"write a 300-byte name", "PUT", "/agents/default/files/write", aliceToken, `{"path":"/workspace/` + long + `","content":"x"}`, 400, "255 bytes per name"},
		{"download invalid UTF-8", "GET", "/agents/default/files/raw/workspace/%ff%fe", aliceToken, "", 400, "path: not valid UTF-8"},
		{"upload invalid UTF-8", "PUT", "/agents/default/files/raw/workspace/%ff%fe", aliceToken, "x", 400, "path: not valid UTF-8"},
		{"read invalid UTF-8", "GET", "/agents/default/files/read?path=/workspace/%ff%fe", aliceToken, "", 400, "path: not valid UTF-8"},
		{"agent id invalid UTF-8", "GET", "/agents/%ff%fe", aliceToken, "", 400, "agent_id: not valid UTF-8"},
		{"health without a token", "GET", "/health", "", "", 200, `"sandbox":"SERVING"`},
		{"OpenAPI", "GET", "/openapi.json", "", "", 200, `/agents/{agent_id}/stream`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			r := call(t, tc.method, env.url+tc.path, tc.token, body, "Accept", "text/event-stream, application/json")
			if r.code != tc.code || !strings.Contains(r.String(), tc.in) {
				t.Fatalf("= %d %.300s, want %d with %q", r.code, r, tc.code, tc.in)
			}
		})
	}
}

func TestConfigEventStream(t *testing.T) {
	env := startWick(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	resp := openSSE(t, ctx, "GET", env.url+"/agents/events", aliceToken, nil)
	es := newEventStream(resp.Body)
	first, err := es.next()
	if err != nil {
		t.Fatal(err)
	}
	if first.ID == "" || first.Event == "" {
		t.Fatalf("first config event %+v", first)
	}
	if r := call(t, "POST", env.url+"/agents", aliceToken, jsonBody(map[string]any{"agent_id": "watched", "model": e2eModel})); r.code != 200 {
		t.Fatalf("create = %d %s", r.code, r)
	}
	for {
		ev, err := es.next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Event == "agent_created" {
			if !strings.Contains(ev.Data, `"agent_id":"watched"`) {
				t.Fatalf("agent_created data %s", ev.Data)
			}
			return
		}
	}
}
