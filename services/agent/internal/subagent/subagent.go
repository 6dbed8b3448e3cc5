// Package subagent is the "task" tool: it hands a goal to a sub-agent — a
// child loop on a thread of its own, in the parent's sandbox — and answers
// the call with the child's final reply only, cut to a bounded size. The
// child's events reach the parent's stream wrapped and tagged with the
// parent run, the child run and the depth, so a client shows them nested
// and never takes a child's "done" for its own. With background set, the
// call starts the child as a background task instead (tasks.KindSubagent)
// and answers its id at once; the child's answer becomes the task's result.
package subagent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/ids"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/tasks"
	"github.com/wick-agent/wick/services/agent/internal/tools"
)

// Defaults of the task tool; each has an option.
const (
	// DefaultMaxDepth bounds nested sub-agents, so that a model that keeps
	// delegating cannot fork without end: a top-level run is depth 0, its
	// children depth 1.
	DefaultMaxDepth = 5
	// DefaultTimeout bounds one sub-agent run, so that a stuck child cannot
	// hold its parent's run forever.
	DefaultTimeout = 300 * time.Second
	// MaxAnswerBytes bounds the answer a sub-agent hands back: the parent
	// gets a summary, never the child's whole history.
	MaxAnswerBytes = 8 << 10
	// maxGoalChars bounds the goal the parent's model writes.
	maxGoalChars = 100_000
)

// ToolName is the tool's name, which agents name in their tools.
const ToolName = tools.Task

// GeneralPurpose is the built-in sub-agent every agent with the task tool
// has: the parent's own configuration, tools included.
const GeneralPurpose = tools.TaskGeneralPurpose

// ThreadPrefix starts the id of every sub-agent thread: thread lists leave
// these out, as the user did not start them; GetThread reads them.
const ThreadPrefix = "th_sub_"

// Statuses of an on_subagent_end event.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusTimeout   = "timeout"
	StatusStopped   = "stopped"
	StatusCancelled = "cancelled"
)

// childNote ends every sub-agent's system prompt: it runs alone, and its
// last reply is all its parent sees.
const childNote = "You are a sub-agent: another agent handed you the task in the user message. " +
	"Work on it autonomously with your tools; nobody will answer questions. " +
	"End with a reply that states the result completely: that reply is all the other agent will see."

// Errors of the task tool, wrapped in the tool errors it returns.
var (
	ErrBadInput = errors.New("invalid task")
	ErrDepth    = errors.New("sub-agent depth limit reached")
	ErrTimeout  = errors.New("sub-agent timed out")
)

// Child is one sub-agent run to start.
type Child struct {
	// Name is the sub-agent's name (GeneralPurpose or a declared one).
	Name string
	// Config is the child's configuration: autonomous, its own prompt,
	// model and tools, the parent's backend.
	Config          *loop.AgentConfig
	RunID, ThreadID string
	// Goal is the child's only input message.
	Goal string
	// A2A, when set, is the remote agent the goal is sent to instead of a
	// child loop here.
	A2A *loop.A2ACfg
	// Depth is how deep the child runs (1 for a child of a top-level run).
	Depth int
	// Stop is the child's stop check: the parent's, so that stopping the
	// parent stops the child at its next step boundary. A background child
	// has none: its parent run has usually ended.
	Stop func(context.Context) bool
}

// Spawner runs a child loop to its end on its thread and returns the
// thread as the child left it (nil when it never started). Its events go
// to emit. The run executor implements it. A thread that already holds
// messages is a background child run again after a take-over: the spawner
// goes on from what the thread kept rather than starting over.
type Spawner interface {
	Spawn(ctx context.Context, c Child, emit func(loop.StreamEvent)) (*loop.AgentState, error)
}

// Remote calls a remote A2A agent with one goal and returns its task's
// final text (a2aclient.Client, through the tool network guard).
type Remote interface {
	Call(ctx context.Context, a *loop.A2ACfg, goal string) (string, error)
}

// Starter starts background tasks (tasks.Manager implements it).
type Starter interface {
	Begin(ctx context.Context, spec tasks.Spec) (*tasks.Task, error)
}

type config struct {
	maxDepth int
	timeout  time.Duration
	// bg starts background children; nil: the tool has no background mode.
	bg      Starter
	agentID string
	// remote calls the sub-agents declared with a2a; nil refuses them.
	remote Remote
}

// Option configures the task tool.
type Option func(*config)

// WithMaxDepth bounds how deep sub-agents nest (default 5).
func WithMaxDepth(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxDepth = n
		}
	}
}

// WithTimeout sets the timeout of sub-agents that declare none (default 300 s).
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithBackground gives the tool its background mode: a call with
// background set starts its child as a task through bg. agentID is the
// parent's agent, stored with the task so that any replica can run the
// child again. Only a top-level run's tool gets it (see Tool.Execute).
func WithBackground(bg Starter, agentID string) Option {
	return func(c *config) { c.bg, c.agentID = bg, agentID }
}

// WithRemote calls the sub-agents declared with a2a through r.
func WithRemote(r Remote) Option { return func(c *config) { c.remote = r } }

// Tool is the task tool of one agent's run.
type Tool struct {
	parent *loop.AgentConfig
	spawn  Spawner
	cfg    config
}

// NewTool returns the task tool of an agent configured by parent.
func NewTool(parent *loop.AgentConfig, spawn Spawner, opts ...Option) *Tool {
	cfg := config{maxDepth: DefaultMaxDepth, timeout: DefaultTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	return &Tool{parent: parent, spawn: spawn, cfg: cfg}
}

// Enabled reports whether an agent configured by cfg has the task tool:
// it names it, or declares sub-agents.
func Enabled(cfg *loop.AgentConfig) bool {
	return len(cfg.Subagents) > 0 || slices.Contains(cfg.Tools, ToolName)
}

// Name implements loop.Tool.
func (t *Tool) Name() string { return ToolName }

// RunsInBackground implements tasks.Background: a tool with a background
// mode gives its agent check_task, cancel_task and list_tasks.
func (t *Tool) RunsInBackground() bool { return t.cfg.bg != nil }

// Description implements loop.Tool; it lists the sub-agents.
func (t *Tool) Description() string {
	var b strings.Builder
	b.WriteString("Hand a self-contained task to a sub-agent, which works on it alone, in the same workspace, " +
		"and answers with its final reply only (the tool's result). Several task calls in one turn run in parallel. " +
		"Describe the task completely: the sub-agent sees nothing of this conversation. ")
	if t.cfg.bg != nil {
		b.WriteString("With background set, the call answers a task id at once and you go on; the sub-agent's final reply " +
			"is added to this conversation when it finishes (check_task, cancel_task and list_tasks follow it). ")
	}
	b.WriteString("Sub-agents:\n")
	fmt.Fprintf(&b, "- %s: has your tools; for any multi-step task.\n", GeneralPurpose)
	for _, s := range t.parent.Subagents {
		fmt.Fprintf(&b, "- %s: %s\n", s.Name, s.Description)
	}
	return b.String()
}

// Parameters implements loop.Tool.
func (t *Tool) Parameters() map[string]any {
	names := []any{GeneralPurpose}
	for _, s := range t.parent.Subagents {
		names = append(names, s.Name)
	}
	props := map[string]any{
		"subagent_type": map[string]any{"type": "string", "enum": names, "description": "which sub-agent runs the task (default " + GeneralPurpose + ")"},
		"description":   map[string]any{"type": "string", "description": "the task: what to do and what to answer with"},
	}
	if t.cfg.bg != nil {
		props["background"] = map[string]any{"type": "boolean", "description": "run the sub-agent in the background: answer a task id now, add its reply to the conversation when it finishes (default false)"}
	}
	return map[string]any{"type": "object", "properties": props, "required": []any{"description"}}
}

// Execute implements loop.Tool: it runs the sub-agent in the call's context,
// so cancelling the parent cancels the child, and bounds it by its timeout.
// With background set, and a background mode (a top-level run's tool), it
// starts the child as a task and answers the task's id instead. A tool
// without one — a sub-agent's own — runs such a call in the foreground: a
// sub-agent's thread never runs again once it answered, so a result
// delivered to it later would never be read.
func (t *Tool) Execute(ctx context.Context, args map[string]any) (string, error) {
	in, err := parseArgs(args)
	if err != nil {
		return "", err
	}
	child, timeout, err := t.childConfig(in.name)
	if err != nil {
		return "", err
	}
	depth := Depth(ctx) + 1
	if depth > t.cfg.maxDepth {
		return "", fmt.Errorf("%w: a sub-agent here would run at depth %d, and sub-agents nest at most %d deep; do this task yourself", ErrDepth, depth, t.cfg.maxDepth)
	}
	c := Child{Name: in.name, Config: child, RunID: ids.New("run_"), ThreadID: ids.New(ThreadPrefix), Goal: in.goal, Depth: depth, A2A: t.remoteOf(in.name)}
	if in.background && t.cfg.bg != nil {
		return t.begin(ctx, c)
	}
	// The stop check reads the parent's through the call's context, not
	// the child's, whose own rounds would ask themselves.
	c.Stop = func(context.Context) bool { return loop.StopRequested(ctx) }
	call, _ := loop.CallInfoFromContext(ctx)
	return t.run(ctx, c, timeout, call.RunID, call.ToolCallID, func(ev loop.StreamEvent) { loop.Emit(ctx, ev) })
}

// begin starts child c as a background task of the call's run.
func (t *Tool) begin(ctx context.Context, c Child) (string, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return "", err
	}
	call, _ := loop.CallInfoFromContext(ctx)
	task, err := t.cfg.bg.Begin(context.WithoutCancel(ctx), tasks.Spec{
		User: user, ThreadID: call.ThreadID, RunID: call.RunID, ToolCallID: call.ToolCallID, Tool: ToolName, Kind: tasks.KindSubagent,
		Subagent: &tasks.Subagent{
			AgentID: t.cfg.agentID, Orgs: identity.Orgs(ctx), Name: c.Name, Goal: c.Goal, Depth: c.Depth, ThreadID: c.ThreadID, RunID: c.RunID,
		},
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Started sub-agent %s in background task %s (its thread %s). Its final reply will be added to this conversation "+
		"when it finishes; check_task, cancel_task and list_tasks follow it.", c.Name, task.ID, c.ThreadID), nil
}

// RunTask runs the child of a background task (tasks.KindSubagent) to its
// end and returns its answer, the task's result: on the replica that
// started it, or on one that took the task over, which goes on on the
// child's thread. ctx is the task's (cancel_task ends it); the child's
// timeout bounds each start. Its events, tagged as a foreground child's,
// go to emit.
func (t *Tool) RunTask(ctx context.Context, task *tasks.Task, emit func(loop.StreamEvent)) (string, error) {
	s := task.Subagent
	if s == nil {
		return "", fmt.Errorf("%w: task %s names no sub-agent", ErrBadInput, task.ID)
	}
	child, timeout, err := t.childConfig(s.Name)
	if err != nil {
		return "", err
	}
	c := Child{Name: s.Name, Config: child, RunID: s.RunID, ThreadID: s.ThreadID, Goal: s.Goal, Depth: s.Depth, A2A: t.remoteOf(s.Name)}
	return t.run(ctx, c, timeout, task.RunID, task.ToolCallID, emit)
}

// run runs child c to its end, bounded by timeout, announcing it to emit
// (tagged with the parent's run and call) and wrapping its events.
func (t *Tool) run(ctx context.Context, c Child, timeout time.Duration, parentRunID, toolCallID string, emit func(loop.StreamEvent)) (string, error) {
	meta := tags{name: c.Name, runID: c.RunID, threadID: c.ThreadID, parentRunID: parentRunID, toolCallID: toolCallID, depth: int32(c.Depth)}
	var err error
	emit(loop.StreamEvent{Name: c.Name, Data: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnSubagentStart{OnSubagentStart: &agentv1.SubagentStartData{
		Name: meta.name, RunId: meta.runID, ThreadId: meta.threadID, ParentRunId: meta.parentRunID, ToolCallId: meta.toolCallID, Depth: meta.depth,
		Description: proto.String(c.Goal),
	}}}})
	cctx, cancel := context.WithTimeoutCause(withDepth(ctx, c.Depth), timeout, ErrTimeout)
	defer cancel()
	var answer, status string
	if c.A2A != nil {
		answer, status, err = t.callRemote(ctx, cctx, c, timeout)
	} else {
		state, serr := t.spawn.Spawn(cctx, c, func(ev loop.StreamEvent) { emit(wrap(meta, ev)) })
		answer, status, err = outcome(ctx, cctx, c, timeout, state, serr)
	}
	end := &agentv1.SubagentEndData{
		Name: meta.name, RunId: meta.runID, ThreadId: meta.threadID, ParentRunId: meta.parentRunID, ToolCallId: meta.toolCallID, Depth: meta.depth,
		Status: status,
	}
	if err != nil {
		end.Error = proto.String(err.Error())
	}
	emit(loop.StreamEvent{Name: c.Name, Data: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnSubagentEnd{OnSubagentEnd: end}}})
	return answer, err
}

// remoteOf is the remote agent of the named sub-agent, nil for one that
// runs here.
func (t *Tool) remoteOf(name string) *loop.A2ACfg {
	for _, s := range t.parent.Subagents {
		if s.Name == name {
			return s.A2A
		}
	}
	return nil
}

// callRemote sends child c's goal to its remote A2A agent within cctx
// (the child's timeout). Its answer is cut like a local child's; a failure
// names the remote agent, as the model only knows the sub-agent's name.
func (t *Tool) callRemote(ctx, cctx context.Context, c Child, timeout time.Duration) (answer, status string, _ error) {
	if t.cfg.remote == nil {
		return "", StatusFailed, fmt.Errorf("sub-agent %s is a remote A2A agent, and this service calls none", c.Name)
	}
	text, err := t.cfg.remote.Call(cctx, c.A2A, c.Goal)
	switch {
	case err == nil:
		return cut(strings.TrimSpace(text), "the remote agent's answer has %d bytes"), StatusCompleted, nil
	case ctx.Err() != nil:
		return "", StatusCancelled, fmt.Errorf("sub-agent %s (A2A agent %s) was cancelled with its parent: %w", c.Name, c.A2A.URL, ctx.Err())
	case errors.Is(context.Cause(cctx), ErrTimeout):
		return "", StatusTimeout, fmt.Errorf("%w: %s (A2A agent %s) did not finish within %s (its timeout)", ErrTimeout, c.Name, c.A2A.URL, timeout)
	default:
		return "", StatusFailed, fmt.Errorf("sub-agent %s (A2A agent %s) failed: %w", c.Name, c.A2A.URL, err)
	}
}

// input is a task call's arguments.
type input struct {
	name, goal string
	background bool
}

// parseArgs reads the call's arguments.
func parseArgs(args map[string]any) (input, error) {
	in := input{name: GeneralPurpose}
	if v, ok := args["subagent_type"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return input{}, fmt.Errorf("%w: subagent_type must be a string", ErrBadInput)
		}
		if s != "" {
			in.name = s
		}
	}
	if v, ok := args["background"]; ok && v != nil {
		b, ok := v.(bool)
		if !ok {
			return input{}, fmt.Errorf("%w: background must be true or false", ErrBadInput)
		}
		in.background = b
	}
	goal, _ := args["description"].(string)
	in.goal = strings.TrimSpace(goal)
	switch {
	case in.goal == "":
		return input{}, fmt.Errorf("%w: description is empty; say what the sub-agent should do", ErrBadInput)
	case len(in.goal) > maxGoalChars:
		return input{}, fmt.Errorf("%w: description has %d bytes, at most %d", ErrBadInput, len(in.goal), maxGoalChars)
	}
	return in, nil
}

// childConfig is the configuration and timeout of the named sub-agent. A
// child is never interactive (approving the parent's task call approved
// its work) and never asks the user: nobody watches it.
func (t *Tool) childConfig(name string) (*loop.AgentConfig, time.Duration, error) {
	c := *t.parent
	c.Name, c.Approval = name, loop.ApprovalAutonomous
	timeout := t.cfg.timeout
	if name == GeneralPurpose {
		c.SystemPrompt = strings.TrimSpace(t.parent.SystemPrompt + "\n\n" + childNote)
	} else {
		i := slices.IndexFunc(t.parent.Subagents, func(s loop.SubagentCfg) bool { return s.Name == name })
		if i < 0 {
			known := []string{GeneralPurpose}
			for _, s := range t.parent.Subagents {
				known = append(known, s.Name)
			}
			return nil, 0, fmt.Errorf("%w: unknown sub-agent %q; this agent has %s", ErrBadInput, name, strings.Join(known, ", "))
		}
		s := t.parent.Subagents[i]
		c.SystemPrompt = strings.TrimSpace(s.Prompt + "\n\n" + childNote)
		c.Tools = s.Tools
		if s.Model != nil {
			c.Model = s.Model
		}
		if s.Timeout > 0 {
			timeout = s.Timeout
		}
	}
	c.Tools = slices.DeleteFunc(slices.Clone(c.Tools), func(n string) bool { return n == tools.AskUser })
	return &c, timeout, nil
}

// outcome turns how the child ended into the tool's answer, the status of
// EventEnd and the tool error. A failure of the child is the parent's tool
// error, never the parent's failure.
func outcome(ctx, cctx context.Context, c Child, timeout time.Duration, state *loop.AgentState, err error) (answer, status string, _ error) {
	switch {
	case err == nil:
		return Answer(state), StatusCompleted, nil
	case ctx.Err() != nil:
		return "", StatusCancelled, fmt.Errorf("sub-agent %s was cancelled with its parent: %w", c.Name, ctx.Err())
	case errors.Is(context.Cause(cctx), ErrTimeout):
		return "", StatusTimeout, fmt.Errorf("%w: %s did not finish within %s (its timeout); thread %s keeps what it did", ErrTimeout, c.Name, timeout, c.ThreadID)
	case errors.Is(err, loop.ErrStopped):
		return "", StatusStopped, fmt.Errorf("sub-agent %s stopped at a step boundary, as its parent run is stopping; thread %s keeps what it did", c.Name, c.ThreadID)
	default:
		return "", StatusFailed, fmt.Errorf("sub-agent %s failed: %w", c.Name, err)
	}
}

// Answer is the child's final reply, cut to MaxAnswerBytes on a rune
// boundary with a note that says so.
func Answer(state *loop.AgentState) string {
	if state == nil || len(state.Messages) == 0 {
		return ""
	}
	text := strings.TrimSpace(state.Messages[len(state.Messages)-1].Content)
	return cut(text, "the sub-agent's answer has %d bytes; its thread "+state.ThreadID+" holds it whole")
}

// cut cuts text to MaxAnswerBytes on a rune boundary with a note, note
// formatted with text's length.
func cut(text, note string) string {
	if len(text) <= MaxAnswerBytes {
		return text
	}
	return strings.ToValidUTF8(text[:MaxAnswerBytes], "") + "\n…[cut: " + fmt.Sprintf(note, len(text)) + "]"
}

// tags place a sub-agent in the tree of runs, on each of its events.
type tags struct {
	name, runID, threadID, parentRunID, toolCallID string
	depth                                          int32
}

// wrap tags one event of a child for the parent's stream. Events of a
// deeper sub-agent are already tagged (with their own parent run) and
// pass through as they are.
func wrap(meta tags, ev loop.StreamEvent) loop.StreamEvent {
	switch ev.Data.GetKind().(type) {
	case *agentv1.RunEventData_OnSubagentStart, *agentv1.RunEventData_OnSubagentEvent, *agentv1.RunEventData_OnSubagentEnd:
		return ev
	}
	return loop.StreamEvent{Name: meta.name, Data: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnSubagentEvent{OnSubagentEvent: &agentv1.SubagentEventData{
		Name: meta.name, RunId: meta.runID, ThreadId: meta.threadID, ParentRunId: meta.parentRunID, ToolCallId: meta.toolCallID, Depth: meta.depth,
		Event: &agentv1.ChildEvent{Event: ev.Event(), Name: proto.String(ev.Name), Data: ev.Data},
	}}}}
}

type depthKey struct{}

// Depth is how deep ctx runs: 0 in a top-level run, n inside a sub-agent
// at depth n.
func Depth(ctx context.Context) int {
	d, _ := ctx.Value(depthKey{}).(int)
	return d
}

func withDepth(ctx context.Context, d int) context.Context {
	return context.WithValue(ctx, depthKey{}, d)
}
