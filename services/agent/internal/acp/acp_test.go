package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/wickfs"
)

// TestTurnMapping: each kind of session update and the events it sends.
func TestTurnMapping(t *testing.T) {
	t.Parallel()
	completed, failed := acpsdk.ToolCallStatusCompleted, acpsdk.ToolCallStatusFailed
	// ev is an event as clients see it.
	type ev struct {
		Event, Name string
		Data        map[string]any
	}
	for _, tc := range []struct {
		name    string
		updates []acpsdk.SessionUpdate
		want    []ev
		shown   bool
	}{
		{"message chunk", []acpsdk.SessionUpdate{acpsdk.UpdateAgentMessageText("hi")},
			[]ev{{Event: "on_chat_model_stream", Data: map[string]any{"delta": "hi"}}}, true},
		{"thought chunk", []acpsdk.SessionUpdate{acpsdk.UpdateAgentThoughtText("hmm")},
			[]ev{{Event: "on_thought_stream", Data: map[string]any{"delta": "hmm"}}}, true},
		{"tool call and its end", []acpsdk.SessionUpdate{
			acpsdk.StartToolCall("t1", "Read a.txt", acpsdk.WithStartKind(acpsdk.ToolKindRead), acpsdk.WithStartRawInput(map[string]any{"path": "a.txt"})),
			acpsdk.UpdateToolCall("t1", acpsdk.WithUpdateStatus(completed), acpsdk.WithUpdateContent([]acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock("abc"))})),
		}, []ev{
			{Event: "on_tool_start", Name: "read", Data: map[string]any{"args": map[string]any{"path": "a.txt"}, "title": "Read a.txt", "tool_call_id": "t1"}},
			{Event: "on_tool_end", Name: "read", Data: map[string]any{"output": "abc", "error": "", "tool_call_id": "t1"}},
		}, true},
		{"failed call, raw output, no title", []acpsdk.SessionUpdate{
			acpsdk.StartToolCall("t2", "", acpsdk.WithStartKind(acpsdk.ToolKindExecute), acpsdk.WithStartStatus(failed), acpsdk.WithStartRawOutput(map[string]any{"code": 1})),
		}, []ev{
			{Event: "on_tool_start", Name: "execute", Data: map[string]any{"tool_call_id": "t2"}},
			{Event: "on_tool_end", Name: "execute", Data: map[string]any{"output": "", "error": `{"code":1}`, "tool_call_id": "t2"}},
		}, true},
		{"update of a call never announced", []acpsdk.SessionUpdate{
			acpsdk.UpdateToolCall("t3", acpsdk.WithUpdateTitle("Fetch"), acpsdk.WithUpdateStatus(completed)),
		}, []ev{
			{Event: "on_tool_start", Name: "Fetch", Data: map[string]any{"title": "Fetch", "tool_call_id": "t3"}},
			{Event: "on_tool_end", Name: "Fetch", Data: map[string]any{"output": "", "error": "", "tool_call_id": "t3"}},
		}, true},
		{"plan", []acpsdk.SessionUpdate{acpsdk.UpdatePlan(
			acpsdk.PlanEntry{Content: "a", Status: acpsdk.PlanEntryStatusInProgress, Priority: acpsdk.PlanEntryPriorityHigh},
			acpsdk.PlanEntry{Content: "b", Status: acpsdk.PlanEntryStatusCompleted, Priority: acpsdk.PlanEntryPriorityLow},
		)}, []ev{{Event: "on_todos", Name: PlanToolName, Data: map[string]any{"todos": []any{
			map[string]any{"id": "plan-1", "title": "(high priority) a", "status": "in_progress"},
			map[string]any{"id": "plan-2", "title": "b", "status": "done"},
		}}}}, true},
		{"user message chunk", []acpsdk.SessionUpdate{acpsdk.UpdateUserMessageText("old")}, nil, false},
		{"unknown kind", []acpsdk.SessionUpdate{{}}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTurn()
			var got []ev
			shown := true
			for _, u := range tc.updates {
				evs, ok := tr.apply(u)
				shown = shown && ok
				for _, e := range evs {
					got = append(got, ev{e.Event(), e.Name, e.DataMap()})
				}
			}
			if shown != tc.shown || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("events %#v (shown %v)\nwant   %#v (shown %v)", got, shown, tc.want, tc.shown)
			}
		})
	}
}

// TestOpenCallsClosed: a call still open when the turn ends gets its end,
// and the thread gets each call with its result, then the answer.
func TestOpenCallsClosed(t *testing.T) {
	t.Parallel()
	tr := newTurn()
	tr.apply(acpsdk.StartToolCall("t1", "Run", acpsdk.WithStartStatus(acpsdk.ToolCallStatusInProgress)))
	tr.apply(acpsdk.UpdateAgentMessageText("partial"))
	ends := tr.closeOpen(loop.CancelledToolResult)
	if len(ends) != 1 || ends[0].Event() != "on_tool_end" || ends[0].DataMap()["error"] != loop.CancelledToolResult {
		t.Fatalf("ends %v", ends)
	}
	if again := tr.closeOpen("x"); len(again) != 0 {
		t.Fatalf("closed twice: %v", again)
	}
	msgs := tr.messages()
	if err := loop.Messages(append([]llm.Message{loop.Human("go")}, msgs...)).Validate(); err != nil {
		t.Fatalf("thread messages %v: %v", msgs, err)
	}
	if len(msgs) != 3 || msgs[1].Content != "Error: "+loop.CancelledToolResult || msgs[2].Content != "partial" {
		t.Fatalf("messages %v", msgs)
	}
}

// TestFilesConfined: the fs callbacks serve the workspace only.
func TestFilesConfined(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fs, err := wickfs.NewLocalFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	c := &client{ctx: context.Background(), files: fs, root: DefaultWorkspace, turn: newTurn(), logger: discard()}
	ctx := context.Background()
	if _, err := c.WriteTextFile(ctx, acpsdk.WriteTextFileRequest{Path: "/workspace/d/a.txt", Content: "1\n2\n3\n4\n"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.ReadTextFile(ctx, acpsdk.ReadTextFileRequest{Path: "/workspace/d/a.txt", Line: acpsdk.Ptr(2), Limit: acpsdk.Ptr(2)})
	if err != nil || res.Content != "2\n3" {
		t.Fatalf("read lines 2-3 = %q, %v", res.Content, err)
	}
	for _, tc := range []struct{ path, why string }{
		{"/etc/passwd", "only use paths under the workspace"},
		{"/workspacex/a", "only use paths under the workspace"},
		{"/workspace/../etc/passwd", "absolute and clean"},
		{"workspace/d/a.txt", "absolute and clean"},
		// Past the bridge's check, the sandbox's own confinement.
		{"/workspace/link/secret", "outside"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			_, rerr := c.ReadTextFile(ctx, acpsdk.ReadTextFileRequest{Path: tc.path})
			_, werr := c.WriteTextFile(ctx, acpsdk.WriteTextFileRequest{Path: tc.path, Content: "x"})
			for _, err := range []error{rerr, werr} {
				var re *acpsdk.RequestError
				if !errors.As(err, &re) || !strings.Contains(fmt.Sprint(re.Data), tc.why) {
					t.Fatalf("read %v, write %v: want JSON-RPC errors saying %q", rerr, werr, tc.why)
				}
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "s" {
		t.Fatalf("the file outside was written: %q", b)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestSummaryBounded: the priming summary keeps the end of a long thread,
// at most the bound, cut on a rune boundary.
func TestSummaryBounded(t *testing.T) {
	t.Parallel()
	var history []llm.Message
	for range 200 {
		history = append(history, loop.Human(strings.Repeat("é", 100)), llm.Message{Role: llm.RoleAssistant, Content: "ok"})
	}
	history = append(history, loop.Human("the last question"))
	// Four bounds: one of them falls inside a two-byte rune.
	for n := 1000; n < 1004; n++ {
		s := &session{r: New("a", &loop.AgentConfig{}, nil, nil, nil, nil, WithSummaryChars(n))}
		got := s.summary(history)
		body := got[strings.Index(got, "<transcript>\n")+len("<transcript>\n"):]
		if !utf8.ValidString(got) || len(body) > n+len("[the beginning of the conversation was omitted]\n</transcript>") ||
			!strings.Contains(got, "the last question") || !strings.Contains(got, "omitted") {
			t.Fatalf("summary bounded at %d: %d bytes, valid %v: %.200q", n, len(got), utf8.ValidString(got), got)
		}
	}
}

// fakeAgent is an in-process ACP peer whose capabilities and failures a
// test sets; it records the methods it receives.
type fakeAgent struct {
	load, resume bool
	failLoad     bool
	conn         *acpsdk.AgentSideConnection
	// badLines sends a line that is not JSON and an update of an unknown
	// kind before each prompt's answer, through raw.
	badLines bool
	raw      io.Writer
	// permission, when set, are the options of a permission request for
	// an edit the agent sends in each prompt; chosen records the answers.
	permission []acpsdk.PermissionOption
	chosen     []string

	mu      sync.Mutex
	methods []string
	prompts [][]acpsdk.ContentBlock
}

func (f *fakeAgent) record(m string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.methods = append(f.methods, m)
}

func (f *fakeAgent) Initialize(context.Context, acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
	f.record("initialize")
	caps := acpsdk.AgentCapabilities{LoadSession: f.load}
	if f.resume {
		caps.SessionCapabilities.Resume = &acpsdk.SessionResumeCapabilities{}
	}
	return acpsdk.InitializeResponse{ProtocolVersion: acpsdk.ProtocolVersionNumber, AgentCapabilities: caps, AuthMethods: []acpsdk.AuthMethod{}}, nil
}

func (f *fakeAgent) NewSession(context.Context, acpsdk.NewSessionRequest) (acpsdk.NewSessionResponse, error) {
	f.record("session/new")
	return acpsdk.NewSessionResponse{SessionId: "s-new"}, nil
}

func (f *fakeAgent) LoadSession(ctx context.Context, p acpsdk.LoadSessionRequest) (acpsdk.LoadSessionResponse, error) {
	f.record("session/load " + string(p.SessionId))
	if f.failLoad {
		return acpsdk.LoadSessionResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": "gone"})
	}
	// The replay is the thread's past: never shown again.
	_ = f.conn.SessionUpdate(ctx, acpsdk.SessionNotification{SessionId: p.SessionId, Update: acpsdk.UpdateAgentMessageText("replayed")})
	return acpsdk.LoadSessionResponse{}, nil
}

func (f *fakeAgent) ResumeSession(_ context.Context, p acpsdk.ResumeSessionRequest) (acpsdk.ResumeSessionResponse, error) {
	f.record("session/resume " + string(p.SessionId))
	return acpsdk.ResumeSessionResponse{}, nil
}

func (f *fakeAgent) Prompt(ctx context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	f.record("session/prompt " + string(p.SessionId))
	f.mu.Lock()
	f.prompts = append(f.prompts, p.Prompt)
	f.mu.Unlock()
	if f.badLines {
		_, _ = io.WriteString(f.raw, "this is not JSON-RPC\n")
		_, _ = io.WriteString(f.raw, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"`+string(p.SessionId)+`","update":{"sessionUpdate":"mystery_kind"}}}`+"\n")
	}
	if f.permission != nil {
		res, err := f.conn.RequestPermission(ctx, acpsdk.RequestPermissionRequest{SessionId: p.SessionId, Options: f.permission,
			ToolCall: acpsdk.ToolCallUpdate{ToolCallId: "t1", Title: acpsdk.Ptr("Edit a.txt"), Kind: acpsdk.Ptr(acpsdk.ToolKindEdit)}})
		chosen := "cancelled"
		if err == nil && res.Outcome.Selected != nil {
			chosen = string(res.Outcome.Selected.OptionId)
		}
		f.mu.Lock()
		f.chosen = append(f.chosen, chosen)
		f.mu.Unlock()
	}
	_ = f.conn.SessionUpdate(ctx, acpsdk.SessionNotification{SessionId: p.SessionId, Update: acpsdk.UpdateAgentMessageText("answer")})
	return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
}

func (f *fakeAgent) Authenticate(context.Context, acpsdk.AuthenticateRequest) (acpsdk.AuthenticateResponse, error) {
	return acpsdk.AuthenticateResponse{}, nil
}
func (f *fakeAgent) Cancel(context.Context, acpsdk.CancelNotification) error { return nil }
func (f *fakeAgent) CloseSession(context.Context, acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	return acpsdk.CloseSessionResponse{}, nil
}
func (f *fakeAgent) ListSessions(context.Context, acpsdk.ListSessionsRequest) (acpsdk.ListSessionsResponse, error) {
	return acpsdk.ListSessionsResponse{}, nil
}
func (f *fakeAgent) SetSessionMode(context.Context, acpsdk.SetSessionModeRequest) (acpsdk.SetSessionModeResponse, error) {
	return acpsdk.SetSessionModeResponse{}, nil
}
func (f *fakeAgent) SetSessionConfigOption(context.Context, acpsdk.SetSessionConfigOptionRequest) (acpsdk.SetSessionConfigOptionResponse, error) {
	return acpsdk.SetSessionConfigOptionResponse{}, nil
}

// pipeConn is the client's end of an in-process connection, as an agent
// process: closing or stopping it ends both directions.
type pipeConn struct {
	io.Reader
	io.Writer
	close func()
	once  *sync.Once
	done  chan struct{}
}

func (p pipeConn) Close() error {
	p.once.Do(func() { p.close(); close(p.done) })
	return nil
}
func (p pipeConn) Stop(time.Duration)    { _ = p.Close() }
func (p pipeConn) Done() <-chan struct{} { return p.done }
func (p pipeConn) StderrTail() string    { return "" }
func (p pipeConn) HostWorkdir() string   { return "" }

// start connects the runner to the agent over in-process pipes, as
// Runner.start starts a process.
func (f *fakeAgent) start(context.Context, context.Context) (agentProc, error) {
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	f.raw = toClientW
	f.conn = acpsdk.NewAgentSideConnection(f, toClientW, toAgentR)
	return pipeConn{Reader: toClientR, Writer: toAgentW, once: &sync.Once{}, done: make(chan struct{}), close: func() {
		toAgentW.Close()
		toClientW.Close()
	}}, nil
}

// TestRecoveryOrder: a thread's stored session is loaded when the agent
// can, else resumed, else replaced by a new session whose first prompt
// carries the thread's summary; a thread without history is not primed.
func TestRecoveryOrder(t *testing.T) {
	t.Parallel()
	history := []llm.Message{loop.Human("earlier question"), {Role: llm.RoleAssistant, Content: "earlier answer"}}
	for _, tc := range []struct {
		name        string
		agent       *fakeAgent
		stored      string
		history     []llm.Message
		wantMethods string
		wantPrimed  bool
		wantSession string
	}{
		{"load", &fakeAgent{load: true, resume: true}, "s-old", history, "initialize,session/load s-old,session/prompt s-old", false, "s-old"},
		{"resume without load", &fakeAgent{resume: true}, "s-old", history, "initialize,session/resume s-old,session/prompt s-old", false, "s-old"},
		{"load fails, then resume", &fakeAgent{load: true, resume: true, failLoad: true}, "s-old", history,
			"initialize,session/load s-old,session/resume s-old,session/prompt s-old", false, "s-old"},
		{"neither: new, primed", &fakeAgent{}, "s-old", history, "initialize,session/new,session/prompt s-new", true, "s-new"},
		{"load fails, no resume: new, primed", &fakeAgent{load: true, failLoad: true}, "s-old", history,
			"initialize,session/load s-old,session/new,session/prompt s-new", true, "s-new"},
		{"first message: new, not primed", &fakeAgent{load: true}, "", nil, "initialize,session/new,session/prompt s-new", false, "s-new"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fa := tc.agent
			cfg := &loop.AgentConfig{ACP: &loop.ACPCfg{Command: "agent"}, Backend: &loop.BackendCfg{Type: "docker"}}
			fs, err := wickfs.NewLocalFS(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			r := New("coder", cfg, nil, fs, nil, nil)
			r.start = fa.start
			st := &loop.AgentState{ThreadID: "th", Messages: append([]llm.Message(nil), tc.history...), ACPSessionID: tc.stored}
			var events []loop.StreamEvent
			err = r.Run(context.Background(), "run1", st, []llm.Message{loop.Human("new message")}, func(ev loop.StreamEvent) { events = append(events, ev) }, nil)
			if err != nil {
				t.Fatal(err)
			}
			fa.mu.Lock()
			methods, prompts := strings.Join(fa.methods, ","), fa.prompts
			fa.mu.Unlock()
			if methods != tc.wantMethods {
				t.Fatalf("methods %s, want %s", methods, tc.wantMethods)
			}
			first := prompts[0][0].Text.Text
			primed := strings.Contains(first, "<transcript>") && strings.Contains(first, "earlier answer")
			if primed != tc.wantPrimed || len(prompts[0]) != map[bool]int{true: 2, false: 1}[tc.wantPrimed] {
				t.Fatalf("prompt %v, primed %v", prompts[0], primed)
			}
			if st.ACPSessionID != tc.wantSession {
				t.Fatalf("stored session %q, want %q", st.ACPSessionID, tc.wantSession)
			}
			b, _ := json.Marshal(events)
			if strings.Contains(string(b), "replayed") || !strings.Contains(string(b), `"delta":"answer"`) || events[len(events)-1].Event() != "done" {
				t.Fatalf("events %s", b)
			}
			if got := st.Messages[len(st.Messages)-1]; got.Content != "answer" {
				t.Fatalf("thread ends with %v", got)
			}
		})
	}
}

// TestBadInputLogged: a line that is not JSON-RPC and an update of an
// unknown kind are logged, with the session id, and skipped; the turn goes
// on to its answer.
func TestBadInputLogged(t *testing.T) {
	t.Parallel()
	var logs testenv.LogBuffer
	fa := &fakeAgent{load: true}
	cfg := &loop.AgentConfig{ACP: &loop.ACPCfg{Command: "agent"}, Backend: &loop.BackendCfg{Type: "docker"}}
	fs, err := wickfs.NewLocalFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := New("coder", cfg, nil, fs, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	fa.badLines = true
	r.start = fa.start
	st := &loop.AgentState{ThreadID: "th", ACPSessionID: "s-old"}
	var events []loop.StreamEvent
	if err := r.Run(context.Background(), "run1", st, []llm.Message{loop.Human("go")}, func(ev loop.StreamEvent) { events = append(events, ev) }, nil); err != nil {
		t.Fatal(err)
	}
	if last := events[len(events)-1]; last.Event() != "done" {
		t.Fatalf("last event %v", last)
	}
	got := logs.String()
	for _, want := range []string{"this is not JSON-RPC", "ACP session update not shown", "update=unknown", "acp_session_id=s-old"} {
		if !strings.Contains(got, want) {
			t.Errorf("the log does not say %q:\n%s", want, got)
		}
	}
}

// fakeApprover decides every request with action, and counts the asks.
type fakeApprover struct {
	action string
	always bool
	err    error
	asked  int
}

func (f *fakeApprover) Approve(_ context.Context, call llm.ToolCall, announce func()) (loop.Decision, error) {
	f.asked++
	announce()
	return loop.Decision{ToolCallID: call.ID, Action: f.action, Always: f.always}, f.err
}

// TestPermissionOptions: the user's decision picks the offered option of
// its kind; an "always" decision picks the agent's always option when
// offered, else the once one, and is remembered either way, as is an
// answer offered only as "always"; a remembered answer is given to the
// next request of the kind without asking.
func TestPermissionOptions(t *testing.T) {
	t.Parallel()
	once := []acpsdk.PermissionOption{
		{OptionId: "a1", Kind: acpsdk.PermissionOptionKindAllowOnce}, {OptionId: "aa", Kind: acpsdk.PermissionOptionKindAllowAlways},
		{OptionId: "r1", Kind: acpsdk.PermissionOptionKindRejectOnce}, {OptionId: "ra", Kind: acpsdk.PermissionOptionKindRejectAlways},
	}
	always := []acpsdk.PermissionOption{{OptionId: "aa", Kind: acpsdk.PermissionOptionKindAllowAlways}, {OptionId: "ra", Kind: acpsdk.PermissionOptionKindRejectAlways}}
	onlyOnce := []acpsdk.PermissionOption{{OptionId: "a1", Kind: acpsdk.PermissionOptionKindAllowOnce}, {OptionId: "r1", Kind: acpsdk.PermissionOptionKindRejectOnce}}
	for _, tc := range []struct {
		name       string
		approver   *fakeApprover
		remembered map[string]string
		options    []acpsdk.PermissionOption
		want       string // the option chosen; "" for cancelled
		asked      int
		remember   string
	}{
		{"approve", &fakeApprover{action: loop.ActionApprove}, nil, once, "a1", 1, ""},
		{"edit approves", &fakeApprover{action: loop.ActionEdit}, nil, once, "a1", 1, ""},
		{"reject", &fakeApprover{action: loop.ActionReject}, nil, once, "r1", 1, ""},
		{"only always: approve remembered", &fakeApprover{action: loop.ActionApprove}, nil, always, "aa", 1, "allow_always"},
		{"only always: reject remembered", &fakeApprover{action: loop.ActionReject}, nil, always, "ra", 1, "reject_always"},
		{"remembered: not asked", &fakeApprover{action: loop.ActionReject}, map[string]string{"edit": "allow_always"}, once, "aa", 0, "allow_always"},
		{"always approve: allow_always picked, remembered", &fakeApprover{action: loop.ActionApprove, always: true}, nil, once, "aa", 1, "allow_always"},
		{"always edit approves", &fakeApprover{action: loop.ActionEdit, always: true}, nil, once, "aa", 1, "allow_always"},
		{"always approve, only once offered: once picked, remembered", &fakeApprover{action: loop.ActionApprove, always: true}, nil, onlyOnce, "a1", 1, "allow_always"},
		{"always reject: reject_always picked, remembered", &fakeApprover{action: loop.ActionReject, always: true}, nil, once, "ra", 1, "reject_always"},
		{"always reject, only once offered", &fakeApprover{action: loop.ActionReject, always: true}, nil, onlyOnce, "r1", 1, "reject_always"},
		{"remembered, only once offered: once given, not asked", &fakeApprover{action: loop.ActionReject}, map[string]string{"edit": "allow_always"}, onlyOnce, "a1", 0, "allow_always"},
		{"remembered reject: not asked", &fakeApprover{action: loop.ActionApprove}, map[string]string{"edit": "reject_always"}, once, "ra", 0, "reject_always"},
		{"remembered for another kind: asked", &fakeApprover{action: loop.ActionApprove}, map[string]string{"execute": "reject_always"}, once, "a1", 1, ""},
		{"autonomous", nil, nil, once, "a1", 0, ""},
		{"not answered", &fakeApprover{err: context.Canceled}, nil, once, "", 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var events []loop.StreamEvent
			c := &client{ctx: context.Background(), logger: discard(), turn: newTurn(), always: map[string]string{},
				emit: func(ev loop.StreamEvent) { events = append(events, ev) }}
			for k, v := range tc.remembered {
				c.always[k] = v
			}
			if tc.approver != nil {
				c.approver = tc.approver
			}
			res, err := c.RequestPermission(context.Background(), acpsdk.RequestPermissionRequest{
				SessionId: "s", Options: tc.options,
				ToolCall: acpsdk.ToolCallUpdate{ToolCallId: "t1", Title: acpsdk.Ptr("Edit a.txt"), Kind: acpsdk.Ptr(acpsdk.ToolKindEdit)},
			})
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if res.Outcome.Selected != nil {
				got = string(res.Outcome.Selected.OptionId)
			}
			asked := 0
			if tc.approver != nil {
				asked = tc.approver.asked
			}
			if got != tc.want || asked != tc.asked || c.always["edit"] != tc.remember || len(events) != asked {
				t.Fatalf("chose %q, asked %d, remembered %q, events %v; want %q, %d, %q", got, asked, c.always["edit"], events, tc.want, tc.asked, tc.remember)
			}
			if asked > 0 {
				data := events[0].DataMap()
				tcs := data["tool_calls"].([]any)
				if call := tcs[0].(map[string]any); events[0].Event() != "on_interrupt" || call["id"] != "t1" || call["name"] != "Edit a.txt" || data["always"] != true {
					t.Fatalf("interrupt %v", events[0])
				}
			}
			if tc.remember == "" || tc.want == "" {
				return
			}
			// The next request of the kind is answered without asking.
			before := asked
			res, err = c.RequestPermission(context.Background(), acpsdk.RequestPermissionRequest{
				SessionId: "s", Options: tc.options,
				ToolCall: acpsdk.ToolCallUpdate{ToolCallId: "t2", Title: acpsdk.Ptr("Edit b.txt"), Kind: acpsdk.Ptr(acpsdk.ToolKindEdit)},
			})
			if err != nil || res.Outcome.Selected == nil || string(res.Outcome.Selected.OptionId) != tc.want {
				t.Fatalf("second request: %v, %+v; want %q", err, res, tc.want)
			}
			if tc.approver != nil && tc.approver.asked != before || len(events) != before {
				t.Fatalf("second request asked again: %d asks, events %v", tc.approver.asked, events)
			}
		})
	}
}

// TestPermissionRememberedAcrossRuns: an "always" decision is kept in the
// thread's state the run saves; the next run on the thread, with a new
// agent process and a new client built from the state as loaded, answers
// the same kind of request without asking.
func TestPermissionRememberedAcrossRuns(t *testing.T) {
	t.Parallel()
	options := []acpsdk.PermissionOption{
		{OptionId: "a1", Kind: acpsdk.PermissionOptionKindAllowOnce}, {OptionId: "aa", Kind: acpsdk.PermissionOptionKindAllowAlways},
		{OptionId: "r1", Kind: acpsdk.PermissionOptionKindRejectOnce},
	}
	cfg := &loop.AgentConfig{ACP: &loop.ACPCfg{Command: "agent"}, Backend: &loop.BackendCfg{Type: "docker"}}
	fs, err := wickfs.NewLocalFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// run is one run on the thread whose state was saved as saved; it
	// returns what the run saved.
	run := func(saved []byte, approver *fakeApprover) ([]byte, *fakeAgent) {
		t.Helper()
		st := &loop.AgentState{}
		if err := json.Unmarshal(saved, st); err != nil {
			t.Fatal(err)
		}
		fa := &fakeAgent{load: true, permission: options}
		r := New("coder", cfg, nil, fs, approver, nil)
		r.start = fa.start
		var out []byte
		save := func(_ context.Context, s *loop.AgentState) error {
			b, err := json.Marshal(s)
			out = b
			return err
		}
		if err := r.Run(context.Background(), "run", st, []llm.Message{loop.Human("edit a.txt")}, func(loop.StreamEvent) {}, save); err != nil {
			t.Fatal(err)
		}
		return out, fa
	}
	first := &fakeApprover{action: loop.ActionApprove, always: true}
	saved, fa := run([]byte(`{"thread_id":"th"}`), first)
	if first.asked != 1 || strings.Join(fa.chosen, ",") != "aa" || !strings.Contains(string(saved), `"acp_always":{"edit":"allow_always"}`) {
		t.Fatalf("first run: asked %d, chosen %v, saved %s", first.asked, fa.chosen, saved)
	}
	second := &fakeApprover{action: loop.ActionReject}
	_, fa = run(saved, second)
	if second.asked != 0 || strings.Join(fa.chosen, ",") != "aa" {
		t.Fatalf("second run: asked %d, chosen %v; want no ask and aa", second.asked, fa.chosen)
	}
}

// TestTerminalArgv: a command alone is a shell line; with arguments it
// is a program.
func TestTerminalArgv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		command string
		args    []string
		want    []string
	}{
		{"echo hi > bash.txt; ls", nil, []string{"/bin/sh", "-c", "echo hi > bash.txt; ls"}},
		{"ls", []string{}, []string{"/bin/sh", "-c", "ls"}},
		{"sh", []string{"-c", "echo hi"}, []string{"sh", "-c", "echo hi"}},
	} {
		if got := terminalArgv(tc.command, tc.args); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("terminalArgv(%q, %q) = %q, want %q", tc.command, tc.args, got, tc.want)
		}
	}
}

// TestToolCallInputLater: as claude-code-acp sends a call (announced
// pending with {} and its tool name in _meta, then again with its input,
// then its result as raw content blocks), the start waits for the input,
// is named by the tool, shows the title, and the result is text.
func TestToolCallInputLater(t *testing.T) {
	t.Parallel()
	meta := map[string]any{"claudeCode": map[string]any{"toolName": "Write"}}
	tr := newTurn()
	announce := acpsdk.SessionUpdate{ToolCall: &acpsdk.SessionUpdateToolCall{ToolCallId: "w1", Title: "Write", Kind: acpsdk.ToolKindEdit,
		Status: acpsdk.ToolCallStatusPending, RawInput: map[string]any{}, Meta: meta}}
	if evs, _ := tr.apply(announce); len(evs) != 0 {
		t.Fatalf("a call without its input started: %v", evs)
	}
	full := announce
	full.ToolCall = &acpsdk.SessionUpdateToolCall{ToolCallId: "w1", Title: "Write /ws/a.txt", Kind: acpsdk.ToolKindEdit,
		Status: acpsdk.ToolCallStatusPending, RawInput: map[string]any{"file_path": "/ws/a.txt", "content": "hi"}, Meta: meta}
	evs, _ := tr.apply(full)
	if len(evs) != 1 || evs[0].Event() != "on_tool_start" || evs[0].Name != "Write" ||
		!reflect.DeepEqual(evs[0].DataMap()["args"], map[string]any{"file_path": "/ws/a.txt", "content": "hi"}) || evs[0].DataMap()["title"] != "Write /ws/a.txt" {
		t.Fatalf("start %v", evs)
	}
	done := acpsdk.UpdateToolCall("w1", acpsdk.WithUpdateStatus(acpsdk.ToolCallStatusCompleted),
		acpsdk.WithUpdateRawOutput([]any{map[string]any{"type": "text", "text": "File created"}, map[string]any{"type": "text", "text": "ok"}}))
	evs, _ = tr.apply(done)
	if len(evs) != 1 || evs[0].DataMap()["output"] != "File created\nok" {
		t.Fatalf("end %v", evs)
	}
	// An object output stays JSON.
	if got := outputText(map[string]any{"code": 1}); got != `{"code":1}` {
		t.Fatalf("object output %q", got)
	}
}

// TestHostPaths: on the local backend the agent may name the workspace by
// its host directory; it is mapped to the workspace and confined the same.
func TestHostPaths(t *testing.T) {
	t.Parallel()
	c := &client{root: "/workspace", hostRoot: "/srv/wick/local/k/workspace"}
	for _, tc := range []struct{ in, want string }{
		{"/srv/wick/local/k/workspace", "/workspace"},
		{"/srv/wick/local/k/workspace/a/b.txt", "/workspace/a/b.txt"},
		{"/workspace/a.txt", "/workspace/a.txt"},
		{"/srv/wick/local/k/workspacex/a", ""},
		{"/srv/wick/local/k", ""},
	} {
		got, err := c.checkPath(tc.in)
		if (err != nil) != (tc.want == "") || got != tc.want {
			t.Errorf("checkPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestPoolKeepsProcess: with a pool, the thread's second run reuses the
// process and its session (no initialize, no session/load); once the
// process has been idle too long it is stopped, and the next run starts a
// new one that loads the session.
func TestPoolKeepsProcess(t *testing.T) {
	t.Parallel()
	pool := NewPool(WithPoolIdle(time.Hour))
	t.Cleanup(pool.Close)
	cfg := &loop.AgentConfig{ACP: &loop.ACPCfg{Command: "agent"}, Backend: &loop.BackendCfg{Type: "docker"}}
	fs, err := wickfs.NewLocalFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fa := &fakeAgent{load: true}
	starts := 0
	st := &loop.AgentState{ThreadID: "th"}
	run := func(p *Pool) {
		t.Helper()
		r := New("coder", cfg, nil, fs, nil, nil, WithPool(p, "alice"))
		r.start = func(ctx, long context.Context) (agentProc, error) { starts++; return fa.start(ctx, long) }
		var last loop.StreamEvent
		if err := r.Run(context.Background(), "run", st, []llm.Message{loop.Human("go")}, func(ev loop.StreamEvent) { last = ev }, nil); err != nil {
			t.Fatal(err)
		}
		if last.Event() != "done" {
			t.Fatalf("last event %v", last)
		}
	}
	methods := func() string {
		fa.mu.Lock()
		defer fa.mu.Unlock()
		return strings.Join(fa.methods, ",")
	}
	run(pool)
	run(pool)
	if want := "initialize,session/new,session/prompt s-new,session/prompt s-new"; methods() != want || starts != 1 || pool.Len() != 1 {
		t.Fatalf("methods %s, %d starts, %d kept; want %s, 1 start, 1 kept", methods(), starts, pool.Len(), want)
	}
	// A thread changed elsewhere does not reuse the process.
	st.Messages = append(st.Messages, loop.Human("from another replica"), llm.Message{Role: llm.RoleAssistant, Content: "ok"})
	run(pool)
	if starts != 2 || !strings.HasSuffix(methods(), "initialize,session/load s-new,session/prompt s-new") {
		t.Fatalf("after the thread moved on: methods %s, %d starts", methods(), starts)
	}
	short := NewPool(WithPoolIdle(time.Millisecond))
	t.Cleanup(short.Close)
	run(short)
	testenv.Eventually(t, 5*time.Second, func() bool { return short.Len() == 0 }, "the idle process was not stopped")
	run(short)
	if starts != 4 || strings.Count(methods(), "session/load s-new") != 3 {
		t.Fatalf("after the idle time: methods %s, %d starts", methods(), starts)
	}
}
