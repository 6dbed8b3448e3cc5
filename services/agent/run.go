package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/ids"
	"github.com/wick-agent/wick/services/agent/internal/llmclient"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/redact"
	"github.com/wick-agent/wick/services/agent/internal/registry"
	"github.com/wick-agent/wick/services/agent/internal/runs"
	"github.com/wick-agent/wick/services/agent/internal/sandboxfs"
	"github.com/wick-agent/wick/services/agent/internal/threads"
	"github.com/wick-agent/wick/services/agent/internal/tools"
	"github.com/wick-agent/wick/wickfs"
)

// EventRunStart is the first event of every run, sent at once so that a
// streaming client gets its response headers before the model answers.
const EventRunStart = "on_run_start"

// Causes of a run's cancellation.
var (
	errCancelRequested = errors.New("run was cancelled")
	errClientGone      = errors.New("the client went away")
	errApprovalTimeout = errors.New("no approval decision came in time")
)

// localRun is a run this replica executes.
type localRun struct {
	s      *Service
	user   string
	rec    *runs.Run // guarded by mu
	mu     sync.Mutex
	lease  threads.Lease
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	nudge  chan struct{}
	// decide wakes Approve when decisions may have arrived.
	decide chan struct{}
	// waiting is signalled each time the run starts waiting for approval.
	waiting chan struct{}
	// baseLen is the number of thread messages before the run's input.
	baseLen  int
	inputLen int
	// final is the loop's "done" or "error" event, held back until the
	// thread lock is released; closing is set while it is logged.
	final   *loop.StreamEvent
	closing bool
	logFail error
	// err is the loop's error, set before done is closed.
	err error
}

func (r *localRun) record() *runs.Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := *r.rec
	c.Pending = append([]llm.ToolCall(nil), r.rec.Pending...)
	return &c
}

func (r *localRun) setStatus(ctx context.Context, status string, pending []llm.ToolCall, msg string) {
	r.mu.Lock()
	r.rec.Status, r.rec.Pending = status, pending
	if msg != "" {
		r.rec.Error = msg
	}
	rec := *r.rec
	r.mu.Unlock()
	if err := r.s.st.Runs.Put(ctx, &rec); err != nil {
		r.s.logger.Warn("save run record", "run_id", rec.ID, "error", err)
	}
}

// runRequest is what Invoke and Stream share.
type runRequest struct {
	agentID  string
	threadID string
	input    []llm.Message
	enqueue  bool
}

// startRun validates the request, takes the thread's run lock and starts
// the run in the background. The first event is logged before it returns.
func (s *Service) startRun(ctx context.Context, user string, req runRequest) (*localRun, error) {
	if err := checkID("agent_id", req.agentID); err != nil {
		return nil, err
	}
	if len(req.input) > s.cfg.maxInput {
		return nil, invalid("messages", fmt.Sprintf("at most %d messages per request", s.cfg.maxInput))
	}
	if err := loop.Messages(req.input).ValidateUserInput(); err != nil {
		return nil, invalid("messages", err.Error())
	}
	for i, m := range req.input {
		if len(m.ToolCalls) > 0 || m.ToolCallID != "" || m.Name != "" {
			return nil, invalid(fmt.Sprintf("messages[%d]", i), "input messages carry only role and content")
		}
	}
	if req.threadID == "" {
		req.threadID = ids.New("th_")
	} else if err := checkID("thread_id", req.threadID); err != nil {
		return nil, err
	}
	_, entry, err := s.agentFor(ctx, req.agentID)
	if err != nil {
		return nil, err
	}
	lease, err := s.st.Locker.Acquire(ctx, user, req.threadID, req.enqueue)
	if errors.Is(err, threads.ErrBusy) {
		return nil, rpcErr(fmt.Errorf("%w: thread %s (set enqueue to wait for it)", err, req.threadID))
	}
	if err != nil {
		return nil, rpcErr(err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = lease.Release(context.WithoutCancel(ctx))
		}
	}()
	state, err := s.st.Threads.LoadOrCreate(ctx, user, req.threadID)
	if err != nil {
		return nil, rpcErr(err)
	}
	if state.AgentID != "" && state.AgentID != req.agentID {
		return nil, invalid("thread_id", fmt.Sprintf("thread %s belongs to agent %s", req.threadID, state.AgentID))
	}
	state.AgentID = req.agentID

	runner, err := s.runner(ctx, user, entry)
	if err != nil {
		return nil, rpcErr(err)
	}
	rec := &runs.Run{
		ID: ids.New("run_"), User: user, ThreadID: req.threadID, AgentID: req.agentID,
		Status: runs.StatusRunning, CreatedAt: time.Now().UTC(), LeaseToken: lease.Token(),
	}
	if err := s.st.Runs.Put(ctx, rec); err != nil {
		return nil, rpcErr(err)
	}
	// The run outlives the request (background runs, approvals), so its
	// context comes from the service; it keeps the user and the trace.
	runCtx := identity.WithUser(s.base, user)
	runCtx = trace.ContextWithSpanContext(runCtx, trace.SpanContextFromContext(ctx))
	runCtx, cancelTimeout := context.WithTimeout(runCtx, s.cfg.maxRunDuration)
	runCtx, cancel := context.WithCancelCause(runCtx)
	r := &localRun{
		s: s, user: user, rec: rec, lease: lease, ctx: runCtx,
		cancel: func(cause error) { cancel(cause) },
		done:   make(chan struct{}), nudge: make(chan struct{}, 1), decide: make(chan struct{}, 1), waiting: make(chan struct{}, 1),
		baseLen: len(state.Messages), inputLen: len(req.input),
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel(errShutdown)
		cancelTimeout()
		return nil, status.Error(codes.Unavailable, errShutdown.Error())
	}
	s.active[rec.ID] = r
	s.wg.Add(1)
	s.mu.Unlock()
	r.emit(loop.StreamEvent{Event: EventRunStart, Name: req.agentID, Data: map[string]any{
		"run_id": rec.ID, "thread_id": req.threadID, "agent_id": req.agentID,
	}})
	ok = true
	go func() {
		defer s.wg.Done()
		defer cancelTimeout()
		r.execute(runner(r), state, req.input)
	}()
	return r, nil
}

// runner builds the agent's loop for one run: its model, its sandbox file
// system, its hooks and its tools. The approver is bound per run.
func (s *Service) runner(ctx context.Context, user string, e *registry.Entry) (func(*localRun) *loop.Runner, error) {
	cfg := e.Config
	specs, err := registry.ModelSpecs(cfg.Model, s.cfg.defaultModel)
	if err != nil {
		return nil, fmt.Errorf("%w: model: %w", registry.ErrInvalid, err)
	}
	var lopts []llmclient.Option
	if s.cfg.llmTimeout > 0 {
		lopts = append(lopts, llmclient.WithTimeout(s.cfg.llmTimeout))
	}
	model := llmclient.New(s.llm, specs, lopts...)
	var fs wickfs.FileSystem
	if cfg.Backend != nil {
		fs = sandboxfs.New(s.sandbox, e.ID, sandboxfs.Spec(cfg.Backend))
	}
	agentHooks := hooks.Build(cfg, fs, model)
	builtins := tools.Builtins()
	var agentTools []loop.Tool
	for _, name := range cfg.Tools {
		if t, ok := builtins[name]; ok {
			agentTools = append(agentTools, t)
			continue
		}
		def, err := s.st.Agents.GetTool(ctx, user, name)
		if errors.Is(err, registry.ErrNotFound) {
			s.logger.Warn("agent names a tool that is not registered", "agent_id", e.ID, "tool", name)
			continue
		}
		if err != nil {
			return nil, err
		}
		t, err := tools.NewHTTPTool(*def, s.cfg.httpClient)
		if err != nil {
			return nil, err
		}
		agentTools = append(agentTools, t)
	}
	return func(r *localRun) *loop.Runner {
		opts := append([]loop.RunnerOption{loop.WithLogger(s.logger)}, s.cfg.runnerOptions...)
		if cfg.Approval == loop.ApprovalInteractive {
			opts = append(opts, loop.WithApprover(r))
		}
		return loop.NewRunner(cfg, model, agentHooks, agentTools, opts...)
	}, nil
}

// emit logs one event: first in the shared log, which gives it its id, then
// in this replica's copy. Data is redacted once, here.
func (r *localRun) emit(ev loop.StreamEvent) {
	rec := r.rec // ID and ThreadID never change
	ev.RunID, ev.ThreadID = rec.ID, rec.ThreadID
	if ev.Data != nil {
		ev.Data = redact.Value(loop.JSONValue(ev.Data))
	}
	if ev.Event == loop.EventError {
		ev.Data = withErrorCode(ev.Data)
	}
	if (ev.Event == loop.EventDone || ev.Event == loop.EventError) && !r.closing {
		// The run's last event goes out only after the thread lock is
		// released (see execute), so a client that sends its next message as
		// soon as it sees "done" never finds the thread busy.
		r.final = &ev
		return
	}
	ctx := context.WithoutCancel(r.ctx)
	id, err := r.s.st.Log.Append(ctx, rec.ID, ev)
	if err != nil {
		// A run whose events cannot be logged cannot be followed: stop it.
		r.s.logger.Error("append run event", "run_id", rec.ID, "error", err)
		r.logFail = err
		r.cancel(fmt.Errorf("event log unavailable: %w", err))
		return
	}
	if r.s.local != r.s.st.Log {
		ev.ID = id
		if _, err := r.s.local.Append(ctx, rec.ID, ev); err != nil {
			r.s.logger.Warn("append local run event", "run_id", rec.ID, "error", err)
		}
	}
}

// withErrorCode gives an error event the data.code the API documents,
// taken from the loop's stop_reason when it has none.
func withErrorCode(data any) any {
	m, ok := data.(map[string]any)
	if !ok {
		m = map[string]any{}
	}
	if _, has := m["code"]; !has {
		code := "failed"
		if sr, ok := m["stop_reason"].(string); ok && sr != "" {
			code = sr
		}
		m["code"] = code
	}
	return m
}

// save is the loop's save callback: a versioned save that stops once the
// thread's lease is lost, so a run that lost its thread never overwrites it.
func (r *localRun) save(ctx context.Context, st *loop.AgentState) error {
	select {
	case <-r.lease.Lost():
		return threads.ErrLeaseLost
	default:
	}
	if err := r.s.st.Threads.Save(ctx, r.user, st); err != nil {
		return fmt.Errorf("save thread %s: %w", st.ThreadID, err)
	}
	return nil
}

// execute runs the loop and closes the run: status, final event, end of the
// log, lock release.
func (r *localRun) execute(runner *loop.Runner, state *loop.AgentState, input []llm.Message) {
	s := r.s
	defer close(r.done)
	defer func() {
		s.mu.Lock()
		delete(s.active, r.rec.ID)
		s.mu.Unlock()
	}()
	watchDone := make(chan struct{})
	go r.watch(watchDone)

	err := runner.Run(r.ctx, r.rec.ID, state, input, r.emit, r.save)
	close(watchDone)
	r.err = err

	final := context.WithoutCancel(r.ctx)
	status, msg, code := runs.StatusDone, "", ""
	if err != nil {
		cause := context.Cause(r.ctx)
		switch {
		case r.ctx.Err() != nil && (errors.Is(cause, errCancelRequested) || errors.Is(cause, errClientGone) || errors.Is(cause, errShutdown)):
			status, msg, code = runs.StatusCancelled, cause.Error(), "cancelled"
		case r.ctx.Err() != nil && cause != nil:
			status, msg, code = runs.StatusFailed, cause.Error(), "aborted"
		default:
			status, msg, code = runs.StatusFailed, err.Error(), "failed"
		}
	}
	if err := r.lease.Release(final); err != nil {
		s.logger.Warn("release thread lock", "run_id", r.rec.ID, "error", err)
	}
	if r.logFail == nil {
		r.closing = true
		switch {
		case r.final != nil:
			r.emit(*r.final)
		case status == runs.StatusDone:
			r.emit(loop.StreamEvent{Event: loop.EventDone})
		default:
			r.emit(loop.StreamEvent{Event: loop.EventError, Data: map[string]any{"message": msg, "code": code}})
		}
	}
	r.setStatus(final, status, nil, msg)
	if err := s.st.Log.End(final, r.rec.ID); err != nil {
		s.logger.Warn("end run log", "run_id", r.rec.ID, "error", err)
	}
	if s.local != s.st.Log {
		_ = s.local.End(final, r.rec.ID)
	}
}

// watch cancels the run when its lease is lost or a cancel request comes in
// (announced by a nudge, or found by polling).
func (r *localRun) watch(stop <-chan struct{}) {
	t := time.NewTicker(r.s.cfg.pollInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-r.lease.Lost():
			r.cancel(threads.ErrLeaseLost)
			return
		case <-r.nudge:
		case <-t.C:
		}
		if ok, err := r.s.st.Runs.CancelRequested(r.ctx, r.rec.ID); err == nil && ok {
			r.cancel(errCancelRequested)
			return
		}
		r.mu.Lock()
		waiting := r.rec.Status == runs.StatusWaiting
		r.mu.Unlock()
		if waiting {
			// Approve polls decisions itself; pass the nudge on.
			select {
			case r.decisionNudge() <- struct{}{}:
			default:
			}
		}
	}
}

func (r *localRun) decisionNudge() chan struct{} { return r.decide }

// Approve implements loop.Approver for interactive agents: the run waits,
// as "waiting_approval", for decisions that ResumeRun stores on any replica.
func (r *localRun) Approve(ctx context.Context, _ string, calls []llm.ToolCall) ([]loop.Decision, error) {
	r.setStatus(ctx, runs.StatusWaiting, calls, "")
	select {
	case r.waiting <- struct{}{}:
	default:
	}
	timeout := time.NewTimer(r.s.cfg.approvalTimeout)
	defer timeout.Stop()
	poll := time.NewTicker(r.s.cfg.pollInterval)
	defer poll.Stop()
	for {
		d, err := r.s.st.Runs.TakeDecisions(ctx, r.rec.ID)
		if err != nil {
			r.s.logger.Warn("read approval decisions", "run_id", r.rec.ID, "error", err)
		}
		if d != nil {
			r.setStatus(ctx, runs.StatusRunning, nil, "")
			return completeDecisions(calls, d), nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timeout.C:
			r.cancel(errApprovalTimeout)
			return nil, errApprovalTimeout
		case <-r.decisionNudge():
		case <-poll.C:
		}
	}
}

// completeDecisions gives every pending call a decision: a call the user
// did not decide is rejected.
func completeDecisions(calls []llm.ToolCall, d []loop.Decision) []loop.Decision {
	byID := map[string]loop.Decision{}
	for _, x := range d {
		byID[x.ToolCallID] = x
	}
	out := make([]loop.Decision, 0, len(calls))
	for _, c := range calls {
		if x, ok := byID[c.ID]; ok {
			out = append(out, x)
		} else {
			out = append(out, loop.Decision{ToolCallID: c.ID, Action: loop.ActionReject, Message: "no decision was given for this call"})
		}
	}
	return out
}
