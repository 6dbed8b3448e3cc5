package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/errcode"
)

// Defaults of the loop; each is configurable.
const (
	// DefaultMaxTurns bounds LLM↔tool rounds per run, so that a model that
	// never stops calling tools still ends its run.
	DefaultMaxTurns = 25
	// DefaultToolTimeout bounds one tool call.
	DefaultToolTimeout = 10 * time.Minute
	// DefaultCancelGrace is how long a cancelled round waits for its tools
	// to return before giving them "cancelled" results; the run ends well
	// within a second of cancellation.
	DefaultCancelGrace = 300 * time.Millisecond
	// DefaultSaveTimeout bounds the save after a cancellation, which runs on
	// a context that is no longer cancelled.
	DefaultSaveTimeout = 5 * time.Second
)

// Result texts the loop writes into tool messages.
const (
	CancelledToolResult   = "cancelled: run was cancelled before this tool call finished"
	InterruptedToolResult = "cancelled: the previous run ended before this tool call finished"
	RejectedToolResult    = "rejected by the user"
	// RememberedRejectedToolResult answers a call of a tool the user
	// rejected with "always" earlier on the thread.
	RememberedRejectedToolResult = RejectedToolResult + " (remembered for this thread)"
	FailedToolResult             = "not executed: the run failed before this tool call could run"
	// NotNeededToolResult answers the calls a round stopped waiting for
	// (tool_wait "any" or "majority").
	NotNeededToolResult = "cancelled: not needed, the round went on with the results that came first (tool_wait %s)"
)

// Stop reasons reported in the data of the final event.
const (
	StopCompleted = "completed"
	StopMaxTurns  = "max_turns"
	StopCancelled = "cancelled"
	StopError     = "error"
	// StopStopped ends a run stopped gracefully at a step boundary; a new
	// run continues it (Runner.Continue).
	StopStopped = "stopped"
)

// Approval actions of a Decision.
const (
	ActionApprove = "approve"
	ActionReject  = "reject"
	ActionEdit    = "edit"
)

// Errors of Run.
var (
	ErrInvalidInput  = errcode.New(codes.InvalidArgument, "invalid input")
	ErrMaxTurns      = errors.New("the agent reached its maximum number of turns before finishing")
	ErrNoApprover    = errors.New("interactive agent has no approver")
	ErrInvalidConfig = errors.New("invalid agent configuration")
	// ErrStopped is what Run returns when it stopped gracefully on request
	// (WithStopCheck), after its "done" event.
	ErrStopped = errors.New("the run was stopped")
	// ErrNothingToContinue means Continue was given an empty thread.
	ErrNothingToContinue = errors.New("the thread has no messages to continue from")
	errSave              = errors.New("save")
)

// Approver decides pending tool calls of interactive agents. Approve blocks
// until the user has decided every call or ctx ends. It calls announce,
// which emits the run's on_interrupt event, once it would accept the
// user's decisions: a client that answers the event at once must never be
// told the run is not waiting.
type Approver interface {
	Approve(ctx context.Context, runID string, calls []llm.ToolCall, announce func()) ([]Decision, error)
}

// Decision is the user's decision on one tool call.
type Decision struct {
	ToolCallID string         `json:"tool_call_id"`
	Action     string         `json:"action"` // "approve", "reject" or "edit"
	Args       map[string]any `json:"args,omitempty"`
	Message    string         `json:"message,omitempty"`
	// Always remembers the decision on the thread for later calls of the
	// same kind (an edit is remembered as an approval).
	Always bool `json:"always,omitempty"`
}

// Runner runs an agent's loop. It is safe for concurrent runs on different
// states, provided its hooks are (Build's hooks are built per run).
type Runner struct {
	cfg         *AgentConfig
	model       llm.Provider
	hooks       []Hook
	tools       []Tool
	maxTurns    int
	approver    Approver
	logger      *slog.Logger
	toolTimeout time.Duration
	cancelGrace time.Duration
	saveTimeout time.Duration
	maxTokens   int
	// stopRequested is asked at each step boundary whether to stop there.
	stopRequested func(context.Context) bool
	// observer learns how each tool call ended; nil when nobody asks.
	observer ToolObserver
}

// How a tool call ended, as a ToolObserver is told.
const (
	ToolOK        = "ok"
	ToolError     = "error"
	ToolRejected  = "rejected"
	ToolCancelled = "cancelled"
	ToolTimeout   = "timeout"
)

// ToolObserver learns how each tool call the loop decided on ended, and how
// long it ran: once per call, whatever happened to it.
type ToolObserver interface {
	// ToolCallEnded reports a call of name; known is false when the agent
	// has no tool of that name (the model made it up). d is zero for a
	// call that never ran (rejected, or cancelled before it started).
	ToolCallEnded(ctx context.Context, name string, known bool, outcome string, d time.Duration)
}

// RunnerOption configures a Runner.
type RunnerOption func(*Runner)

// WithMaxTurns overrides the configured maximum number of turns.
func WithMaxTurns(n int) RunnerOption {
	return func(r *Runner) {
		if n > 0 {
			r.maxTurns = n
		}
	}
}

// WithApprover sets the approver of interactive agents.
func WithApprover(a Approver) RunnerOption { return func(r *Runner) { r.approver = a } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) RunnerOption {
	return func(r *Runner) {
		if l != nil {
			r.logger = l
		}
	}
}

// WithToolTimeout bounds each tool call; zero or less means no bound.
func WithToolTimeout(d time.Duration) RunnerOption { return func(r *Runner) { r.toolTimeout = d } }

// WithCancelGrace sets how long a cancelled round waits for its tools.
func WithCancelGrace(d time.Duration) RunnerOption { return func(r *Runner) { r.cancelGrace = d } }

// WithSaveTimeout bounds the save after cancellation.
func WithSaveTimeout(d time.Duration) RunnerOption { return func(r *Runner) { r.saveTimeout = d } }

// WithStopCheck sets what the loop asks, after each step (a model call and
// the tool round it asked for, saved), whether to stop gracefully there.
func WithStopCheck(requested func(context.Context) bool) RunnerOption {
	return func(r *Runner) { r.stopRequested = requested }
}

// WithToolObserver tells o how each tool call ended (for metrics).
func WithToolObserver(o ToolObserver) RunnerOption { return func(r *Runner) { r.observer = o } }

// WithMaxTokens sets the max_tokens of each model request.
func WithMaxTokens(n int) RunnerOption { return func(r *Runner) { r.maxTokens = n } }

// NewRunner builds a runner for cfg. tools are the agent's own tools (builtins,
// HTTP callbacks, custom); hooks register more on the state each run.
func NewRunner(cfg *AgentConfig, model llm.Provider, hooks []Hook, tools []Tool, opts ...RunnerOption) *Runner {
	if cfg == nil {
		cfg = &AgentConfig{}
	}
	r := &Runner{
		cfg:         cfg,
		model:       model,
		hooks:       hooks,
		tools:       tools,
		maxTurns:    DefaultMaxTurns,
		logger:      slog.New(slog.DiscardHandler),
		toolTimeout: DefaultToolTimeout,
		cancelGrace: DefaultCancelGrace,
		saveTimeout: DefaultSaveTimeout,
	}
	if cfg.MaxTurns > 0 {
		r.maxTurns = cfg.MaxTurns
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// run is the state of one Run call.
type run struct {
	*Runner
	id     string
	state  *AgentState
	emitMu sync.Mutex
	emitFn func(StreamEvent)
	save   func(context.Context, *AgentState) error
	// toolsByName is this run's tool set: the runner's tools merged with
	// those hooks registered on the state.
	toolsByName map[string]Tool
	schema      []llm.ToolSchema
}

func (r *run) emit(ev StreamEvent) {
	if r.emitFn == nil {
		return
	}
	ev.RunID = r.id
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	r.emitFn(ev)
}

// Run appends input to state.Messages (after ValidateUserInput), runs
// BeforeAgent once, then up to MaxTurns LLM↔tool rounds. Every event goes to
// emit, the last one being "done" or "error". save is called after every
// tool round and at the end — after cancellation on a context that is not
// cancelled — so a crash loses at most the round in flight, and the saved
// state never holds a tool call without its result. On cancellation Run
// returns ctx.Err().
func (r *Runner) Run(ctx context.Context, runID string, state *AgentState, input []llm.Message, emit func(StreamEvent), save func(context.Context, *AgentState) error) error {
	if err := Messages(input).ValidateUserInput(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	return r.run(ctx, runID, state, input, emit, save)
}

// Continue runs the loop on state as Run does, without new input: the model
// picks up the thread where a stopped run left it.
func (r *Runner) Continue(ctx context.Context, runID string, state *AgentState, emit func(StreamEvent), save func(context.Context, *AgentState) error) error {
	if len(state.Messages) == 0 {
		return ErrNothingToContinue
	}
	return r.run(ctx, runID, state, nil, emit, save)
}

func (r *Runner) run(ctx context.Context, runID string, state *AgentState, input []llm.Message, emit func(StreamEvent), save func(context.Context, *AgentState) error) error {
	if err := CheckToolWait(r.cfg.ToolWait); err != nil {
		return err
	}
	switch r.cfg.Approval {
	case "", ApprovalAutonomous:
	case ApprovalInteractive:
		if r.approver == nil {
			return ErrNoApprover
		}
	default:
		// A misspelt "interactive" must not quietly run tools unapproved.
		return fmt.Errorf("%w: approval %q (want %q or %q)", ErrInvalidConfig, r.cfg.Approval, ApprovalAutonomous, ApprovalInteractive)
	}
	if save == nil {
		save = func(context.Context, *AgentState) error { return nil }
	}
	rn := &run{Runner: r, id: runID, state: state, emitFn: emit, save: save}

	state.Messages = RepairToolCalls(state.Messages, InterruptedToolResult)
	state.Messages = append(state.Messages, input...)
	state.ResetTools()

	err := rn.loop(ctx)
	switch {
	case err == nil, errors.Is(err, ErrStopped):
		return err
	case ctx.Err() != nil:
		return rn.finishCancelled(ctx)
	default:
		// Keep what the run did so far (at least the input), unless saving
		// is what failed, and never with an unanswered tool call.
		state.Messages = RepairToolCalls(state.Messages, FailedToolResult)
		if !errors.Is(err, errSave) && !errors.Is(err, ErrMaxTurns) {
			if saveErr := rn.save(ctx, state); saveErr != nil {
				r.logger.WarnContext(ctx, "save after error failed", "err", saveErr)
			}
		}
		rn.emit(StreamEvent{ThreadID: state.ThreadID, Data: ErrorData(err.Error(), "", stopReason(err))})
		return err
	}
}

func stopReason(err error) string {
	if errors.Is(err, ErrMaxTurns) {
		return StopMaxTurns
	}
	return StopError
}

// loop runs BeforeAgent and the turns. It saves after each round and at the
// end, except when ctx was cancelled, which Run handles.
func (r *run) loop(ctx context.Context) error {
	for _, h := range r.hooks {
		if err := h.BeforeAgent(ctx, r.state); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("hook %s: before_agent: %w", h.Name(), err)
		}
	}
	r.buildTools()

	modelFn := ChainModelCall(r.hooks, r.callModel)
	toolFn := ChainToolCall(r.hooks, r.execTool)

	// Hooks may emit events while they shape a request (the knowledge hook
	// reports the sources it injects).
	hookCtx := withScope(ctx, &runScope{emit: r.emit})
	for turn := 0; turn < r.maxTurns; turn++ {
		msgs := r.requestMessages()
		for _, h := range r.hooks {
			var err error
			if msgs, err = h.ModifyRequest(hookCtx, msgs); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("hook %s: modify_request: %w", h.Name(), err)
			}
		}
		resp, err := modelFn(ctx, msgs)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("model call: %w", err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ai := r.assistantMessage(resp, turn)
		if len(ai.ToolCalls) == 0 && ai.Content == "" {
			// An empty reply is still a reply; keep the history valid.
			ai.Content = " "
		}
		r.state.Messages = append(r.state.Messages, ai)
		if len(ai.ToolCalls) == 0 {
			if err := r.save(ctx, r.state); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("%w: %w", errSave, err)
			}
			r.emit(StreamEvent{ThreadID: r.state.ThreadID, Data: DoneData(StopCompleted)})
			return nil
		}
		if err := r.toolRound(ctx, toolFn, ai.ToolCalls); err != nil {
			return err
		}
		if err := r.save(ctx, r.state); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w: %w", errSave, err)
		}
		if r.stopRequested != nil && r.stopRequested(ctx) {
			r.emit(StreamEvent{ThreadID: r.state.ThreadID, Data: DoneData(StopStopped)})
			return ErrStopped
		}
	}
	return fmt.Errorf("%w (max_turns=%d)", ErrMaxTurns, r.maxTurns)
}

// finishCancelled gives every unanswered tool call a result and saves on a
// context that is no longer cancelled.
func (r *run) finishCancelled(ctx context.Context) error {
	r.state.Messages = RepairToolCalls(r.state.Messages, CancelledToolResult)
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.saveTimeout)
	defer cancel()
	if err := r.save(saveCtx, r.state); err != nil {
		r.logger.WarnContext(saveCtx, "save after cancellation failed", "err", err)
	}
	r.emit(StreamEvent{ThreadID: r.state.ThreadID, Data: ErrorData("run cancelled", "", StopCancelled)})
	return ctx.Err()
}

// buildTools merges the runner's tools with those hooks registered on the
// state (state tools win on a name clash) and builds their schemas.
func (r *run) buildTools() {
	r.toolsByName = make(map[string]Tool, len(r.tools))
	for _, t := range r.tools {
		r.toolsByName[t.Name()] = t
	}
	for _, t := range r.state.Tools() {
		r.toolsByName[t.Name()] = t
	}
	names := make([]string, 0, len(r.toolsByName))
	for n := range r.toolsByName {
		names = append(names, n)
	}
	sort.Strings(names)
	r.schema = make([]llm.ToolSchema, 0, len(names))
	for _, n := range names {
		t := r.toolsByName[n]
		r.schema = append(r.schema, llm.ToolSchema{Name: n, Description: t.Description(), Parameters: t.Parameters()})
	}
}

// requestMessages is the configured system prompt followed by the thread.
// Without a system prompt it is the thread itself, not a copy: hooks return a
// new slice when they change the request (AppendSystem, the summary), and the
// capacity is cut so that a hook's append cannot write into the thread's
// spare capacity. Results the model discarded (discard_steps) are replaced
// by a one-line placeholder, in a copy.
func (r *run) requestMessages() []llm.Message {
	thread := WithoutDiscarded(r.state.Messages)
	if r.cfg.SystemPrompt == "" {
		n := len(thread)
		return thread[:n:n]
	}
	msgs := make([]llm.Message, 0, len(thread)+1)
	msgs = append(msgs, System(r.cfg.SystemPrompt))
	return append(msgs, thread...)
}

// streamed is what the model's Stream returned.
type streamed struct {
	res llm.Result
	err error
}

// callModel is the center of the model-call onion: a streamed LLM call whose
// deltas become on_chat_model_stream events. The request's messages are msgs
// as they are: no conversion happens between the loop and the client.
func (r *run) callModel(ctx context.Context, msgs []llm.Message) (*llm.Result, error) {
	req := llm.Request{Messages: msgs, Tools: r.schema, MaxTokens: r.maxTokens}
	if m, ok := r.cfg.Model.(string); ok {
		req.Model = m
	}
	// The system prompt travels as the leading system message(s); clients
	// that need it apart lift it out.
	//
	// Stream runs apart from the loop, so that a client which ignores ctx
	// cannot keep a cancelled run alive. Its deltas are emitted from its
	// own goroutine as they come (one hand-over fewer per token than a
	// channel to the loop), under the emit lock and only while ctx lasts.
	done := make(chan streamed, 1)
	go func() {
		res, err := r.model.Stream(ctx, req, func(ev llm.Event) error {
			if ev.Delta == "" {
				return nil
			}
			return r.emitDelta(ctx, ev.Delta)
		})
		done <- streamed{res, err}
	}()

	select {
	case out := <-done:
		if out.err != nil {
			return nil, out.err
		}
		resp := &out.res
		if resp.FinishReason == "" {
			resp.FinishReason = llm.FinishStop
			if len(resp.ToolCalls) > 0 {
				resp.FinishReason = llm.FinishToolCalls
			}
		}
		if resp.Usage != (llm.Usage{}) {
			u := &agentv1.UsageData{InputTokens: proto.Int32(int32(resp.Usage.InputTokens)), OutputTokens: proto.Int32(int32(resp.Usage.OutputTokens))}
			if resp.Usage.CostMicroUSD > 0 {
				u.CostMicroUsd = proto.Int32(int32(min(resp.Usage.CostMicroUSD, math.MaxInt32)))
			}
			r.emit(StreamEvent{ThreadID: r.state.ThreadID, Data: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnUsage{OnUsage: u}}})
		}
		return resp, nil
	case <-ctx.Done():
		// A delta being emitted now ends before the run goes on (the lock
		// is the barrier); every later one finds ctx ended and is dropped.
		r.emitMu.Lock()
		defer r.emitMu.Unlock()
		return nil, ctx.Err()
	}
}

// emitDelta emits a piece of the model's answer unless ctx has ended.
func (r *run) emitDelta(ctx context.Context, delta string) error {
	if r.emitFn == nil {
		return ctx.Err()
	}
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	r.emitFn(StreamEvent{RunID: r.id, Data: DeltaData(delta)})
	return nil
}

// assistantMessage maps the model's reply onto an assistant message, naming
// calls the model left without an id.
func (r *run) assistantMessage(resp *llm.Result, turn int) llm.Message {
	ai := llm.Message{Role: llm.RoleAssistant, Content: resp.Content}
	for i, c := range resp.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%s_%d_%d", r.id, turn, i)
		}
		args := c.Args
		if args == nil {
			args = map[string]any{}
		}
		// RawArgs is kept for the run so token estimates and spans do not
		// re-encode the arguments on every turn. ArgsErr (arguments the
		// gateway could not parse) is kept on the call as reported.
		ai.ToolCalls = append(ai.ToolCalls, llm.ToolCall{ID: id, Name: c.Name, Args: args, RawArgs: argsJSON(args), ArgsErr: c.ArgsErr})
	}
	return ai
}

// execTool is the center of the tool-call onion. Tool failures become a
// result with Error set, never a Go error.
func (r *run) execTool(ctx context.Context, call llm.ToolCall) (res *ToolResult, err error) {
	res = &ToolResult{ToolCallID: call.ID, Name: call.Name}
	t, ok := r.toolsByName[call.Name]
	if !ok {
		res.Error = fmt.Sprintf("unknown tool %q", call.Name)
		return res, nil
	}
	if call.ArgsErr != "" {
		// Running the tool with the empty arguments that stand in for text
		// that did not parse would do something the model did not ask for.
		res.Error = "invalid arguments: " + call.ArgsErr
		return res, nil
	}
	parent := ctx
	if w, ok := t.(UserWait); r.toolTimeout > 0 && (!ok || !w.WaitsForUser()) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.toolTimeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			res, err = r.panicResult(ctx, call, p), nil
		}
	}()
	out, execErr := t.Execute(ctx, call.Args)
	res.Output = out
	if execErr != nil {
		res.Error = execErr.Error()
		// Only the loop's own bound is a timeout; the round's or the run's
		// end is a cancellation.
		res.timedOut = errors.Is(ctx.Err(), context.DeadlineExceeded) && parent.Err() == nil
	}
	return res, nil
}

type indexedResult struct {
	i   int
	res *ToolResult
	d   time.Duration
}

// toolRound runs the calls of one assistant message (after approval for
// interactive agents) in parallel and appends their results in call order.
// It returns ctx.Err() when cancelled, leaving unfinished calls unanswered
// for finishCancelled. Every call gets exactly one on_tool_start and then
// one on_tool_end, whatever happens to it.
func (r *run) toolRound(ctx context.Context, toolFn ToolCallFunc, calls []llm.ToolCall) error {
	results := make([]*ToolResult, len(calls))
	toRun := make([]int, 0, len(calls))
	if r.cfg.Approval == ApprovalInteractive {
		var err error
		if toRun, err = r.approve(ctx, calls, results); err != nil {
			return err
		}
		sort.Ints(toRun)
	} else {
		for i := range calls {
			toRun = append(toRun, i)
		}
	}

	scope := &runScope{emit: r.emit, state: r.state, stop: r.stopRequested}
	// The round's own context ends the calls a wait strategy no longer needs.
	rctx, stopRound := context.WithCancel(ctx)
	defer stopRound()
	tctx := withScope(rctx, scope)
	done := make(chan indexedResult, len(toRun))
	for _, i := range toRun {
		call := calls[i]
		r.emitToolStart(call)
		go func() {
			start := time.Now()
			res := r.runOne(tctx, toolFn, call)
			done <- indexedResult{i, res, time.Since(start)}
		}()
	}

	roundStart := time.Now()
	pending := len(toRun)
	need := r.needed(len(toRun))
	var grace <-chan time.Time
	ctxDone := ctx.Done()
	for pending > 0 {
		select {
		case ir := <-done:
			pending--
			if ctx.Err() != nil && ir.res.Error != "" {
				// Cut short by the cancellation (a command killed, a request
				// aborted): the call did not fail on its own, so it ends as
				// cancelled, as one that outlives the grace does.
				results[ir.i] = &ToolResult{ToolCallID: calls[ir.i].ID, Name: calls[ir.i].Name, Output: CancelledToolResult}
				r.emitToolEnd(calls[ir.i], "", CancelledToolResult)
				r.observe(ctx, calls[ir.i], ToolCancelled, ir.d)
				continue
			}
			results[ir.i] = ir.res
			r.emitToolEnd(calls[ir.i], ir.res.Output, ir.res.Error)
			r.observe(ctx, calls[ir.i], resultOutcome(ir.res), ir.d)
			if need--; need == 0 && pending > 0 {
				r.answerNotNeeded(ctx, calls, toRun, results, time.Since(roundStart))
				stopRound()
				pending = 0
			}
		case <-ctxDone:
			ctxDone = nil
			grace = time.After(r.cancelGrace)
		case <-grace:
			pending = 0
		}
	}
	scope.close()

	for _, i := range toRun {
		if results[i] == nil {
			// It did not return within the grace; whatever it returns later
			// is dropped, so its end is emitted now, saying what the thread
			// will record.
			r.emitToolEnd(calls[i], "", CancelledToolResult)
			r.observe(ctx, calls[i], ToolCancelled, time.Since(roundStart))
		}
	}
	for i, res := range results {
		if res == nil {
			continue // cancelled before it finished; finishCancelled answers it
		}
		r.state.Messages = append(r.state.Messages, toolMessage(calls[i], res))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

// needed is how many of n calls the round waits for, by the agent's
// wait strategy.
func (r *run) needed(n int) int {
	switch r.cfg.ToolWait {
	case ToolWaitAny:
		return min(n, 1)
	case ToolWaitMajority:
		return n/2 + 1
	default:
		return n
	}
}

// answerNotNeeded gives every call of toRun still running its result that
// says it was cancelled as not needed, with its end event.
func (r *run) answerNotNeeded(ctx context.Context, calls []llm.ToolCall, toRun []int, results []*ToolResult, d time.Duration) {
	text := fmt.Sprintf(NotNeededToolResult, r.cfg.ToolWait)
	for _, i := range toRun {
		if results[i] == nil {
			results[i] = &ToolResult{ToolCallID: calls[i].ID, Name: calls[i].Name, Output: text}
			r.emitToolEnd(calls[i], "", text)
			r.observe(ctx, calls[i], ToolCancelled, d)
		}
	}
}

// observe tells the observer how a call ended.
func (r *run) observe(ctx context.Context, call llm.ToolCall, outcome string, d time.Duration) {
	if r.observer == nil {
		return
	}
	_, known := r.toolsByName[call.Name]
	r.observer.ToolCallEnded(ctx, call.Name, known, outcome, d)
}

// resultOutcome is how a call that returned ended.
func resultOutcome(res *ToolResult) string {
	switch {
	case res.timedOut:
		return ToolTimeout
	case res.Error != "":
		return ToolError
	default:
		return ToolOK
	}
}

// emitToolStart announces a call the loop has decided on.
func (r *run) emitToolStart(call llm.ToolCall) {
	r.emit(StreamEvent{Name: call.Name, Data: ToolStartData(call)})
}

// emitToolEnd reports how a started call ended; errText is empty on success.
func (r *run) emitToolEnd(call llm.ToolCall, output, errText string) {
	r.emit(StreamEvent{Name: call.Name, Data: ToolEndData(call.ID, output, errText)})
}

// panicResult logs a panic of a tool or of a hook around it and turns it
// into the call's error result, so one bad tool cannot take the server down.
func (r *run) panicResult(ctx context.Context, call llm.ToolCall, p any) *ToolResult {
	r.logger.ErrorContext(ctx, "tool call panicked", "tool", call.Name, "panic", p, "stack", string(debug.Stack()))
	return &ToolResult{ToolCallID: call.ID, Name: call.Name, Error: fmt.Sprintf("tool %s failed unexpectedly", call.Name)}
}

// runOne runs one call through the tool onion; a hook's error or panic
// becomes the call's error result.
func (r *run) runOne(ctx context.Context, toolFn ToolCallFunc, call llm.ToolCall) (res *ToolResult) {
	ctx = WithCallInfo(ctx, CallInfo{ToolCallID: call.ID, ThreadID: r.state.ThreadID, RunID: r.id})
	defer func() {
		if p := recover(); p != nil {
			res = r.panicResult(ctx, call, p)
		}
	}()
	res, err := toolFn(ctx, call)
	if res == nil {
		res = &ToolResult{}
	}
	res.ToolCallID, res.Name = call.ID, call.Name
	if err != nil && res.Error == "" {
		res.Error = err.Error()
	}
	return res
}

// approve asks the approver about the calls. Rejected calls get their result
// in results and their start and end events; it returns the indexes of the
// calls to run, with edited arguments applied to calls. When no decision
// comes, every call still gets its start and an end saying it was cancelled
// or not executed, as the thread will record it.
//
// Calls of tools that wait for the user themselves (UserWait) run without
// approval: asking whether the model may ask would ask twice. Calls of a
// tool the thread has an "always" decision for are decided by it without
// asking; a decision with Always adds one.
func (r *run) approve(ctx context.Context, calls []llm.ToolCall, results []*ToolResult) ([]int, error) {
	var toRun []int
	var ask []llm.ToolCall
	for i, c := range calls {
		if w, ok := r.toolsByName[c.Name].(UserWait); ok && w.WaitsForUser() && c.ArgsErr == "" {
			toRun = append(toRun, i)
			continue
		}
		switch r.state.ApprovalAlways[c.Name] {
		case ActionApprove:
			toRun = append(toRun, i)
		case ActionReject:
			results[i] = r.reject(ctx, calls[i], RememberedRejectedToolResult)
		default:
			ask = append(ask, c)
		}
	}
	if len(ask) == 0 {
		return toRun, nil
	}
	decisions, err := r.approver.Approve(ctx, r.id, ask, func() {
		// always tells the client it may offer an "always" decision.
		r.emit(StreamEvent{ThreadID: r.state.ThreadID, Data: ApprovalData(ask)})
	})
	if err != nil {
		text := FailedToolResult
		if ctx.Err() != nil {
			text, err = CancelledToolResult, ctx.Err()
		} else {
			err = fmt.Errorf("approval: %w", err)
		}
		for i, c := range calls {
			if results[i] != nil {
				continue // rejected by a remembered decision, already ended
			}
			r.emitToolStart(c)
			r.emitToolEnd(c, "", text)
			r.observe(ctx, c, ToolCancelled, 0)
		}
		return nil, err
	}
	byID := make(map[string]Decision, len(decisions))
	for _, d := range decisions {
		byID[d.ToolCallID] = d
	}
	for i := range calls {
		if slices.Contains(toRun, i) || results[i] != nil {
			continue
		}
		d, ok := byID[calls[i].ID]
		if ok && d.Always {
			r.remember(calls[i].Name, d.Action)
		}
		switch {
		case ok && d.Action == ActionApprove:
			toRun = append(toRun, i)
		case ok && d.Action == ActionEdit:
			if d.Args != nil {
				calls[i].Args = d.Args
				calls[i].RawArgs = ""
			}
			toRun = append(toRun, i)
		default:
			msg := RejectedToolResult
			if ok && d.Message != "" {
				msg += ": " + d.Message
			} else if !ok {
				msg += ": no decision was made for this call"
			}
			results[i] = r.reject(ctx, calls[i], msg)
		}
	}
	// Edited arguments must be what the thread records as called.
	r.updateLastCalls(calls)
	return toRun, nil
}

// reject emits a call's start and end events and returns its rejected
// result. The thread keeps the rejection as the call's output, which the
// model reads; the event reports it as the call's error.
func (r *run) reject(ctx context.Context, call llm.ToolCall, msg string) *ToolResult {
	r.emitToolStart(call)
	r.emitToolEnd(call, "", msg)
	r.observe(ctx, call, ToolRejected, 0)
	return &ToolResult{ToolCallID: call.ID, Name: call.Name, Output: msg}
}

// remember keeps an "always" decision on the thread, saved with it: an
// edit is remembered as an approval, as its arguments were for one call.
func (r *run) remember(tool, action string) {
	if action == ActionEdit {
		action = ActionApprove
	}
	if action != ActionApprove && action != ActionReject {
		return
	}
	if r.state.ApprovalAlways == nil {
		r.state.ApprovalAlways = map[string]string{}
	}
	r.state.ApprovalAlways[tool] = action
}

// updateLastCalls writes (possibly edited) calls back into the last
// assistant message.
func (r *run) updateLastCalls(calls []llm.ToolCall) {
	for i := len(r.state.Messages) - 1; i >= 0; i-- {
		if r.state.Messages[i].Role == llm.RoleAssistant {
			r.state.Messages[i].ToolCalls = calls
			return
		}
	}
}

// toolMessage is the tool message for a result; errors are spelled out so
// the model can react to them.
func toolMessage(call llm.ToolCall, res *ToolResult) llm.Message {
	content := res.Output
	if res.Error != "" {
		content = "Error: " + res.Error
		if res.Output != "" {
			content += "\n" + res.Output
		}
	}
	return ToolMsg(call.ID, call.Name, content)
}

// RepairToolCalls gives every assistant tool call without a tool result a
// result with the given text, placed right after the call's existing
// results, so providers accept the history.
func RepairToolCalls(msgs []llm.Message, text string) []llm.Message {
	answered := make(map[string]bool)
	missing := 0
	for _, m := range msgs {
		if m.Role == llm.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if m.Role == llm.RoleAssistant && !answered[c.ID] {
				missing++
			}
		}
	}
	if missing == 0 {
		return msgs
	}
	out := make([]llm.Message, 0, len(msgs)+missing)
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		out = append(out, m)
		if m.Role != llm.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		for i+1 < len(msgs) && msgs[i+1].Role == llm.RoleTool {
			i++
			out = append(out, msgs[i])
		}
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				out = append(out, ToolMsg(c.ID, c.Name, text))
				answered[c.ID] = true
			}
		}
	}
	return out
}
