package acp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/wickfs"
)

// client is Wick's side of a connection to the agent: it maps the agent's
// session updates to the run's events, serves its file reads and writes
// from the sandbox workspace, runs its terminals through the process API
// and turns its permission requests into the run's approval interrupt.
// A connection kept between runs serves one run at a time: each binds it
// (session.bind) to its context, events, approver and terminals.
type client struct {
	files wickfs.FileSystem
	// root is the agent-facing workspace; hostRoot, on the local backend,
	// the workspace's host directory, where the agent's process runs and
	// which the paths it names are under.
	root, hostRoot string

	// mu serializes the updates (and the permission requests that read
	// the turn) and guards what follows.
	mu sync.Mutex
	// ctx is the run's, which carries the user: the agent's requests are
	// served in it (the SDK's request contexts carry no user), and a
	// permission request waits in it.
	ctx       context.Context
	logger    *slog.Logger
	approver  Approver
	terms     *terminals
	emit      func(loop.StreamEvent)
	turn      *turn
	replaying bool
	// ended is set when the run has taken the turn's result: later
	// updates are dropped.
	ended bool
	// drained is closed when the stream-end marker is handled.
	drained   chan struct{}
	drainOnce sync.Once
	// always are the thread's remembered answers: tool kind → option kind.
	always map[string]string
}

var _ acpsdk.Client = (*client)(nil)

// binding is what a request of the agent is served with: the run the
// connection serves now.
type binding struct {
	ctx      context.Context
	logger   *slog.Logger
	approver Approver
	terms    *terminals
}

func (c *client) bound() binding {
	c.mu.Lock()
	defer c.mu.Unlock()
	return binding{ctx: c.ctx, logger: c.logger, approver: c.approver, terms: c.terms}
}

// sessionLog adds the session id, known only once the session is, to
// every record of a run's log: the SDK's own records (lines that are not
// JSON-RPC) included.
type sessionLog struct {
	slog.Handler
	id *atomic.Pointer[string]
}

// Handle implements slog.Handler.
func (h sessionLog) Handle(ctx context.Context, r slog.Record) error {
	if id := h.id.Load(); id != nil {
		r = r.Clone()
		r.AddAttrs(slog.String("acp_session_id", *id))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h sessionLog) WithAttrs(as []slog.Attr) slog.Handler {
	return sessionLog{h.Handler.WithAttrs(as), h.id}
}

// WithGroup implements slog.Handler.
func (h sessionLog) WithGroup(name string) slog.Handler {
	return sessionLog{h.Handler.WithGroup(name), h.id}
}

// SessionUpdate implements acpsdk.Client. Updates replayed by session/load
// are the thread's past, which the client already has: none is shown again.
func (c *client) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.replaying || c.ended {
		return nil
	}
	events, ok := c.turn.apply(n.Update)
	if !ok && c.logger != nil {
		c.logger.Info("ACP session update not shown", "update", updateKind(n.Update))
	}
	for _, ev := range events {
		c.emit(ev)
	}
	return nil
}

// HandleExtensionMethod implements acpsdk.ExtensionMethodHandler for the
// stream-end marker exitReader adds; the agent's own extensions are not
// known.
func (c *client) HandleExtensionMethod(_ context.Context, method string, _ json.RawMessage) (any, error) {
	if method != streamEndMethod {
		return nil, acpsdk.NewMethodNotFound(method)
	}
	c.drainOnce.Do(func() { close(c.drained) })
	return nil, nil
}

// updateKind names an update's kind for the log.
func updateKind(u acpsdk.SessionUpdate) string {
	switch {
	case u.UserMessageChunk != nil:
		return "user_message_chunk"
	case u.AvailableCommandsUpdate != nil:
		return "available_commands_update"
	case u.CurrentModeUpdate != nil:
		return "current_mode_update"
	}
	// The SDK decodes an update of a kind it does not know to an empty
	// one, without its name.
	return "unknown"
}

// checkPath confines a path the agent names to the workspace: absolute,
// clean, and at or under the root, or on the local backend under the
// workspace's host directory, which it is mapped from. The sandbox's own
// confinement (symlinks included) applies after it.
func (c *client) checkPath(p string) (string, error) {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return "", acpsdk.NewInvalidParams(map[string]any{"path": p, "error": "the path must be absolute and clean"})
	}
	if h := c.hostRoot; h != "" && h != "/" {
		if p == h {
			p = c.root
		} else if rest, ok := strings.CutPrefix(p, h+"/"); ok {
			p = path.Join(c.root, rest)
		}
	}
	if p != c.root && !strings.HasPrefix(p, c.root+"/") {
		return "", acpsdk.NewInvalidParams(map[string]any{"path": p, "error": "the agent may only use paths under the workspace " + c.root})
	}
	return p, nil
}

// ReadTextFile implements acpsdk.Client from the sandbox workspace; line
// (1-based) and limit read a window of lines.
func (c *client) ReadTextFile(_ context.Context, p acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	ctx := c.bound().ctx
	fp, err := c.checkPath(p.Path)
	if err != nil {
		return acpsdk.ReadTextFileResponse{}, err
	}
	if p.Line == nil && p.Limit == nil {
		s, err := c.files.ReadFile(ctx, fp)
		if err != nil {
			return acpsdk.ReadTextFileResponse{}, fileErr(fp, err)
		}
		if strings.HasPrefix(s, "base64:") {
			return acpsdk.ReadTextFileResponse{}, acpsdk.NewInvalidParams(map[string]any{"path": fp, "error": "not a text file"})
		}
		return acpsdk.ReadTextFileResponse{Content: s}, nil
	}
	offset, limit := 0, 0
	if p.Line != nil && *p.Line > 1 {
		offset = *p.Line - 1
	}
	if p.Limit != nil {
		limit = *p.Limit
	}
	res, err := c.files.ReadLines(ctx, fp, offset, limit)
	if err != nil {
		return acpsdk.ReadTextFileResponse{}, fileErr(fp, err)
	}
	return acpsdk.ReadTextFileResponse{Content: strings.Join(res.Lines, "\n")}, nil
}

// WriteTextFile implements acpsdk.Client in the sandbox workspace.
func (c *client) WriteTextFile(_ context.Context, p acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	ctx := c.bound().ctx
	fp, err := c.checkPath(p.Path)
	if err != nil {
		return acpsdk.WriteTextFileResponse{}, err
	}
	if _, err := c.files.WriteFile(ctx, fp, p.Content); err != nil {
		return acpsdk.WriteTextFileResponse{}, fileErr(fp, err)
	}
	return acpsdk.WriteTextFileResponse{}, nil
}

// fileErr is a file error as the agent gets it: what failed, not a stack
// of Wick's internals.
func fileErr(p string, err error) error {
	var pe *wickfs.PathError
	if errors.As(err, &pe) {
		return acpsdk.NewInvalidParams(map[string]any{"path": p, "error": pe.Error()})
	}
	return acpsdk.NewInternalError(map[string]any{"path": p, "error": err.Error()})
}

// RequestPermission implements acpsdk.Client: an "always" answer the thread
// remembers for the call's kind is given at once; an autonomous agent's
// calls are allowed once; otherwise the run waits for the user's decision
// (Wick's approval interrupt), which picks the offered allow or reject
// option. A decision with Always picks the agent's "always" option when it
// offers one and is remembered for the kind either way, as is an answer
// the agent offered only as "always". The request is judged by its own
// title and kind, as the agent may ask before it announces the call.
func (c *client) RequestPermission(_ context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	run := c.bound()
	call, kind := c.permissionCall(p.ToolCall)
	c.mu.Lock()
	remembered := c.always[kind]
	// A call announced without its input starts now: the card is shown
	// before the request about it.
	if known := c.turn.byID[call.ID]; known != nil && !known.ended {
		var events []loop.StreamEvent
		c.turn.begin(known, &events)
		for _, ev := range events {
			c.emit(ev)
		}
	}
	c.mu.Unlock()
	if remembered != "" {
		allow := remembered == string(acpsdk.PermissionOptionKindAllowAlways)
		if o, ok := choose(p.Options, allow, true); ok {
			return selected(o), nil
		}
	}
	allow, always := true, false
	if run.approver != nil {
		d, err := run.approver.Approve(run.ctx, call, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			// always tells the client it may offer an "always" decision.
			c.emit(loop.StreamEvent{Data: loop.ApprovalData([]llm.ToolCall{call})})
		})
		if err != nil {
			run.logger.Info("ACP permission request not answered", "tool_call_id", call.ID, "err", err)
			return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}, nil
		}
		// An edit approves: an ACP agent's call cannot take new arguments.
		allow = d.Action == loop.ActionApprove || d.Action == loop.ActionEdit
		always = d.Always
	}
	o, ok := choose(p.Options, allow, always)
	if !ok {
		run.logger.Warn("ACP permission request offers no option for the decision", "tool_call_id", call.ID, "allow", allow)
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}, nil
	}
	_, alwaysKind := optionKinds(allow)
	if always || o.Kind == alwaysKind {
		c.mu.Lock()
		c.always[kind] = string(alwaysKind)
		c.mu.Unlock()
	}
	return selected(o), nil
}

// optionKinds are the "once" and "always" option kinds that allow or reject.
func optionKinds(allow bool) (once, always acpsdk.PermissionOptionKind) {
	if allow {
		return acpsdk.PermissionOptionKindAllowOnce, acpsdk.PermissionOptionKindAllowAlways
	}
	return acpsdk.PermissionOptionKindRejectOnce, acpsdk.PermissionOptionKindRejectAlways
}

// choose picks the offered option that allows or rejects: the "always" one
// first when always is set, else the "once" one first; the other when the
// agent offers only that.
func choose(opts []acpsdk.PermissionOption, allow, always bool) (acpsdk.PermissionOption, bool) {
	first, second := optionKinds(allow)
	if always {
		first, second = second, first
	}
	if o, ok := option(opts, first); ok {
		return o, true
	}
	return option(opts, second)
}

// permissionCall is the call a permission request is about, as the
// approval card shows it, and the kind its "always" answers are kept by.
func (c *client) permissionCall(u acpsdk.ToolCallUpdate) (llm.ToolCall, string) {
	c.mu.Lock()
	known := c.turn.byID[string(u.ToolCallId)]
	c.mu.Unlock()
	title, kind := "", ""
	if u.Title != nil {
		title = *u.Title
	}
	if u.Kind != nil {
		kind = string(*u.Kind)
	}
	args := argsOf(u.RawInput)
	if known != nil {
		title, kind = cmp.Or(title, known.title), cmp.Or(kind, known.kind)
		if !hasInput(u.RawInput) && known.args != nil {
			args = known.args
		}
	}
	// The approval card names the call by what the user decides on: its
	// title, else its kind.
	name := cmp.Or(title, kind, string(acpsdk.ToolKindOther))
	return llm.ToolCall{ID: string(u.ToolCallId), Name: name, Args: args}, cmp.Or(kind, name)
}

func option(opts []acpsdk.PermissionOption, kind acpsdk.PermissionOptionKind) (acpsdk.PermissionOption, bool) {
	for _, o := range opts {
		if o.Kind == kind {
			return o, true
		}
	}
	return acpsdk.PermissionOption{}, false
}

func selected(o acpsdk.PermissionOption) acpsdk.RequestPermissionResponse {
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(o.OptionId)}
}

// CreateTerminal implements acpsdk.Client through the process API; a cwd
// on the local backend's host directory is mapped to the workspace.
func (c *client) CreateTerminal(_ context.Context, p acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	run := c.bound()
	if p.Cwd != nil {
		cwd, err := c.checkPath(*p.Cwd)
		if err != nil {
			return acpsdk.CreateTerminalResponse{}, err
		}
		p.Cwd = &cwd
	}
	id, err := run.terms.create(run.ctx, p)
	if err != nil {
		return acpsdk.CreateTerminalResponse{}, fmt.Errorf("create terminal: %w", err)
	}
	return acpsdk.CreateTerminalResponse{TerminalId: id}, nil
}

// TerminalOutput implements acpsdk.Client.
func (c *client) TerminalOutput(_ context.Context, p acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	t, err := c.bound().terms.get(p.TerminalId)
	if err != nil {
		return acpsdk.TerminalOutputResponse{}, err
	}
	out, truncated, exit := t.snapshot()
	return acpsdk.TerminalOutputResponse{Output: out, Truncated: truncated, ExitStatus: exit}, nil
}

// WaitForTerminalExit implements acpsdk.Client.
func (c *client) WaitForTerminalExit(ctx context.Context, p acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	t, err := c.bound().terms.get(p.TerminalId)
	if err != nil {
		return acpsdk.WaitForTerminalExitResponse{}, err
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return acpsdk.WaitForTerminalExitResponse{}, ctx.Err()
	}
	_, _, exit := t.snapshot()
	return acpsdk.WaitForTerminalExitResponse{ExitCode: exit.ExitCode, Signal: exit.Signal}, nil
}

// KillTerminal implements acpsdk.Client: the command is killed, its output
// stays readable until release.
func (c *client) KillTerminal(_ context.Context, p acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	run := c.bound()
	t, err := run.terms.get(p.TerminalId)
	if err != nil {
		return acpsdk.KillTerminalResponse{}, err
	}
	t.kill(run.ctx)
	return acpsdk.KillTerminalResponse{}, nil
}

// ReleaseTerminal implements acpsdk.Client: the command is killed if it
// still runs and the terminal forgotten.
func (c *client) ReleaseTerminal(_ context.Context, p acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	run := c.bound()
	if err := run.terms.release(run.ctx, p.TerminalId); err != nil {
		return acpsdk.ReleaseTerminalResponse{}, err
	}
	return acpsdk.ReleaseTerminalResponse{}, nil
}
