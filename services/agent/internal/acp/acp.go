// Package acp backs an agent with an external coding agent spoken to over
// the Agent Client Protocol (github.com/coder/acp-go-sdk): Wick is the
// client. Each run starts the agent's command inside its sandbox through
// the process API, initializes, recovers the thread's session (load, else
// resume, else a new session primed with a summary of the thread), sends
// the user's message as one prompt turn and maps the agent's session
// updates to the run's stream events. The agent's file reads and writes
// are served from the sandbox workspace, its terminals run through the
// process API, and its permission requests become the run's approval
// interrupt.
package acp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/sandboxproc"
	"github.com/wick-agent/wick/wickfs"
)

// Defaults of a Runner; each has an option.
const (
	// DefaultCancelGrace is how long a cancelled prompt turn may take to
	// end after session/cancel before the agent's process is killed.
	DefaultCancelGrace = 2 * time.Second
	// DefaultStartTimeout bounds starting the agent, initialize and the
	// session's recovery.
	DefaultStartTimeout = 2 * time.Minute
	// DefaultSummaryChars bounds the transcript that primes a new session
	// on a thread with history (its end is kept, cut on a rune boundary).
	DefaultSummaryChars = 16_000
	// DefaultMaxMessageBytes bounds one protocol message the agent sends.
	DefaultMaxMessageBytes = 32 << 20
	// ProcessTagPrefix tags the agents' processes and their terminals, so
	// ListProcesses shows which belong to an ACP agent.
	ProcessTagPrefix = "acp:"
	// drainTimeout bounds the wait for the updates an agent sent before
	// its stream ended, like the SDK's own drain of them.
	drainTimeout = 5 * time.Second
	// DefaultWorkspace is the sandbox's workspace when the backend names
	// no workdir.
	DefaultWorkspace = wickfs.DefaultPrefix
	// DefaultStopGrace is how long the agent may take to exit after its
	// stdin is closed, and again after SIGTERM, before it is killed: a
	// coding agent writes its session file on the way out, and the next
	// message loads it.
	DefaultStopGrace = 5 * time.Second
)

// Errors of a run.
var (
	// ErrAgentStopped is a run's error when the agent's process ended or
	// its stream broke; the thread keeps its session for the next run.
	ErrAgentStopped = errors.New("the ACP agent stopped")
	// ErrNoContinue refuses to continue a stopped run: an ACP agent's turn
	// is one prompt, which is never stopped between steps.
	ErrNoContinue = errors.New("an ACP agent's run cannot be continued; send a new message")
)

// Approver waits for the user's decision on a permission request, as an
// approval of a tool call: it marks the run waiting for it, calls announce
// (which sends the interrupt event) and returns the decision.
type Approver interface {
	Approve(ctx context.Context, call llm.ToolCall, announce func()) (loop.Decision, error)
}

// Runner runs an ACP-backed agent's runs; it has the shape of loop.Runner's
// Run and Continue, so the run executor drives both alike.
type Runner struct {
	agentID  string
	cfg      *loop.AgentConfig
	sandbox  sandboxproc.Sandbox
	files    wickfs.FileSystem
	approver Approver
	logger   *slog.Logger
	opts     options
	// start starts the agent's process; tests give a peer of their own.
	start func(ctx, long context.Context) (agentProc, error)
}

// agentProc is the agent's running process as the bridge drives it
// (sandboxproc.Process): its stdout and stdin, a graceful stop, and what
// it left on its standard error.
type agentProc interface {
	io.ReadWriteCloser
	// Stop closes stdin, then sends SIGTERM, then SIGKILL, each after
	// waiting grace for the process to exit.
	Stop(grace time.Duration)
	// Done is closed when the process has exited.
	Done() <-chan struct{}
	// StderrTail is the end of its standard error so far.
	StderrTail() string
	// HostWorkdir is the workspace's host directory on the local backend.
	HostWorkdir() string
}

type options struct {
	cancelGrace  time.Duration
	startTimeout time.Duration
	stopGrace    time.Duration
	summaryChars int
	maxMessage   int
	pool         *Pool
	poolKey      string
}

// Option configures a Runner.
type Option func(*options)

// WithCancelGrace sets how long a cancelled turn may take to end.
func WithCancelGrace(d time.Duration) Option { return func(o *options) { o.cancelGrace = d } }

// WithStartTimeout bounds starting the agent and recovering its session.
func WithStartTimeout(d time.Duration) Option { return func(o *options) { o.startTimeout = d } }

// WithSummaryChars bounds the transcript that primes a new session.
func WithSummaryChars(n int) Option { return func(o *options) { o.summaryChars = n } }

// WithStopGrace sets how long the agent may take to exit at each step of
// a graceful stop.
func WithStopGrace(d time.Duration) Option { return func(o *options) { o.stopGrace = d } }

// WithPool keeps the agent's process alive between the runs of a thread
// in pool; key names the owner (the user and the agent), the thread is
// added to it.
func WithPool(pool *Pool, key string) Option {
	return func(o *options) { o.pool, o.poolKey = pool, key }
}

// New returns the runner of the agent agentID, whose configuration has
// ACP and Backend set. files is the agent's sandbox file system; approver
// is nil for an autonomous agent (permission requests are allowed once).
func New(agentID string, cfg *loop.AgentConfig, sandbox sandboxproc.Sandbox, files wickfs.FileSystem, approver Approver, logger *slog.Logger, opts ...Option) *Runner {
	o := options{cancelGrace: DefaultCancelGrace, startTimeout: DefaultStartTimeout, stopGrace: DefaultStopGrace, summaryChars: DefaultSummaryChars, maxMessage: DefaultMaxMessageBytes}
	for _, opt := range opts {
		opt(&o)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Runner{agentID: agentID, cfg: cfg, sandbox: sandbox, files: files, approver: approver, logger: logger, opts: o}
	r.start = r.startProcess
	return r
}

// startProcess starts the agent's command in its sandbox through the
// process API; ctx bounds the start, the process lives in long.
func (r *Runner) startProcess(ctx, long context.Context) (agentProc, error) {
	cmd := sandboxproc.Command{Argv: append([]string{r.cfg.ACP.Command}, r.cfg.ACP.Args...), Env: r.env(), Tag: ProcessTagPrefix + r.agentID,
		Stderr: &stderrLog{logger: r.logger.With("agent_id", r.agentID)}}
	return sandboxproc.Start(ctx, long, r.sandbox, r.agentID, r.cfg.SandboxBackend(), cmd, r.opts.maxMessage)
}

// Continue implements the run executor's runner: there is nothing to
// continue (see ErrNoContinue).
func (r *Runner) Continue(context.Context, string, *loop.AgentState, func(loop.StreamEvent), func(context.Context, *loop.AgentState) error) error {
	return ErrNoContinue
}

// Run sends input to the agent as one prompt turn on the thread's session
// and streams the turn's events. Like loop.Runner.Run it ends with a done
// or error event and saves the thread (the input, the session id, the
// answer), also when cancelled or when the agent dies.
func (r *Runner) Run(ctx context.Context, runID string, state *loop.AgentState, input []llm.Message, emit func(loop.StreamEvent), save func(context.Context, *loop.AgentState) error) error {
	if err := loop.Messages(input).ValidateUserInput(); err != nil {
		return fmt.Errorf("%w: %w", loop.ErrInvalidInput, err)
	}
	if r.cfg.ACP == nil || r.cfg.Backend == nil {
		return fmt.Errorf("%w: the agent has no acp command or no backend", loop.ErrInvalidConfig)
	}
	history := loop.RepairToolCalls(state.Messages, loop.InterruptedToolResult)
	state.Messages = append(history, input...)
	if save == nil {
		save = func(context.Context, *loop.AgentState) error { return nil }
	}
	if state.ACPAlways == nil {
		state.ACPAlways = map[string]string{}
	}
	var emitMu sync.Mutex
	safeEmit := func(ev loop.StreamEvent) {
		emitMu.Lock()
		defer emitMu.Unlock()
		if ev.Data.GetDone() != nil || ev.Data.GetError() != nil {
			ev.ThreadID = state.ThreadID
		}
		emit(ev)
	}
	s := &session{r: r, runID: runID, state: state, emit: safeEmit, save: save}
	err := s.run(ctx, history, input)
	return s.finish(ctx, err)
}

// session is one run's use of the agent's connection.
type session struct {
	r     *Runner
	runID string
	state *loop.AgentState
	emit  func(loop.StreamEvent)
	save  func(context.Context, *loop.AgentState) error
	// live is the agent's process and connection, started by this run or
	// kept from the thread's last one.
	live *live
	// client is live's client, bound to this run.
	client *client
	stop   acpsdk.StopReason
}

// live is an agent process and its connection, which the pool keeps
// between the runs of a thread.
type live struct {
	proc   agentProc
	out    *exitReader
	conn   *acpsdk.ClientSideConnection
	client *client
	// session is the session id the log shows.
	session *atomic.Pointer[string]
}

// alive reports whether the process still runs and its stream is open.
func (l *live) alive() bool {
	select {
	case <-l.conn.Done():
		return false
	case <-l.proc.Done():
		return false
	default:
		return true
	}
}

// root is the workspace the agent works in and its files are confined to.
func (r *Runner) root() string {
	if w := r.cfg.Backend.Workdir; w != "" {
		return path.Clean(w)
	}
	return DefaultWorkspace
}

// stateDir is the agent's HOME, on the workspace volume.
func (r *Runner) stateDir() string {
	if d := r.cfg.ACP.StateDir; d != "" {
		return d
	}
	return path.Join(r.root(), ".wick", "acp", r.agentID)
}

// env is the agent's environment: its configured variables, with HOME and
// the XDG directories in its state directory. The local backend runs the
// process on the host with the workspace as its working directory, where
// the agent-facing path does not exist: there HOME is relative to it.
func (r *Runner) env() map[string]string {
	home := r.stateDir()
	if r.cfg.Backend.Type == "local" {
		if rel, ok := strings.CutPrefix(home, r.root()+"/"); ok {
			home = rel
		}
	}
	env := map[string]string{}
	for k, v := range r.cfg.ACP.Env {
		env[k] = v
	}
	env["HOME"] = home
	env["XDG_CONFIG_HOME"] = path.Join(home, ".config")
	env["XDG_DATA_HOME"] = path.Join(home, ".local", "share")
	env["XDG_STATE_HOME"] = path.Join(home, ".local", "state")
	env["XDG_CACHE_HOME"] = path.Join(home, ".cache")
	return env
}

// run starts the agent (or takes the thread's kept process), recovers
// the session and runs the prompt turn.
func (s *session) run(ctx context.Context, history, input []llm.Message) error {
	r := s.r
	startCtx, cancelStart := context.WithTimeout(ctx, r.opts.startTimeout)
	defer cancelStart()
	if l := r.opts.pool.take(r.poolKey(s.state), r.fingerprint(), len(history), s.state.ACPSessionID); l != nil {
		s.live, s.client = l, l.client
		s.bind(ctx)
		s.client.logger.Info("ACP agent process kept from the thread's last run")
		return s.promptInput(ctx, false, history, input)
	}
	// The state directory must exist before the agent looks into it.
	if _, err := r.files.WriteFile(startCtx, path.Join(r.stateDir(), ".wick-acp"), "the state directory of an ACP agent run by Wick\n"); err != nil {
		return fmt.Errorf("create the ACP agent's state directory %s: %w", r.stateDir(), err)
	}
	// The process outlives the run's context: a cancelled run still sends
	// session/cancel and waits for the turn to end; finish stops it, or
	// the pool keeps it for the thread's next run.
	long := context.WithoutCancel(ctx)
	proc, err := r.start(startCtx, long)
	if err != nil {
		return fmt.Errorf("start the ACP agent: %w", err)
	}
	l := &live{proc: proc, out: &exitReader{r: proc}, session: &atomic.Pointer[string]{}}
	if id := s.state.ACPSessionID; id != "" {
		l.session.Store(&id)
	}
	l.client = &client{files: r.files, root: r.root(), hostRoot: proc.HostWorkdir(), drained: make(chan struct{})}
	s.live, s.client = l, l.client
	s.bind(ctx)
	l.conn = acpsdk.NewClientSideConnection(l.client, proc, l.out)
	// The SDK logs (and skips) lines that are not JSON-RPC, and updates it
	// cannot decode, through this logger; it is the process's, which may
	// serve several runs.
	l.conn.SetLogger(slog.New(sessionLog{r.logger.Handler(), l.session}).With("agent_id", r.agentID))

	primed, err := s.recover(startCtx, l.conn, len(history) > 0)
	if err != nil {
		return s.withStderr(err)
	}
	return s.promptInput(ctx, primed, history, input)
}

// bind makes the connection's client serve this run: its context (the
// user), events, approvals, terminals and a new turn.
func (s *session) bind(ctx context.Context) {
	r := s.r
	logger := slog.New(sessionLog{r.logger.Handler(), s.live.session}).With("agent_id", r.agentID, "run_id", s.runID)
	c := s.client
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx, c.logger, c.approver, c.emit = ctx, logger, r.approver, s.emit
	c.terms = &terminals{sandbox: r.sandbox, agentID: r.agentID, tag: ProcessTagPrefix + r.agentID, ctx: context.WithoutCancel(ctx), byID: map[string]*terminal{}}
	c.turn, c.always, c.ended, c.replaying = newTurn(), s.state.ACPAlways, false, false
}

// promptInput saves the thread and sends the user's input as one prompt,
// after the thread's summary when the session is a new one on a thread
// with history.
func (s *session) promptInput(ctx context.Context, primed bool, history, input []llm.Message) error {
	if err := s.save(ctx, s.state); err != nil {
		return fmt.Errorf("save the thread: %w", err)
	}
	var prompt []acpsdk.ContentBlock
	if primed {
		prompt = append(prompt, acpsdk.TextBlock(s.summary(history)))
	}
	for _, m := range input {
		prompt = append(prompt, acpsdk.TextBlock(m.Content))
	}
	return s.withStderr(s.prompt(ctx, s.live.conn, prompt))
}

// withStderr adds the agent's last standard error to a failed request's
// error, which the agent may have answered with no more than "Internal
// error"; an ErrAgentStopped has it already.
func (s *session) withStderr(err error) error {
	if err == nil || errors.Is(err, ErrAgentStopped) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if tail := s.live.proc.StderrTail(); tail != "" {
		return fmt.Errorf("%w; the ACP agent's last standard error: %s", err, tail)
	}
	return err
}

// errNoSession is a session/new answered without a session id.
var errNoSession = errors.New("no session")

// recover gives the run its session: the thread's stored session loaded
// (session/load, when the agent advertises it), else resumed
// (session/resume, when advertised), else a new one. primed reports a new
// session on a thread with history, whose first prompt carries a summary.
func (s *session) recover(ctx context.Context, conn *acpsdk.ClientSideConnection, hasHistory bool) (primed bool, err error) {
	caps, err := s.capabilities(ctx, conn)
	if err != nil {
		return false, err
	}
	id := acpsdk.SessionId(s.state.ACPSessionID)
	servers := mcpServers(s.r.cfg.MCPServers)
	log := s.client.logger
	if id != "" && caps.LoadSession {
		s.client.mu.Lock()
		s.client.replaying = true
		s.client.mu.Unlock()
		_, err := conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: id, Cwd: s.cwd(), McpServers: servers})
		err = s.check(conn, err)
		s.client.mu.Lock()
		s.client.replaying = false
		s.client.mu.Unlock()
		if err == nil {
			log.Info("ACP session loaded")
			return false, nil
		}
		if errors.Is(err, ErrAgentStopped) || ctx.Err() != nil {
			return false, err
		}
		log.Warn("ACP session/load failed; trying the next way", "err", err)
	}
	if id != "" && caps.SessionCapabilities.Resume != nil {
		_, err := conn.ResumeSession(ctx, acpsdk.ResumeSessionRequest{SessionId: id, Cwd: s.cwd(), McpServers: servers})
		err = s.check(conn, err)
		if err == nil {
			log.Info("ACP session resumed")
			return false, nil
		}
		if errors.Is(err, ErrAgentStopped) || ctx.Err() != nil {
			return false, err
		}
		log.Warn("ACP session/resume failed; starting a new session", "err", err)
	}
	res, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: s.cwd(), McpServers: servers})
	if err := s.check(conn, err); err != nil {
		return false, fmt.Errorf("session/new: %w", err)
	}
	if res.SessionId == "" {
		return false, fmt.Errorf("session/new: %w: the agent answered without a session id", errNoSession)
	}
	newID := string(res.SessionId)
	s.state.ACPSessionID = newID
	s.live.session.Store(&newID)
	s.client.logger.Info("ACP session created", "primed", hasHistory)
	return hasHistory, nil
}

// cwd is the session's working directory as the agent's process sees it:
// the workspace's host directory on the local backend, else the workspace.
func (s *session) cwd() string { return cmp.Or(s.client.hostRoot, s.r.root()) }

// capabilities sends initialize (Wick reads and writes files and runs
// terminals) and returns the agent's capabilities.
func (s *session) capabilities(ctx context.Context, conn *acpsdk.ClientSideConnection) (acpsdk.AgentCapabilities, error) {
	res, err := conn.Initialize(ctx, acpsdk.InitializeRequest{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientCapabilities: acpsdk.ClientCapabilities{
			Fs:       acpsdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true},
			Terminal: true,
		},
		ClientInfo: &acpsdk.Implementation{Name: "wick", Version: "1"},
	})
	if err := s.check(conn, err); err != nil {
		return acpsdk.AgentCapabilities{}, fmt.Errorf("initialize: %w", err)
	}
	return res.AgentCapabilities, nil
}

// check turns the error of a request that failed because the agent's
// process ended into ErrAgentStopped, with what the process left.
func (s *session) check(conn *acpsdk.ClientSideConnection, err error) error {
	if err == nil {
		return nil
	}
	select {
	case <-conn.Done():
		return s.stopped()
	default:
	}
	return err
}

// stopped is ErrAgentStopped with why, as the process's stream ended,
// once the updates the agent sent before it ended are handled (at most
// drainTimeout: a handler that blocks does not hold the run).
func (s *session) stopped() error {
	t := time.NewTimer(drainTimeout)
	defer t.Stop()
	select {
	case <-s.client.drained:
	case <-t.C:
		s.client.logger.Warn("the ACP agent's last updates were not handled in time", "timeout", drainTimeout)
	}
	if e := s.live.out.err(); e != nil {
		return fmt.Errorf("%w: %w", ErrAgentStopped, e)
	}
	return ErrAgentStopped
}

// prompt runs the turn. A cancelled run sends session/cancel and waits
// for the turn to end, at most the cancel grace, before the process is
// killed; a process that ends mid-turn fails it.
func (s *session) prompt(ctx context.Context, conn *acpsdk.ClientSideConnection, blocks []acpsdk.ContentBlock) error {
	id := acpsdk.SessionId(s.state.ACPSessionID)
	type result struct {
		res acpsdk.PromptResponse
		err error
	}
	done := make(chan result, 1)
	// The request lives until the turn ends or the process dies, not
	// until ctx: a cancelled turn ends with the agent's answer to
	// session/cancel.
	go func() {
		res, err := conn.Prompt(context.WithoutCancel(ctx), acpsdk.PromptRequest{SessionId: id, Prompt: blocks})
		done <- result{res, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-conn.Done():
		return s.stopped()
	case <-ctx.Done():
		if err := conn.Cancel(context.WithoutCancel(ctx), acpsdk.CancelNotification{SessionId: id}); err != nil {
			s.client.logger.Warn("send session/cancel", "err", err)
		}
		grace := time.NewTimer(s.r.opts.cancelGrace)
		defer grace.Stop()
		select {
		case <-done:
		case <-conn.Done():
		case <-grace.C:
			s.client.logger.Warn("the ACP agent did not end its turn after session/cancel; killing it", "grace", s.r.opts.cancelGrace)
		}
		return ctx.Err()
	}
	if res.err != nil {
		select {
		case <-conn.Done():
			return s.stopped()
		default:
		}
		return fmt.Errorf("session/prompt: %w", res.err)
	}
	s.stop = res.res.StopReason
	return nil
}

// summary primes a new session on a thread with history: the end of the
// thread's transcript, at most summaryChars bytes cut on a rune boundary.
func (s *session) summary(history []llm.Message) string {
	t := loop.Messages(history).PrettyPrint()
	cut := hooks.Clip(t, s.r.opts.summaryChars, true)
	if len(cut) < len(t) {
		cut = "[the beginning of the conversation was omitted]\n" + cut
	}
	return "This conversation continues an earlier one whose session could not be restored. " +
		"Its transcript follows; the user's new message comes after it.\n<transcript>\n" + cut + "</transcript>"
}

// finish closes the turn: every started tool call ends, the thread keeps
// the turn's messages and todos, the process is killed, and the last event
// says how the run ended.
func (s *session) finish(ctx context.Context, err error) error {
	live := context.WithoutCancel(ctx)
	if s.live != nil && s.live.conn != nil {
		s.client.terms.closeAll(live)
	}
	if s.client != nil {
		reason := loop.FailedToolResult
		if ctx.Err() != nil {
			reason = loop.CancelledToolResult
		} else if err != nil {
			reason = "the ACP agent's turn ended before this tool call finished: " + err.Error()
		}
		s.client.mu.Lock()
		for _, ev := range s.client.turn.closeOpen(reason) {
			s.emit(ev)
		}
		t := s.client.turn
		// Updates still on their way are the agent's, after its turn
		// ended: none is shown or stored.
		s.client.ended = true
		// A permission request still being answered may remember more;
		// the thread keeps what was decided by now.
		s.state.ACPAlways = maps.Clone(s.client.always)
		s.state.Messages = append(s.state.Messages, t.messages()...)
		if t.todos != nil {
			s.state.Todos = t.todos
		}
		s.client.mu.Unlock()
	}
	if serr := s.save(live, s.state); serr != nil {
		s.r.logger.WarnContext(live, "save after the ACP turn failed", "run_id", s.runID, "err", serr)
		if err == nil {
			err = fmt.Errorf("save the thread: %w", serr)
		}
	}
	tail := s.release(ctx, err)
	switch {
	case ctx.Err() != nil:
		msg := "run cancelled"
		if tail != "" {
			msg += "; the ACP agent's last standard error: " + tail
		}
		s.emit(loop.StreamEvent{Data: loop.ErrorData(msg, "", loop.StopCancelled)})
		return ctx.Err()
	case err != nil:
		s.emit(loop.StreamEvent{Data: loop.ErrorData(err.Error(), "", loop.StopError)})
		return err
	}
	s.emit(loop.StreamEvent{Data: loop.DoneData(stopReason(s.stop))})
	return nil
}

// release lets go of the agent's process once the thread is saved: a turn
// that ended well leaves it to the pool for the thread's next run; else it
// is stopped gracefully, before the run's last event, so the agent's
// session file is written before the next message can load it. It returns
// the agent's last standard error of a run that failed, logged too.
func (s *session) release(ctx context.Context, err error) string {
	l := s.live
	if l == nil || l.conn == nil {
		return ""
	}
	failed := err != nil || ctx.Err() != nil
	if !failed && s.r.opts.pool != nil && l.alive() {
		s.r.opts.pool.put(s.r.poolKey(s.state), &kept{l: l, fp: s.r.fingerprint(), msgs: len(s.state.Messages), session: s.state.ACPSessionID})
		return ""
	}
	l.proc.Stop(s.r.opts.stopGrace)
	if !failed {
		return ""
	}
	tail := l.proc.StderrTail()
	if tail != "" {
		s.client.logger.Warn("the ACP agent's run failed", "err", err, "stderr", tail)
	}
	return tail
}

// stopReason maps the turn's stop reason to the loop's.
func stopReason(r acpsdk.StopReason) string {
	switch r {
	case acpsdk.StopReasonMaxTokens, acpsdk.StopReasonMaxTurnRequests:
		return loop.StopMaxTurns
	case acpsdk.StopReasonCancelled:
		return loop.StopCancelled
	}
	return loop.StopCompleted
}

// mcpServers are the agent's MCP servers as ACP hands them to the agent:
// a command runs in the same sandbox, an endpoint is reached by the agent.
func mcpServers(servers []loop.MCPServerCfg) []acpsdk.McpServer {
	out := []acpsdk.McpServer{}
	for _, m := range servers {
		if m.Command != "" {
			env := []acpsdk.EnvVariable{}
			for k, v := range m.Env {
				env = append(env, acpsdk.EnvVariable{Name: k, Value: v})
			}
			out = append(out, acpsdk.McpServer{Stdio: &acpsdk.McpServerStdio{Name: m.Name, Command: m.Command, Args: append([]string{}, m.Args...), Env: env}})
			continue
		}
		headers := []acpsdk.HttpHeader{}
		for k, v := range m.Headers {
			headers = append(headers, acpsdk.HttpHeader{Name: k, Value: v})
		}
		out = append(out, acpsdk.McpServer{Http: &acpsdk.McpServerHttpInline{Name: m.Name, Type: "http", Url: m.URL, Headers: headers}})
	}
	return out
}

// streamEndMethod is the notification exitReader adds at the end of the
// agent's output. The SDK handles notifications in order, so when the
// client sees it, every update the agent sent before it ended is handled;
// the SDK itself says only that the peer went away, before they are.
const streamEndMethod = "_wick/stream_end"

// streamEndLine ends a line the agent may have left half written (it is
// then logged as malformed and skipped) and sends the marker.
var streamEndLine = []byte("\n{\"jsonrpc\":\"2.0\",\"method\":\"" + streamEndMethod + "\"}\n")

// exitReader keeps the error that ended the agent's stdout (the exit and
// the tail of its stderr), which the SDK does not report, and adds the
// stream-end marker before it.
type exitReader struct {
	r      io.Reader
	mu     sync.Mutex
	last   error
	marker []byte
	ended  error
}

func (e *exitReader) Read(b []byte) (int, error) {
	e.mu.Lock()
	if e.ended != nil {
		defer e.mu.Unlock()
		if len(e.marker) == 0 {
			return 0, e.ended
		}
		n := copy(b, e.marker)
		e.marker = e.marker[n:]
		return n, nil
	}
	e.mu.Unlock()
	n, err := e.r.Read(b)
	if err != nil {
		e.mu.Lock()
		if !errors.Is(err, io.EOF) {
			e.last = err
		}
		e.ended, e.marker = err, streamEndLine
		e.mu.Unlock()
		if n > 0 {
			return n, nil
		}
		return e.Read(b)
	}
	return n, err
}

func (e *exitReader) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last
}
