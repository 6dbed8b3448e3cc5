package a2a_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/gateway/internal/a2a"
)

// newServer serves the handler over a fake agent service reached over
// gRPC, as the gateway reaches the real one; "Authorization: Bearer USER"
// names the user.
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	key := identity.RandomKey()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpc.UnaryInterceptor(key.UnaryServerInterceptor()), grpc.StreamInterceptor(key.StreamServerInterceptor()))
	agentv1.RegisterAgentServiceServer(srv, newFakeAgent())
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(key.UnaryClientInterceptor()), grpc.WithStreamInterceptor(key.StreamClientInterceptor()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	h := a2a.New(agentv1.NewAgentServiceClient(conn))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		h.ServeHTTP(w, r.WithContext(identity.WithUser(r.Context(), user)))
	}))
	t.Cleanup(ts.Close)
	return ts
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *a2a.Error      `json:"error"`
}

func post(t *testing.T, ts *httptest.Server, user, agent, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL+a2a.Prefix+agent, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+user)
	req.Header.Set("Content-Type", "application/json")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return resp, []byte(b.String())
}

func call(t *testing.T, ts *httptest.Server, user, agent, method string, params any) rpcResponse {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	resp, raw := post(t, ts, user, agent, string(body))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: HTTP %d: %s", method, resp.StatusCode, raw)
	}
	var out rpcResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %v: %s", method, err, raw)
	}
	return out
}

func textMessage(text string) map[string]any {
	return map[string]any{"kind": "message", "messageId": "m1", "role": "user", "parts": []any{map[string]any{"kind": "text", "text": text}}}
}

func task(t *testing.T, r rpcResponse) a2a.Task {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("error %d: %s", r.Error.Code, r.Error.Message)
	}
	var tk a2a.Task
	if err := json.Unmarshal(r.Result, &tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

func answer(tk a2a.Task) string {
	if len(tk.Artifacts) == 0 {
		return ""
	}
	return tk.Artifacts[len(tk.Artifacts)-1].Parts[0].Text
}

func TestErrors(t *testing.T) {
	t.Parallel()
	ts := newServer(t)
	done := task(t, call(t, ts, "alice", "helper", "message/send", map[string]any{"message": textMessage("hi")}))
	tests := []struct {
		name string
		user string
		body string
		code int
	}{
		{"not JSON", "alice", `{"jsonrpc":`, a2a.CodeParseError},
		{"batch", "alice", `[{"jsonrpc":"2.0","id":1,"method":"tasks/get"}]`, a2a.CodeInvalidRequest},
		{"wrong version", "alice", `{"jsonrpc":"1.0","id":1,"method":"tasks/get"}`, a2a.CodeInvalidRequest},
		{"no method", "alice", `{"jsonrpc":"2.0","id":1}`, a2a.CodeInvalidRequest},
		{"object id", "alice", `{"jsonrpc":"2.0","id":{},"method":"tasks/get"}`, a2a.CodeInvalidRequest},
		{"notification", "alice", `{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"x"}}`, a2a.CodeInvalidRequest},
		{"unknown method", "alice", `{"jsonrpc":"2.0","id":1,"method":"tasks/explode","params":{}}`, a2a.CodeMethodNotFound},
		{"no params", "alice", `{"jsonrpc":"2.0","id":1,"method":"message/send"}`, a2a.CodeInvalidParams},
		{"params of the wrong type", "alice", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":"hi"}}`, a2a.CodeInvalidParams},
		{"no message", "alice", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, a2a.CodeInvalidParams},
		{"agent role", "alice", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"agent","parts":[{"kind":"text","text":"x"}]}}}`, a2a.CodeInvalidParams},
		{"no text", "alice", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":" "}]}}}`, a2a.CodeInvalidParams},
		{"file part", "alice", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"uri":"http://x/y"}}]}}}`, a2a.CodeContentTypeNotSupported},
		{"unknown agent", "alice", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"x"}]}}}`, a2a.CodeTaskNotFound},
		{"another user's context", "alice", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","contextId":"th_9_bob","parts":[{"kind":"text","text":"x"}]}}}`, a2a.CodeTaskNotFound},
		{"task without id", "alice", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}}`, a2a.CodeInvalidParams},
		{"unknown task", "alice", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"run_999"}}`, a2a.CodeTaskNotFound},
		{"another user's task", "bob", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"` + done.ID + `"}}`, a2a.CodeTaskNotFound},
		{"another user's task cancelled", "bob", `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"id":"` + done.ID + `"}}`, a2a.CodeTaskNotFound},
		{"a completed task cancelled", "alice", `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"id":"` + done.ID + `"}}`, a2a.CodeTaskNotCancelable},
		{"a completed task answered", "alice", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","taskId":"` + done.ID + `","parts":[{"kind":"text","text":"x"}]}}}`, a2a.CodeInvalidParams},
		{"push notifications", "alice", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{}}`, a2a.CodePushNotSupported},
		{"stream of an unknown task", "alice", `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{"id":"run_999"}}`, a2a.CodeTaskNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			agent, wantHTTP := "helper", http.StatusOK
			if tt.name == "unknown agent" {
				// No endpoint for it: 404, as for its card.
				agent, wantHTTP = "nobody", http.StatusNotFound
			}
			resp, raw := post(t, ts, tt.user, agent, tt.body)
			if resp.StatusCode != wantHTTP {
				t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, wantHTTP, raw)
			}
			var out rpcResponse
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatalf("%v: %s", err, raw)
			}
			if out.Error == nil || out.Error.Code != tt.code {
				t.Fatalf("got %s, want error code %d", raw, tt.code)
			}
			if out.JSONRPC != "2.0" || out.Result != nil {
				t.Errorf("not a JSON-RPC error response: %s", raw)
			}
		})
	}
}

func TestAnotherAgentsTask(t *testing.T) {
	t.Parallel()
	ts := newServer(t)
	tk := task(t, call(t, ts, "alice", "helper", "message/send", map[string]any{"message": textMessage("hi")}))
	if r := call(t, ts, "alice", "other", "tasks/get", map[string]any{"id": tk.ID}); r.Error == nil || r.Error.Code != a2a.CodeTaskNotFound {
		t.Fatalf("a task of another agent: got %+v, want TaskNotFound", r)
	}
}

func TestStateOf(t *testing.T) {
	t.Parallel()
	for run, want := range map[string]string{
		"running": a2a.StateWorking, "waiting_approval": a2a.StateInputRequired, "done": a2a.StateCompleted,
		"cancelled": a2a.StateCanceled, "stopped": a2a.StateCanceled, "failed": a2a.StateFailed, "": a2a.StateFailed,
	} {
		if got := a2a.StateOf(run); got != want {
			t.Errorf("StateOf(%q) = %q, want %q", run, got, want)
		}
	}
}

func TestSend(t *testing.T) {
	t.Parallel()
	ts := newServer(t)
	tests := []struct {
		text, state, answer string
	}{
		{"hi", a2a.StateCompleted, "Hello"},
		{"tool", a2a.StateCompleted, "b"},
		{"fail", a2a.StateFailed, ""},
		{"ask", a2a.StateInputRequired, ""},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			t.Parallel()
			tk := task(t, call(t, ts, "alice", "helper", "message/send", map[string]any{"message": textMessage(tt.text)}))
			if tk.Kind != "task" || tk.ID == "" || tk.ContextID == "" || tk.Status.State != tt.state || answer(tk) != tt.answer {
				t.Fatalf("got %+v, want state %s and answer %q", tk, tt.state, tt.answer)
			}
			if len(tk.History) != 1 || tk.History[0].TaskID != tk.ID || tk.History[0].ContextID != tk.ContextID {
				t.Errorf("history = %+v, want the user's message in the task", tk.History)
			}
			got := task(t, call(t, ts, "alice", "helper", "tasks/get", map[string]any{"id": tk.ID}))
			if got.Status.State != tt.state || answer(got) != tt.answer || got.ContextID != tk.ContextID {
				t.Errorf("tasks/get = %+v, want the task as message/send answered it", got)
			}
		})
	}
}

func TestContextContinues(t *testing.T) {
	t.Parallel()
	ts := newServer(t)
	first := task(t, call(t, ts, "alice", "helper", "message/send", map[string]any{"message": textMessage("hi")}))
	m := textMessage("again")
	m["contextId"] = first.ContextID
	second := task(t, call(t, ts, "alice", "helper", "message/send", map[string]any{"message": m}))
	if second.ContextID != first.ContextID || second.ID == first.ID {
		t.Fatalf("second task %s in %s, want a new task in context %s", second.ID, second.ContextID, first.ContextID)
	}
}

func TestInputRequired(t *testing.T) {
	t.Parallel()
	ts := newServer(t)
	tk := task(t, call(t, ts, "alice", "helper", "message/send", map[string]any{"message": textMessage("ask")}))
	if tk.Status.Message == nil || tk.Status.Message.Parts[0].Text != "Which colour?" {
		t.Fatalf("status %+v, want the question", tk.Status)
	}
	m := textMessage("blue")
	m["taskId"], m["contextId"] = tk.ID, tk.ContextID
	done := task(t, call(t, ts, "alice", "helper", "message/send", map[string]any{"message": m}))
	if done.ID != tk.ID || done.Status.State != a2a.StateCompleted || answer(done) != "answer: blue" {
		t.Fatalf("got %+v, want the task completed with the answer", done)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	ts := newServer(t)
	tk := task(t, call(t, ts, "alice", "helper", "message/send", map[string]any{"message": textMessage("slow"), "configuration": map[string]any{"blocking": false}}))
	if tk.Status.State != a2a.StateWorking {
		t.Fatalf("state %s, want working", tk.Status.State)
	}
	got := task(t, call(t, ts, "alice", "helper", "tasks/cancel", map[string]any{"id": tk.ID}))
	if got.Status.State != a2a.StateCanceled {
		t.Fatalf("after tasks/cancel: %+v, want canceled", got.Status)
	}
}

// events reads the SSE frames of a streamed answer.
func events(t *testing.T, raw []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(string(raw), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var resp rpcResponse
		if err := json.Unmarshal([]byte(data), &resp); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		if resp.JSONRPC != "2.0" || resp.ID != float64(7) {
			t.Fatalf("frame is not the request's JSON-RPC response: %s", data)
		}
		var ev map[string]any
		if err := json.Unmarshal(resp.Result, &ev); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		out = append(out, ev)
	}
	return out
}

func TestStream(t *testing.T) {
	t.Parallel()
	ts := newServer(t)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "message/stream", "params": map[string]any{"message": textMessage("tool")}})
	resp, raw := post(t, ts, "alice", "helper", string(body))
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q: %s", ct, raw)
	}
	evs := events(t, raw)
	var kinds []string
	for _, e := range evs {
		k := e["kind"].(string)
		if k == "status-update" {
			k += ":" + e["status"].(map[string]any)["state"].(string)
		}
		kinds = append(kinds, k)
	}
	want := "task artifact-update status-update:working status-update:working artifact-update status-update:completed"
	if strings.Join(kinds, " ") != want {
		t.Fatalf("events %v, want %s", kinds, want)
	}
	if last := evs[len(evs)-1]; last["final"] != true {
		t.Errorf("last event %v is not final", last)
	}
	taskID := evs[0]["id"].(string)

	// Resubscribing replays the task to its end.
	body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tasks/resubscribe", "params": map[string]any{"id": taskID}})
	_, raw = post(t, ts, "alice", "helper", string(body))
	if again := events(t, raw); len(again) != len(evs) {
		t.Errorf("resubscribe sent %d events, want %d", len(again), len(evs))
	}

	// An error before the stream starts is a plain JSON-RPC error.
	body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "message/stream", "params": map[string]any{"message": textMessage("x")}})
	resp, raw = post(t, ts, "alice", "nobody", string(body))
	var out rpcResponse
	if err := json.Unmarshal(raw, &out); err != nil || out.Error == nil || out.Error.Code != a2a.CodeTaskNotFound || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("stream of an unknown agent: %s", raw)
	}
}

func TestCard(t *testing.T) {
	t.Parallel()
	ts := newServer(t)
	get := func(agent string) (*http.Response, a2a.AgentCard) {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+a2a.Prefix+agent+a2a.CardPath, nil)
		req.Header.Set("Authorization", "Bearer alice")
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var c a2a.AgentCard
		_ = json.NewDecoder(resp.Body).Decode(&c)
		return resp, c
	}
	resp, c := get("helper")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d", resp.StatusCode)
	}
	if c.Name != "Helper" || c.Description != "Helps with sums." || c.URL != ts.URL+a2a.Prefix+"helper" || !c.Capabilities.Streaming ||
		c.ProtocolVersion != a2a.ProtocolVersion || c.SecuritySchemes["bearer"].Scheme != "bearer" || len(c.Security) != 1 {
		t.Errorf("card %+v", c)
	}
	if len(c.Skills) != 3 || c.Skills[1].Description != "Evaluates arithmetic." || c.Skills[2].Name != "mystery" {
		t.Errorf("skills %+v, want chat and one per tool", c.Skills)
	}
	if resp, _ := get("nobody"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("card of an unknown agent: HTTP %d, want 404", resp.StatusCode)
	}
}
