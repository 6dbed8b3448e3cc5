package langgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/runevent"
)

func TestInputMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, input string
		want        []*agentv1.Message
		wantErr     string
	}{
		{"langchain dict", `{"messages":[{"type":"human","content":"hi"}]}`, []*agentv1.Message{{Role: "user", Content: "hi"}}, ""},
		{"openai dict and blocks", `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
			[]*agentv1.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "ab"}}, ""},
		{"bare string", `{"messages":["hello"]}`, []*agentv1.Message{{Role: "user", Content: "hello"}}, ""},
		{"null", `null`, nil, ""},
		{"ai message", `{"messages":[{"type":"ai","content":"x"}]}`, nil, `input.messages[0]: type "ai"`},
		{"image block", `{"messages":[{"type":"human","content":[{"type":"image_url"}]}]}`, nil, "only text blocks"},
		{"not an object", `[1]`, nil, "input must be an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := inputMessages(json.RawMessage(tt.input))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d messages, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i].GetRole() != tt.want[i].GetRole() || got[i].GetContent() != tt.want[i].GetContent() {
					t.Errorf("[%d] = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestDecisions(t *testing.T) {
	t.Parallel()
	args, _ := structpb.NewStruct(map[string]any{"path": "a"})
	two := []*agentv1.ToolCall{{Id: "c1", Name: "write_file", Args: args}, {Id: "c2", Name: "shell"}}
	ask := []*agentv1.ToolCall{{Id: "q1", Name: askUserTool}}
	tests := []struct {
		name    string
		pending []*agentv1.ToolCall
		resume  string
		want    string // action[:message] per call, comma-separated
		wantErr string
	}{
		{"approve all", two, `true`, "approve,approve", ""},
		{"reject all", two, `"reject"`, "reject,reject", ""},
		{"hitl decisions", two, `{"decisions":[{"type":"approve"},{"type":"reject","message":"no"}]}`, "approve,reject:no", ""},
		{"hitl edit", two, `{"decisions":[{"type":"edit","edited_action":{"name":"write_file","args":{"path":"b"}}},{"type":"approve"}]}`, "edit,approve", ""},
		{"agent inbox", two, `[{"type":"accept"},{"type":"response","args":"do it later"}]`, "approve,reject:do it later", ""},
		{"too few", two, `{"decisions":[{"type":"approve"}]}`, "", "1 decisions for 2"},
		{"unknown type", two, `{"decisions":[{"type":"maybe"},{"type":"approve"}]}`, "", `type "maybe"`},
		{"edit without args", two, `{"decisions":[{"type":"edit"},{"type":"approve"}]}`, "", "needs the new arguments"},
		{"answer", ask, `"blue"`, "answer:blue", ""},
		{"answer object", ask, `{"answer":"red"}`, "answer:red", ""},
		{"answer missing", ask, `{"x":1}`, "", "the answer"},
		{"nothing pending", nil, `true`, "", "no pending interrupt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ds, err := decisions(tt.pending, json.RawMessage(tt.resume))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, d := range ds {
				if d.GetToolCallId() != tt.pending[i].GetId() {
					t.Errorf("decision %d is for %s, want %s", i, d.GetToolCallId(), tt.pending[i].GetId())
				}
				s := d.GetAction()
				if d.GetMessage() != "" {
					s += ":" + d.GetMessage()
				}
				got = append(got, s)
			}
			if strings.Join(got, ",") != tt.want {
				t.Errorf("got %s, want %s", strings.Join(got, ","), tt.want)
			}
		})
	}
}

func ev(id, name, kind string, data any) *agentv1.StreamEvent {
	return &agentv1.StreamEvent{Id: id, Event: kind, Name: name, Payload: runevent.MustFromJSON(kind, data)}
}

// TestTranslator follows a run with a tool round through every mode and
// checks the state each values event carries and what ends the run.
func TestTranslator(t *testing.T) {
	t.Parallel()
	run := []*agentv1.StreamEvent{
		ev("1", "a", "on_run_start", map[string]any{"run_id": "r", "thread_id": "th"}),
		ev("2", "", "on_chat_model_stream", map[string]any{"delta": "Let me "}),
		ev("3", "", "on_chat_model_stream", map[string]any{"delta": "look."}),
		ev("4", "ls", "on_tool_start", map[string]any{"tool_call_id": "c1", "args": map[string]any{"path": "/"}}),
		ev("5", "ls", "on_tool_end", map[string]any{"tool_call_id": "c1", "output": "a.txt"}),
		ev("6", "", "on_usage", map[string]any{"input_tokens": 3}),
		ev("7", "", "on_chat_model_stream", map[string]any{"delta": "Found a.txt."}),
		ev("8", "", "done", map[string]any{"stop_reason": "completed"}),
	}
	tests := []struct {
		mode string
		want []string // frame events in order
	}{
		{modeValues, []string{"values", "values", "values"}},
		{modeMessagesTuple, []string{"messages", "messages", "messages", "messages", "messages"}},
		{modeUpdates, []string{"updates", "updates", "updates"}},
		{modeCustom, []string{"custom"}},
		{modeMessages, []string{"messages/metadata", "messages/partial", "messages/partial", "messages/partial", "messages/complete",
			"messages/metadata", "messages/complete", "messages/metadata", "messages/partial", "messages/complete"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			tr := newTranslator("th", "r", "a", map[string]bool{tt.mode: true}, values{Messages: []message{}})
			tr.addInput([]*agentv1.Message{{Role: "user", Content: "what is there?"}})
			var got []string
			ended := false
			for _, e := range run {
				fs, end, err := tr.event(e)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fs {
					got = append(got, f.event)
				}
				ended = end
			}
			if !ended {
				t.Error("done did not end the run")
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("frames %v, want %v", got, tt.want)
			}
			ms := tr.state.Messages
			types := []string{}
			for _, m := range ms {
				types = append(types, m.Type)
			}
			if strings.Join(types, ",") != "human,ai,tool,ai" || ms[1].Content != "Let me look." || len(ms[1].ToolCalls) != 1 ||
				ms[2].ToolCallID != "c1" || ms[3].Content != "Found a.txt." || ms[3].ID != "th:3" {
				t.Errorf("state %+v", ms)
			}
		})
	}
}

func TestTranslatorInterruptAndError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		event *agentv1.StreamEvent
		last  string
		check func(t *testing.T, f frame)
	}{
		{"approval", ev("9", "", "on_interrupt", map[string]any{"tool_calls": []any{map[string]any{"id": "c1", "name": "write_file", "args": map[string]any{}}}}),
			"values", func(t *testing.T, f frame) {
				v := f.data.(values)
				if len(v.Interrupt) != 1 || v.Interrupt[0].ID != "r@9" || v.Interrupt[0].Value.(approvalValue).ActionRequests[0].Name != "write_file" {
					t.Errorf("interrupt %+v", v.Interrupt)
				}
				if len(v.Messages) != 2 || v.Messages[1].ToolCalls[0].ID != "c1" {
					t.Errorf("messages %+v", v.Messages)
				}
			}},
		{"question", ev("9", "", "on_interrupt", map[string]any{"kind": "question", "question": "Which?", "choices": []any{"a"}, "tool_call_id": "q1",
			"tool_calls": []any{map[string]any{"id": "q1", "name": "ask_user", "args": map[string]any{}}}}),
			"values", func(t *testing.T, f frame) {
				if q := f.data.(values).Interrupt[0].Value.(questionValue); q.Question != "Which?" || q.ToolCallID != "q1" {
					t.Errorf("question %+v", q)
				}
			}},
		{"error", ev("9", "", "error", map[string]any{"message": "run cancelled", "code": "cancelled"}),
			"error", func(t *testing.T, f frame) {
				if d := f.data.(map[string]string); d["error"] != "CancelledError" || d["message"] != "run cancelled" {
					t.Errorf("error %v", d)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := newTranslator("th", "r", "a", map[string]bool{modeValues: true}, values{Messages: []message{}})
			tr.addInput([]*agentv1.Message{{Role: "user", Content: "go"}})
			fs, end, err := tr.event(tt.event)
			if err != nil || !end || len(fs) == 0 {
				t.Fatalf("frames %v, end %v, err %v", fs, end, err)
			}
			f := fs[len(fs)-1]
			if f.event != tt.last {
				t.Fatalf("last frame %s, want %s", f.event, tt.last)
			}
			tt.check(t, f)
		})
	}
}

func TestStreamModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw     string
		want    string
		wantErr bool
	}{
		{``, "values", false},
		{`"updates"`, "updates", false},
		{`["messages-tuple","values","debug"]`, "messages-tuple,values", false},
		{`["nope"]`, "", true},
		{`3`, "", true},
	}
	for _, tt := range tests {
		m, err := streamModes(json.RawMessage(tt.raw))
		if (err != nil) != tt.wantErr {
			t.Fatalf("%s: err %v", tt.raw, err)
		}
		for _, k := range strings.Split(tt.want, ",") {
			if k != "" && !m[k] {
				t.Errorf("%s: mode %s missing from %v", tt.raw, k, m)
			}
		}
		if !tt.wantErr && len(m) != len(strings.Split(tt.want, ",")) {
			t.Errorf("%s: modes %v, want %s", tt.raw, m, tt.want)
		}
	}
}

// fakeAgent answers every RPC the error paths reach with its error.
type fakeAgent struct {
	AgentClient
	err error
}

func (f fakeAgent) GetAgent(context.Context, *agentv1.GetAgentRequest, ...grpc.CallOption) (*agentv1.GetAgentResponse, error) {
	return nil, f.err
}

func (f fakeAgent) GetThread(context.Context, *agentv1.GetThreadRequest, ...grpc.CallOption) (*agentv1.GetThreadResponse, error) {
	return nil, f.err
}

func (f fakeAgent) GetRun(context.Context, *agentv1.GetRunRequest, ...grpc.CallOption) (*agentv1.GetRunResponse, error) {
	return nil, f.err
}

// TestErrorShape checks that every failure is LangGraph's {"detail"} with
// the status its clients expect, and that internals stay out of it.
func TestErrorShape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, path, body string
		err                      error
		status                   int
		detail                   string
	}{
		{"unknown assistant", "GET", "/assistants/nope", "", status.Error(codes.NotFound, "agent nope not found"), 404, "agent nope not found"},
		{"another user's thread", "GET", "/threads/t1", "", status.Error(codes.PermissionDenied, "owned by bob"), 404, "not found"},
		{"unknown run", "GET", "/threads/t1/runs/r1", "", status.Error(codes.NotFound, "run r1 not found"), 404, "run r1 not found"},
		{"internal", "GET", "/threads/t1/state", "", status.Error(codes.Internal, "dial 10.0.0.3: refused"), 500, "internal error"},
		{"unknown path", "GET", "/crons", "", nil, 404, "Not Found"},
		{"wrong method", "PUT", "/threads/t1", "", nil, 405, "Method Not Allowed"},
		{"malformed body", "POST", "/threads/t1/runs/wait", "{", nil, 422, "malformed JSON body"},
		{"no assistant", "POST", "/threads/t1/runs/wait", `{"input":{"messages":["x"]}}`, nil, 422, "assistant_id is required"},
		{"bad mode", "POST", "/runs/stream", `{"assistant_id":"a","stream_mode":"x","input":{"messages":["x"]}}`, nil, 422, `stream_mode "x"`},
		{"goto", "POST", "/threads/t1/runs/stream", `{"assistant_id":"a","command":{"goto":"agent"}}`, nil, 422, "only resume"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := New(fakeAgent{err: tt.err})
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(tt.method, tt.path, bytes.NewBufferString(tt.body))
			h.ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Errorf("status %d, want %d (%s)", rec.Code, tt.status, rec.Body)
			}
			var body map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || len(body) != 1 || !strings.Contains(body["detail"], tt.detail) {
				t.Errorf("body %s, want detail with %q", rec.Body, tt.detail)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
		})
	}
	_ = http.StatusOK
}
