package runexec

import (
	"context"
	"errors"
	"fmt"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/tasks"
	"github.com/wick-agent/wick/services/agent/internal/threads"
)

// Tasks is what runs use of background tasks (tasks.Manager implements it).
type Tasks interface {
	// AsyncHTTP wraps an HTTP tool registered async.
	AsyncHTTP(t loop.Tool) loop.Tool
	// Begin starts a task: the task tool's background children.
	Begin(ctx context.Context, spec tasks.Spec) (*tasks.Task, error)
	// ModelTools are check_task, cancel_task and list_tasks.
	ModelTools() []loop.Tool
	// Notes takes the results of the thread's finished tasks not yet given
	// to it, once.
	Notes(ctx context.Context, user, threadID string) ([]llm.Message, error)
}

// errNoTaskNotes ends a follow-up run before it starts: another run took
// the notes it was for.
var errNoTaskNotes = errors.New("no background task results to follow up")

// withTaskNotes puts the notes of the thread's finished background tasks in
// front of the run's input: the model reads each result once, on the first
// run after the task finished.
func (e *Executor) withTaskNotes(ctx context.Context, user string, req Request) ([]llm.Message, error) {
	if e.tasks == nil {
		return req.Input, nil
	}
	notes, err := e.tasks.Notes(ctx, user, req.ThreadID)
	if err != nil {
		return nil, fmt.Errorf("background task results of thread %s: %w", req.ThreadID, err)
	}
	if req.followUp && len(notes) == 0 {
		return nil, errNoTaskNotes
	}
	return append(notes, req.Input...), nil
}

// FollowUp starts a run on the thread for the results of its finished
// background tasks, when the thread's agent asks for it (task_follow_up).
// It waits for the thread to be idle (a run in progress is queued behind),
// goes through the normal run path (locks, limits), and starts nothing when
// another run took the results first. The run is returned, or nil.
func (e *Executor) FollowUp(ctx context.Context, user, threadID string) (*Run, error) {
	state, err := e.threads.Get(ctx, user, threadID)
	if errors.Is(err, threads.ErrNotFound) {
		return nil, nil // expired, or deleted: nobody to tell
	}
	if err != nil {
		return nil, err
	}
	entry, err := e.agent(ctx, user, state.AgentID)
	if err != nil {
		return nil, err
	}
	if !entry.Config.TaskFollowUp {
		return nil, nil
	}
	r, err := e.begin(ctx, user, Request{AgentID: state.AgentID, ThreadID: threadID, Enqueue: true, followUp: true}, nil)
	if errors.Is(err, errNoTaskNotes) {
		return nil, nil
	}
	return r, err
}

// EmitTask logs a background task's event in the run that started it, when
// that run is still going on this replica; it reports whether it did. Later
// events are dropped: the task is read through the API then.
func (e *Executor) EmitTask(runID string, ev loop.StreamEvent) bool {
	r := e.lookup(runID)
	if r == nil {
		return false
	}
	r.taskMu.Lock()
	defer r.taskMu.Unlock()
	if r.ended {
		return false
	}
	r.emit(ev)
	return true
}

// RunSubagentTask carries on a background task of the task tool
// (tasks.KindSubagent; a tasks.Carrier): it runs the child with the
// parent agent's configuration as it is now, on the child's thread, and
// returns its answer. The child's events go to the run that started the
// task while that run lasts on this replica, as the task's own do.
func (e *Executor) RunSubagentTask(ctx context.Context, t *tasks.Task) (string, error) {
	if t.Subagent == nil {
		return "", fmt.Errorf("task %s names no sub-agent", t.ID)
	}
	entry, err := e.agent(ctx, t.User, t.Subagent.AgentID)
	if err != nil {
		return "", err
	}
	ctx = identity.WithOrgs(ctx, t.Subagent.Orgs)
	tool, err := e.subagentTool(ctx, t.User, entry.ID, entry.Config, e.cfg.subagentOptions...)
	if err != nil {
		return "", err
	}
	return tool.RunTask(ctx, t, func(ev loop.StreamEvent) { e.EmitTask(t.RunID, ev) })
}
