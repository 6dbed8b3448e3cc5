package runexec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/acp"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/ids"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/mcp"
	"github.com/wick-agent/wick/services/agent/internal/quota"
	"github.com/wick-agent/wick/services/agent/internal/registry"
	"github.com/wick-agent/wick/services/agent/internal/runs"
	"github.com/wick-agent/wick/services/agent/internal/subagent"
	"github.com/wick-agent/wick/services/agent/internal/tasks"
	"github.com/wick-agent/wick/services/agent/internal/threads"
	"github.com/wick-agent/wick/services/agent/internal/tools"
	"github.com/wick-agent/wick/wickfs"
)

// Request asks for a run of an agent on a thread.
type Request struct {
	AgentID string
	// ThreadID is the thread to continue; empty starts a new thread.
	ThreadID string
	// Input are the new messages: role and content only.
	Input []llm.Message
	// Enqueue waits for a busy thread instead of failing with threads.ErrBusy.
	Enqueue bool
	// followUp marks a run started for finished background tasks: it has no
	// input of its own and is dropped when another run took their notes.
	followUp bool
}

// RunIDAttribute is the span attribute that holds a run's id.
const RunIDAttribute = "wick.run_id"

// Start validates the request, takes the thread's run lock and starts the
// run in the background. The run's first event is logged before Start
// returns. The run outlives ctx; see Await and CancelWith.
func (e *Executor) Start(ctx context.Context, user string, req Request) (*Run, error) {
	req, err := e.validate(req)
	if err != nil {
		return nil, err
	}
	return e.begin(ctx, user, req, nil)
}

// begin starts a validated request; from is the stopped run it continues
// (nil for a new message), whose thread must still be as it left it.
func (e *Executor) begin(ctx context.Context, user string, req Request, from *runs.Run) (*Run, error) {
	entry, err := e.agent(ctx, user, req.AgentID)
	if err != nil {
		return nil, err
	}
	if e.cfg.budget != nil {
		if err := e.cfg.budget(ctx, user); err != nil {
			return nil, err
		}
	}
	lease, err := e.lockThread(ctx, user, req)
	if err != nil {
		return nil, err
	}
	// The run's slot is taken once it holds its thread: a run waiting for
	// a busy thread counts as queued, not as going.
	runID := ids.New("run_")
	// The span of the call that started the run (Stream, Invoke, ...) names
	// it, so a trace is found by the id a client sees.
	trace.SpanFromContext(ctx).SetAttributes(attribute.String(RunIDAttribute, runID))
	slot, err := quota.Hold(ctx, e.quota, user, kindRuns, runID, e.cfg.limits.Runs)
	if err != nil {
		_ = lease.Release(context.WithoutCancel(ctx))
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			slot()
			_ = lease.Release(context.WithoutCancel(ctx))
		}
	}()
	state, err := e.loadState(ctx, user, req)
	if err != nil {
		return nil, err
	}
	if from != nil && state.Version != from.ThreadVersion {
		return nil, fmt.Errorf("%w: thread %s changed since run %s stopped (continued already, or a new message was sent)", ErrNotStopped, req.ThreadID, from.ID)
	}
	build, err := e.buildRunner(ctx, user, entry)
	if err != nil {
		return nil, err
	}
	if req.Input, err = e.withTaskNotes(ctx, user, req); err != nil {
		return nil, err
	}
	r, err := e.register(ctx, user, req, runID, lease, slot, len(state.Messages))
	if err != nil {
		return nil, err
	}
	started = true
	e.launch(r, build(r), state, req.Input)
	return r, nil
}

// validate checks what the caller sent and gives a new thread its id.
func (e *Executor) validate(req Request) (Request, error) {
	if err := checkID("agent_id", req.AgentID); err != nil {
		return req, err
	}
	if len(req.Input) > e.cfg.maxInput {
		return req, invalid("messages", fmt.Sprintf("at most %d messages per request", e.cfg.maxInput))
	}
	if err := loop.Messages(req.Input).ValidateUserInput(); err != nil {
		return req, invalid("messages", err.Error())
	}
	for i, m := range req.Input {
		if len(m.ToolCalls) > 0 || m.ToolCallID != "" || m.Name != "" {
			return req, invalid(fmt.Sprintf("messages[%d]", i), "input messages carry only role and content")
		}
	}
	if req.ThreadID == "" {
		req.ThreadID = ids.New("th_")
	} else if err := checkID("thread_id", req.ThreadID); err != nil {
		return req, err
	}
	return req, nil
}

// agent returns the user's agent.
func (e *Executor) agent(ctx context.Context, user, agentID string) (*registry.Entry, error) {
	entry, err := e.agents.Get(ctx, user, agentID)
	if errors.Is(err, registry.ErrNotFound) {
		return nil, fmt.Errorf("agent %s %w", agentID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", agentID, err)
	}
	return entry, nil
}

// lockThread takes the thread's run lock, waiting for it when the request
// says to enqueue. A request that waits holds one of the user's queued
// slots meanwhile.
func (e *Executor) lockThread(ctx context.Context, user string, req Request) (threads.Lease, error) {
	lease, err := e.locker.Acquire(ctx, user, req.ThreadID, false)
	if errors.Is(err, threads.ErrBusy) && req.Enqueue {
		queued, qerr := quota.Hold(ctx, e.quota, user, kindQueued, ids.New("q_"), e.cfg.limits.Queued)
		if qerr != nil {
			return nil, qerr
		}
		lease, err = e.locker.Acquire(ctx, user, req.ThreadID, true)
		queued()
	}
	if errors.Is(err, threads.ErrBusy) {
		return nil, fmt.Errorf("%w: thread %s (set enqueue to wait for it)", err, req.ThreadID)
	}
	if err != nil {
		return nil, fmt.Errorf("lock thread %s: %w", req.ThreadID, err)
	}
	return lease, nil
}

// loadState loads the thread (or a new one) and binds it to the agent: a
// thread belongs to the agent of its first run. A new thread beyond the
// user's bound is refused here, before the model is called; the store
// refuses it again at its first save if another run took the place since.
func (e *Executor) loadState(ctx context.Context, user string, req Request) (*loop.AgentState, error) {
	state, err := e.threads.LoadOrCreate(ctx, user, req.ThreadID)
	if err != nil {
		return nil, fmt.Errorf("load thread %s: %w", req.ThreadID, err)
	}
	if lim := e.cfg.limits.Threads; state.Version == 0 && lim.Max > 0 {
		n, err := e.threads.Count(ctx, user)
		if err != nil {
			return nil, err
		}
		if !lim.Allows(n + 1) {
			return nil, lim.Refuse(user, n)
		}
	}
	if state.Version == 0 && strings.HasPrefix(req.ThreadID, subagent.ThreadPrefix) {
		// Thread lists leave such threads out as sub-agents' own: a thread
		// the user named so would vanish from them.
		return nil, invalid("thread_id", fmt.Sprintf("the prefix %q is kept for sub-agents' threads; choose another id", subagent.ThreadPrefix))
	}
	if state.AgentID != "" && state.AgentID != req.AgentID {
		return nil, invalid("thread_id", fmt.Sprintf("thread %s belongs to agent %s", req.ThreadID, state.AgentID))
	}
	state.AgentID = req.AgentID
	return state, nil
}

// buildRunner builds the agent's loop for one run: its model, its sandbox
// file system, its hooks and its tools (built-in, native, then the user's
// external ones, by name). The approver is bound per run.
func (e *Executor) buildRunner(ctx context.Context, user string, entry *registry.Entry) (func(*Run) runner, error) {
	if entry.Config.ACP != nil {
		return e.buildACP(ctx, user, entry)
	}
	p, err := e.runnerParts(ctx, user, entry)
	if err != nil {
		return nil, err
	}
	cfg := entry.Config
	askUser := slices.Contains(cfg.Tools, AskUserTool)
	return func(r *Run) runner {
		opts := append([]loop.RunnerOption{loop.WithLogger(e.logger), loop.WithStopCheck(r.stopRequested),
			loop.WithToolObserver(toolObserver{e.metrics, p.labels})}, e.cfg.runnerOptions...)
		if cfg.Approval == loop.ApprovalInteractive {
			opts = append(opts, loop.WithApprover(approver{r}))
		}
		// The user learns of a server that failed from the run itself, not
		// only from the service's log.
		for _, u := range p.unavailable {
			r.emit(u.Event())
		}
		runTools := p.tools
		if askUser {
			runTools = append(slices.Clip(p.tools), &asker{r: r})
		}
		return loop.NewRunner(cfg, p.model, p.hooks, runTools, opts...)
	}, nil
}

// runner is what executes a run: Wick's loop (loop.Runner), or the bridge
// to an external ACP agent (acp.Runner). Both end with a done or error
// event and save the thread as they go.
type runner interface {
	Run(ctx context.Context, runID string, state *loop.AgentState, input []llm.Message, emit func(loop.StreamEvent), save func(context.Context, *loop.AgentState) error) error
	Continue(ctx context.Context, runID string, state *loop.AgentState, emit func(loop.StreamEvent), save func(context.Context, *loop.AgentState) error) error
}

// buildACP builds the bridge of an agent backed by an external ACP agent:
// it runs in the agent's sandbox, its permission requests wait for the
// user's approval as tool calls do (interactive agents).
func (e *Executor) buildACP(ctx context.Context, user string, entry *registry.Entry) (func(*Run) runner, error) {
	cfg := entry.Config
	if e.processes == nil || cfg.Backend == nil {
		return nil, fmt.Errorf("%w: agent %s is backed by an ACP agent, which needs a sandbox service to run in", registry.ErrInvalid, entry.ID)
	}
	cfg, err := e.acpWithSecrets(ctx, user, entry.ID, cfg)
	if err != nil {
		return nil, err
	}
	files := e.sandboxes(entry.ID, cfg.SandboxBackend())
	return func(r *Run) runner {
		var ap acp.Approver
		if cfg.Approval == loop.ApprovalInteractive {
			ap = permissions{r}
		}
		var opts []acp.Option
		if e.acpPool != nil {
			opts = append(opts, acp.WithPool(e.acpPool, user))
		}
		return acp.New(entry.ID, cfg, e.processes, files, ap, e.logger, opts...)
	}, nil
}

// runnerParts are what a loop of an agent is built from, whether it runs
// as a run or as a sub-agent of one.
type runnerParts struct {
	model Model
	hooks []loop.Hook
	// tools are the agent's tools but ask_user, which is bound to a run.
	tools []loop.Tool
	// labels are the metric labels of the tools whose names are not the
	// operator's (the user's HTTP tools, MCP servers' tools): their kind.
	labels map[string]string
	// unavailable are the MCP servers that could not be started or did not
	// list their tools.
	unavailable []mcp.Unavailable
}

// runnerParts resolves the agent's model, sandbox file system, hooks and
// tools (built-in, the task tool, native, the user's external ones by
// name, then its MCP servers' tools).
func (e *Executor) runnerParts(ctx context.Context, user string, entry *registry.Entry) (*runnerParts, error) {
	cfg := entry.Config
	specs, err := registry.ModelSpecs(cfg.Model, e.cfg.defaultModel)
	if err != nil {
		return nil, fmt.Errorf("%w: model: %w", registry.ErrInvalid, err)
	}
	model := e.models(user, entry.ID, specs)
	var fs wickfs.FileSystem
	if cfg.Backend != nil {
		fs = e.sandboxes(entry.ID, cfg.SandboxBackend())
	}
	var hopts []hooks.BuildOption
	if e.knowledge != nil {
		hopts = append(hopts, hooks.WithKnowledge(e.knowledge))
	}
	agentHooks := hooks.Build(cfg, fs, model, hopts...)
	builtins := tools.Builtins()
	maps.Copy(builtins, e.builtins)
	var agentTools []loop.Tool
	var unavailable []mcp.Unavailable
	labels := map[string]string{}
	if subagent.Enabled(cfg) {
		opts := e.cfg.subagentOptions
		if e.tasks != nil && subagent.Depth(ctx) == 0 {
			// Only a top-level run's children run in the background: a
			// sub-agent's thread never runs again to read a later result.
			opts = append(slices.Clip(opts), subagent.WithBackground(e.tasks, entry.ID))
		}
		task, err := e.subagentTool(ctx, user, entry.ID, cfg, opts...)
		if err != nil {
			return nil, err
		}
		agentTools = append(agentTools, task)
	}
	for _, name := range cfg.Tools {
		if name == AskUserTool || name == subagent.ToolName {
			continue // bound to the run, or added above
		}
		if t, ok := builtins[name]; ok {
			agentTools = append(agentTools, t)
			continue
		}
		if t, ok := e.native[name]; ok {
			agentTools = append(agentTools, t)
			continue
		}
		def, err := e.tools.GetTool(ctx, user, name)
		if errors.Is(err, registry.ErrNotFound) {
			e.logger.Warn("agent names a tool that is not registered", "agent_id", entry.ID, "tool", name)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", name, err)
		}
		t, err := tools.NewHTTPTool(*def, e.cfg.httpClient)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", name, err)
		}
		if def.Async && e.tasks != nil {
			t = e.tasks.AsyncHTTP(t)
		}
		agentTools = append(agentTools, t)
		labels[name] = toolKindHTTP
	}
	if e.mcp != nil && len(cfg.MCPServers) > 0 {
		servers, err := e.mcpWithSecrets(ctx, user, entry.ID, cfg.MCPServers)
		if err != nil {
			return nil, err
		}
		mcpTools, down := e.mcp.Tools(ctx, user, entry.ID, cfg.SandboxBackend(), servers)
		for _, t := range mcpTools {
			agentTools = append(agentTools, t)
			labels[t.Name()] = toolKindMCP
		}
		if len(down) > 0 {
			unavailable = down
			agentHooks = append(slices.Clip(agentHooks), mcp.UnavailableHook(down))
		}
	}
	if e.tasks != nil && slices.ContainsFunc(agentTools, tasks.IsBackground) {
		agentTools = append(agentTools, e.tasks.ModelTools()...)
	}
	return &runnerParts{model: model, hooks: agentHooks, tools: agentTools, labels: labels, unavailable: unavailable}, nil
}

// register records the run and makes it this replica's, then logs its
// first event. slot gives up the run's place among the user's runs going.
// baseLen is the number of thread messages before the input.
func (e *Executor) register(ctx context.Context, user string, req Request, runID string, lease threads.Lease, slot func(), baseLen int) (*Run, error) {
	rec := &runs.Run{
		ID: runID, User: user, ThreadID: req.ThreadID, AgentID: req.AgentID,
		Status: runs.StatusRunning, CreatedAt: time.Now().UTC(), LeaseToken: lease.Token(),
	}
	if err := e.runs.Put(ctx, rec); err != nil {
		return nil, fmt.Errorf("save run record: %w", err)
	}
	// The run outlives the request (background runs, approvals), so its
	// context comes from the executor; it keeps the user and the trace.
	runCtx := identity.WithOrgs(identity.WithUser(e.base, user), identity.Orgs(ctx))
	runCtx = trace.ContextWithSpanContext(runCtx, trace.SpanContextFromContext(ctx))
	runCtx, cancelTimeout := context.WithTimeout(runCtx, e.cfg.maxRunDuration)
	runCtx, cancel := context.WithCancelCause(runCtx)
	r := &Run{
		env: e.env, user: user, rec: rec, lease: lease, slot: slot, ctx: runCtx,
		cancel:  func(cause error) { cancel(cause) },
		timeout: cancelTimeout,
		done:    make(chan struct{}), nudge: make(chan struct{}, 1), decide: make(chan struct{}, 1), waiting: make(chan struct{}, 1),
		baseLen: baseLen, inputLen: len(req.Input),
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		cancel(ErrShutdown)
		cancelTimeout()
		return nil, ErrShutdown
	}
	e.active[rec.ID] = r
	e.wg.Add(1)
	e.mu.Unlock()
	// The first event goes out at once, so that a streaming client gets its
	// response headers before the model answers.
	r.emit(loop.StreamEvent{Name: req.AgentID, Data: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnRunStart{OnRunStart: &agentv1.RunStartData{
		RunId: rec.ID, ThreadId: req.ThreadID, AgentId: req.AgentID,
	}}}})
	return r, nil
}

// launch executes a registered run in the background; it leaves this
// replica's runs before its done channel closes. A run stopped by its store
// stays this replica's after it is done, while its end is written to the
// store, so that Get answers its record meanwhile and never takes it for a
// run whose replica died.
func (e *Executor) launch(r *Run, runner runner, state *loop.AgentState, input []llm.Message) {
	kind := runKindLoop
	if _, ok := runner.(*acp.Runner); ok {
		kind = runKindACP
	}
	start := time.Now()
	e.metrics.runStarted(r.ctx, kind)
	go func() {
		defer e.wg.Done()
		defer r.timeout()
		r.execute(runner, state, input)
		e.metrics.runFinished(context.WithoutCancel(r.ctx), r.endStatus, time.Since(start))
		if r.storeFailure() != nil {
			close(r.done)
			r.writeEnd(e.base)
			e.forget(r)
			return
		}
		e.forget(r)
		close(r.done)
	}()
}

func (e *Executor) forget(r *Run) {
	e.mu.Lock()
	delete(e.active, r.rec.ID)
	e.mu.Unlock()
}
