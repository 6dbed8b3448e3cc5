package agent

import (
	"time"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"

	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/tasks"
)

// BackgroundTool declares that calls of the native tool t run in the
// background: the call answers a task id at once and the run goes on, while
// t runs in a goroutine under a lease in the shared store. When its replica
// stops or dies, another replica runs t again from the start (up to three
// starts), so t must be safe to repeat. Its result joins the thread as a
// note. Give the result to WithNativeTools (or wickserver's RegisterTool).
func BackgroundTool(t Tool) Tool { return tasks.MarkBackground(t) }

// WithTaskLease sets the lease of running background tasks (default 15 s):
// a dead replica's tasks are taken over after at most this.
func WithTaskLease(d time.Duration) Option { return taskOption(tasks.WithLease(d)) }

// WithTaskPollBackoff sets the first and the longest wait between two polls
// of an async HTTP tool's status URL (default 0.5 s and 30 s).
func WithTaskPollBackoff(first, longest time.Duration) Option {
	return taskOption(tasks.WithPollBackoff(first, longest))
}

// WithMaxTasksPerUser bounds the background tasks one user has running
// (default 32; 0 disables the bound).
func WithMaxTasksPerUser(n int) Option { return taskOption(tasks.WithMaxRunning(n)) }

func taskOption(o tasks.Option) Option {
	return func(c *options) { c.tasks = append(c.tasks, o) }
}

// taskListener sends task events to the run that started the task (while it
// lasts on this replica) and starts follow-up runs.
type taskListener struct{ s *Service }

func (l taskListener) Event(t *tasks.Task, data *agentv1.RunEventData) {
	l.s.exec.EmitTask(t.RunID, loop.StreamEvent{Name: t.Tool, Data: data})
}

func (l taskListener) Finished(t *tasks.Task) {
	s := l.s
	if t.Status == tasks.StatusCancelled || s.followCtx.Err() != nil {
		// A task the user cancelled needs no answer now; the model reads
		// the note on the next turn. A closing service starts nothing.
		return
	}
	s.followUps.Add(1)
	go func() {
		defer s.followUps.Done()
		ctx := identity.WithUser(s.followCtx, t.User)
		if _, err := s.exec.FollowUp(ctx, t.User, t.ThreadID); err != nil && ctx.Err() == nil {
			s.logger.Warn("follow-up run of a background task", "task_id", t.ID, "thread_id", t.ThreadID, "error", err)
		}
	}()
}
