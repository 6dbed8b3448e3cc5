// Command acp-test-agent is the ACP agent the tests run inside a sandbox:
// the agent side of github.com/coder/acp-go-sdk over stdin and stdout, with
// behaviour chosen by the prompt's last line (see prompt). It keeps its
// sessions in files under $HOME/sessions, so that session/load works
// across processes, and appends every method it receives to $HOME/calls.log,
// which the tests read to see what the client did. With ACPTEST_NO_LOAD=1
// it advertises neither session/load nor session/resume.
//
// Two switches make it end as real coding agents do. ACPTEST_SAVE_ON_EXIT=1
// keeps sessions in memory and writes their files only when it exits
// gracefully, at the end of its stdin or on SIGTERM, as Claude Code writes
// its session file: a client that kills it at once loses the session.
// ACPTEST_IGNORE_EOF=1 does not end at the end of its stdin but waits for
// SIGTERM, as Claude Code's ACP adapter does. With either, how it ended is
// the last line of calls.log ("exit stdin-eof" or "exit sigterm").
//
// ACPTEST_FAIL_INIT=<n> makes initialize write a first line, n bytes of "é"
// (n/2 characters) and "the last words." to its standard error and exit
// with code 4, as an agent that cannot start.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

func main() {
	home := os.Getenv("HOME")
	if home == "" {
		fmt.Fprintln(os.Stderr, "acp-test-agent: HOME is not set")
		os.Exit(2)
	}
	if err := os.MkdirAll(filepath.Join(home, "sessions"), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "acp-test-agent:", err)
		os.Exit(2)
	}
	// SIGTERM is caught before anything is served, so a stop that comes
	// early is not the default action's (an exit without saving).
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	out := &lockedWriter{w: os.Stdout}
	a := &agent{home: home, out: out, noLoad: os.Getenv("ACPTEST_NO_LOAD") == "1"}
	if os.Getenv("ACPTEST_SAVE_ON_EXIT") == "1" {
		a.memory = map[acp.SessionId][]turnEntry{}
	}
	a.failInit, _ = strconv.Atoi(os.Getenv("ACPTEST_FAIL_INIT"))
	a.conn = acp.NewAgentSideConnection(a, out, os.Stdin)
	why := "sigterm"
	select {
	case <-a.conn.Done():
		why = "stdin-eof"
		if os.Getenv("ACPTEST_IGNORE_EOF") == "1" {
			<-term
			why = "sigterm"
		}
	case <-term:
	}
	if err := a.flush(); err != nil {
		fmt.Fprintln(os.Stderr, "acp-test-agent: save sessions:", err)
		os.Exit(1)
	}
	if a.memory != nil || os.Getenv("ACPTEST_IGNORE_EOF") == "1" {
		a.record("exit %s", why)
	}
}

// lockedWriter lets the agent write raw lines (a malformed one, an update
// of an unknown kind) between the SDK's own messages.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

type agent struct {
	conn   *acp.AgentSideConnection
	home   string
	out    *lockedWriter
	noLoad bool
	// failInit is how many bytes of "é" initialize writes to stderr before
	// the agent exits; 0: it answers.
	failInit int
	mu       sync.Mutex

	// memory holds the sessions until the exit, when they are saved on
	// exit; nil: each is written at once.
	memMu  sync.Mutex
	memory map[acp.SessionId][]turnEntry
}

// turnEntry is one message of a stored session.
type turnEntry struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// record appends a line to calls.log.
func (a *agent) record(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(a.home, "calls.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	line := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", `\n`)
	fmt.Fprintln(f, line)
}

func (a *agent) sessionFile(id acp.SessionId) string {
	return filepath.Join(a.home, "sessions", filepath.Base(string(id))+".json")
}

func (a *agent) load(id acp.SessionId) ([]turnEntry, error) {
	a.memMu.Lock()
	kept, ok := a.memory[id]
	a.memMu.Unlock()
	if ok {
		return kept, nil
	}
	b, err := os.ReadFile(a.sessionFile(id))
	if err != nil {
		return nil, err
	}
	var h []turnEntry
	return h, json.Unmarshal(b, &h)
}

func (a *agent) store(id acp.SessionId, h []turnEntry) error {
	a.memMu.Lock()
	if a.memory != nil {
		a.memory[id] = h
		a.memMu.Unlock()
		return nil
	}
	a.memMu.Unlock()
	return a.write(id, h)
}

// flush writes the sessions kept in memory to their files.
func (a *agent) flush() error {
	a.memMu.Lock()
	defer a.memMu.Unlock()
	for id, h := range a.memory {
		if err := a.write(id, h); err != nil {
			return err
		}
	}
	return nil
}

func (a *agent) write(id acp.SessionId, h []turnEntry) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return os.WriteFile(a.sessionFile(id), b, 0o644)
}

func (a *agent) Initialize(_ context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	a.record("initialize fs=%v terminal=%v", p.ClientCapabilities.Fs.ReadTextFile && p.ClientCapabilities.Fs.WriteTextFile, p.ClientCapabilities.Terminal)
	if a.failInit > 0 {
		fmt.Fprintln(os.Stderr, "acp-test-agent: the first line of a long error")
		fmt.Fprint(os.Stderr, strings.Repeat("é", a.failInit/2), "\nthe last words.\n")
		os.Exit(4)
	}
	return acp.InitializeResponse{
		ProtocolVersion:   acp.ProtocolVersionNumber,
		AgentCapabilities: acp.AgentCapabilities{LoadSession: !a.noLoad},
		AuthMethods:       []acp.AuthMethod{},
	}, nil
}

func (a *agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *agent) NewSession(_ context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	id := acp.SessionId(fmt.Sprintf("sess-%d", time.Now().UnixNano()))
	names := make([]string, 0, len(p.McpServers))
	for _, m := range p.McpServers {
		switch {
		case m.Stdio != nil:
			names = append(names, m.Stdio.Name)
		case m.Http != nil:
			names = append(names, m.Http.Name)
		}
	}
	a.record("session/new %s cwd=%s mcp=%s", id, p.Cwd, strings.Join(names, ","))
	return acp.NewSessionResponse{SessionId: id}, a.store(id, nil)
}

// LoadSession replays the stored session as updates, as the protocol asks.
func (a *agent) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	a.record("session/load %s", p.SessionId)
	h, err := a.load(p.SessionId)
	if err != nil {
		return acp.LoadSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": "no such session"})
	}
	for _, e := range h {
		u := acp.UpdateAgentMessageText(e.Text)
		if e.Role == "user" {
			u = acp.UpdateUserMessageText(e.Text)
		}
		if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: u}); err != nil {
			return acp.LoadSessionResponse{}, err
		}
	}
	return acp.LoadSessionResponse{}, nil
}

func (a *agent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

func (a *agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionList)
}

func (a *agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}

func (a *agent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}

func (a *agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, nil
}

func (a *agent) Cancel(_ context.Context, p acp.CancelNotification) error {
	a.record("session/cancel %s", p.SessionId)
	return nil
}

// Prompt plays the command on the prompt's last line:
//
//	hello                 text chunks, a thought and a plan
//	write <path> <text>   a tool call that writes the file and reads it back
//	ask <path>            asks permission (allow/reject once), then writes
//	always <path>         the same, offering only "always" options
//	unknown-permission    asks permission for a call it never announced
//	read <path> <line> <limit>  reads a window of a file
//	block                 a tool call that waits for session/cancel
//	wait-kill             writes $HOME/waiting, then waits to be killed
//	crash                 starts a tool call and exits with code 3
//	bad-line              writes a line that is not JSON, then answers
//	unknown-update        sends an update of an unknown kind, then answers
//	terminal <command>    runs the command in a terminal, answers its output
//	env <NAME>            answers the variable of its own environment
//
// Anything else is echoed. The session keeps the prompt and the answer.
func (a *agent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	var texts []string
	for _, b := range p.Prompt {
		if b.Text != nil {
			texts = append(texts, b.Text.Text)
		}
	}
	all := strings.Join(texts, "\n")
	a.record("session/prompt %s %s", p.SessionId, all)
	lines := strings.Split(strings.TrimSpace(all), "\n")
	cmd := strings.Fields(lines[len(lines)-1])
	if len(cmd) == 0 {
		cmd = []string{""}
	}
	h, err := a.load(p.SessionId)
	if err != nil {
		return acp.PromptResponse{}, acp.NewInvalidParams(map[string]any{"error": "no such session"})
	}
	t := &turnCtx{a: a, ctx: ctx, id: p.SessionId}
	answer, stop, err := t.play(cmd)
	if err != nil {
		return acp.PromptResponse{}, err
	}
	if answer != "" {
		t.say(answer)
	}
	h = append(h, turnEntry{Role: "user", Text: all}, turnEntry{Role: "agent", Text: answer})
	if err := a.store(p.SessionId, h); err != nil {
		return acp.PromptResponse{}, err
	}
	return acp.PromptResponse{StopReason: stop}, nil
}

// turnCtx is one prompt turn.
type turnCtx struct {
	a   *agent
	ctx context.Context
	id  acp.SessionId
}

func (t *turnCtx) update(u acp.SessionUpdate) {
	_ = t.a.conn.SessionUpdate(t.ctx, acp.SessionNotification{SessionId: t.id, Update: u})
}

// say streams text in two chunks.
func (t *turnCtx) say(s string) {
	half := len(s) / 2
	t.update(acp.UpdateAgentMessageText(s[:half]))
	t.update(acp.UpdateAgentMessageText(s[half:]))
}

// raw writes one line to the client as is.
func (t *turnCtx) raw(line string) {
	_, _ = t.a.out.Write([]byte(line + "\n"))
}

func (t *turnCtx) play(cmd []string) (string, acp.StopReason, error) {
	arg := func(i int) string {
		if i < len(cmd) {
			return cmd[i]
		}
		return ""
	}
	switch cmd[0] {
	case "hello":
		t.update(acp.UpdateAgentThoughtText("The user greets me."))
		t.update(acp.UpdatePlan(
			acp.PlanEntry{Content: "Greet the user", Status: acp.PlanEntryStatusCompleted, Priority: acp.PlanEntryPriorityHigh},
			acp.PlanEntry{Content: "Wait for a task", Status: acp.PlanEntryStatusPending, Priority: acp.PlanEntryPriorityLow},
		))
		return "Hello from the ACP test agent.", acp.StopReasonEndTurn, nil
	case "write":
		return t.write("w1", arg(1), strings.Join(cmd[2:], " "))
	case "ask", "always":
		opts := []acp.PermissionOption{
			{OptionId: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
		}
		if cmd[0] == "always" {
			opts = []acp.PermissionOption{
				{OptionId: "allow-always", Name: "Always allow", Kind: acp.PermissionOptionKindAllowAlways},
				{OptionId: "reject-always", Name: "Always reject", Kind: acp.PermissionOptionKindRejectAlways},
			}
		}
		id := acp.ToolCallId(fmt.Sprintf("perm-%d", time.Now().UnixNano()%1_000_000))
		t.update(acp.StartToolCall(id, "Write "+arg(1), acp.WithStartKind(acp.ToolKindEdit), acp.WithStartStatus(acp.ToolCallStatusPending),
			acp.WithStartRawInput(map[string]any{"path": arg(1)})))
		res, err := t.a.conn.RequestPermission(t.ctx, acp.RequestPermissionRequest{
			SessionId: t.id, Options: opts,
			ToolCall: acp.ToolCallUpdate{ToolCallId: id, Title: acp.Ptr("Write " + arg(1)), Kind: acp.Ptr(acp.ToolKindEdit)},
		})
		if err != nil {
			return "", "", err
		}
		if res.Outcome.Cancelled != nil {
			t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
			return "", acp.StopReasonCancelled, nil
		}
		choice := string(res.Outcome.Selected.OptionId)
		t.a.record("permission %s %s", id, choice)
		if strings.HasPrefix(choice, "reject") {
			t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed),
				acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock("the user rejected it"))})))
			return "Permission " + choice + ": nothing written.", acp.StopReasonEndTurn, nil
		}
		if err := t.fsWrite(arg(1), "written with permission\n"); err != nil {
			return "", "", err
		}
		t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusCompleted),
			acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock("wrote " + arg(1)))})))
		return "Permission " + choice + ": written.", acp.StopReasonEndTurn, nil
	case "unknown-permission":
		res, err := t.a.conn.RequestPermission(t.ctx, acp.RequestPermissionRequest{
			SessionId: t.id,
			Options: []acp.PermissionOption{
				{OptionId: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
				{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
			},
			ToolCall: acp.ToolCallUpdate{ToolCallId: "ghost-1", Title: acp.Ptr("Delete everything"), Kind: acp.Ptr(acp.ToolKindDelete),
				RawInput: map[string]any{"path": "/workspace"}},
		})
		if err != nil {
			return "", "", err
		}
		if res.Outcome.Selected == nil {
			return "Permission cancelled.", acp.StopReasonEndTurn, nil
		}
		t.a.record("permission ghost-1 %s", res.Outcome.Selected.OptionId)
		return "Permission " + string(res.Outcome.Selected.OptionId) + " for a call never announced.", acp.StopReasonEndTurn, nil
	case "read":
		var line, limit int
		fmt.Sscan(arg(2), &line)
		fmt.Sscan(arg(3), &limit)
		res, err := t.a.conn.ReadTextFile(t.ctx, acp.ReadTextFileRequest{SessionId: t.id, Path: arg(1), Line: &line, Limit: &limit})
		if err != nil {
			return "read failed: " + err.Error(), acp.StopReasonEndTurn, nil
		}
		return "read: " + res.Content, acp.StopReasonEndTurn, nil
	case "block":
		t.update(acp.StartToolCall("b1", "Wait", acp.WithStartKind(acp.ToolKindExecute), acp.WithStartStatus(acp.ToolCallStatusInProgress)))
		<-t.ctx.Done()
		t.a.record("turn cancelled %s", t.id)
		return "", acp.StopReasonCancelled, nil
	case "wait-kill":
		t.update(acp.StartToolCall("k1", "Long work", acp.WithStartKind(acp.ToolKindExecute), acp.WithStartStatus(acp.ToolCallStatusInProgress)))
		_ = os.WriteFile(filepath.Join(t.a.home, "waiting"), []byte("yes"), 0o644)
		<-t.ctx.Done()
		return "", acp.StopReasonCancelled, nil
	case "crash":
		t.update(acp.StartToolCall("c1", "Crash", acp.WithStartKind(acp.ToolKindExecute), acp.WithStartStatus(acp.ToolCallStatusInProgress)))
		t.update(acp.UpdateAgentMessageText("About to crash."))
		// Updates are written synchronously: they are out before the exit.
		fmt.Fprintln(os.Stderr, "acp-test-agent: crashing on purpose")
		os.Exit(3)
	case "bad-line":
		t.raw(`{"jsonrpc":"2.0","method":"session/update","params":` + "\x01not json")
		return "Answered after a bad line.", acp.StopReasonEndTurn, nil
	case "unknown-update":
		t.raw(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + string(t.id) + `","update":{"sessionUpdate":"mystery_kind","x":1}}}`)
		return "Answered after an unknown update.", acp.StopReasonEndTurn, nil
	case "terminal":
		return t.terminal(strings.Join(cmd[1:], " "))
	case "env":
		return "env " + arg(1) + "=" + os.Getenv(arg(1)), acp.StopReasonEndTurn, nil
	}
	return "echo: " + strings.Join(cmd, " "), acp.StopReasonEndTurn, nil
}

// write writes a file through fs/write_text_file within a tool call and
// reads it back through fs/read_text_file.
func (t *turnCtx) write(id acp.ToolCallId, path, text string) (string, acp.StopReason, error) {
	t.update(acp.StartToolCall(id, "Write "+path, acp.WithStartKind(acp.ToolKindEdit), acp.WithStartStatus(acp.ToolCallStatusInProgress),
		acp.WithStartRawInput(map[string]any{"path": path, "content": text})))
	if err := t.fsWrite(path, text+"\n"); err != nil {
		t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed),
			acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(err.Error()))})))
		return "write refused: " + err.Error(), acp.StopReasonEndTurn, nil
	}
	res, err := t.a.conn.ReadTextFile(t.ctx, acp.ReadTextFileRequest{SessionId: t.id, Path: path})
	if err != nil {
		return "", "", err
	}
	t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusCompleted),
		acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock("wrote " + path))})))
	return "The file now says: " + strings.TrimSpace(res.Content), acp.StopReasonEndTurn, nil
}

func (t *turnCtx) fsWrite(path, content string) error {
	_, err := t.a.conn.WriteTextFile(t.ctx, acp.WriteTextFileRequest{SessionId: t.id, Path: path, Content: content})
	return err
}

// terminal runs a shell command through terminal/create, waits for it and
// answers its output and exit code.
func (t *turnCtx) terminal(command string) (string, acp.StopReason, error) {
	limit := 64
	cr, err := t.a.conn.CreateTerminal(t.ctx, acp.CreateTerminalRequest{SessionId: t.id, Command: "sh", Args: []string{"-c", command}, OutputByteLimit: &limit})
	if err != nil {
		return "terminal refused: " + err.Error(), acp.StopReasonEndTurn, nil
	}
	w, err := t.a.conn.WaitForTerminalExit(t.ctx, acp.WaitForTerminalExitRequest{SessionId: t.id, TerminalId: cr.TerminalId})
	if err != nil {
		return "", "", err
	}
	out, err := t.a.conn.TerminalOutput(t.ctx, acp.TerminalOutputRequest{SessionId: t.id, TerminalId: cr.TerminalId})
	if err != nil {
		return "", "", err
	}
	if _, err := t.a.conn.ReleaseTerminal(t.ctx, acp.ReleaseTerminalRequest{SessionId: t.id, TerminalId: cr.TerminalId}); err != nil {
		return "", "", err
	}
	code := -1
	if w.ExitCode != nil {
		code = *w.ExitCode
	}
	return fmt.Sprintf("terminal exit=%d truncated=%v output=%q", code, out.Truncated, out.Output), acp.StopReasonEndTurn, nil
}
