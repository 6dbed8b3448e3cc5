package runexec

import (
	"context"
	"fmt"

	"github.com/wick-agent/wick/services/agent/internal/runs"
)

// Stop asks the user's run to stop gracefully: the step in flight (the
// model call and the tool round it asked for) finishes and is saved, then
// the run ends as "stopped". The request is stored where the run's owner
// reads it at each step boundary, so it works from any replica. Stopping a
// stopped run again changes nothing; a run that waits for the user, or
// has ended otherwise, cannot be stopped.
func (e *Executor) Stop(ctx context.Context, user, runID string) (*Snapshot, error) {
	rec, err := e.current(ctx, user, runID)
	if err != nil {
		return nil, err
	}
	switch rec.Status {
	case runs.StatusStopped:
		return e.snapshot(ctx, rec), nil
	case runs.StatusRunning:
	case runs.StatusWaiting:
		return nil, fmt.Errorf("%w: run %s waits for the user; answer it (resume) or cancel it", ErrNotRunning, rec.ID)
	default:
		return nil, fmt.Errorf("%w: run %s is %s", ErrNotRunning, rec.ID, rec.Status)
	}
	if err := e.runs.RequestStop(ctx, rec.ID); err != nil {
		return nil, fmt.Errorf("request stop of run %s: %w", rec.ID, err)
	}
	return e.snapshot(ctx, rec), nil
}

// Continue starts a new run on the thread of the user's stopped run, from
// the thread as that run saved it and without new input. It is refused for
// a run that is not stopped, and once the thread has changed since (it was
// continued already, or a message was sent).
func (e *Executor) Continue(ctx context.Context, user, runID string) (*Run, error) {
	rec, err := e.current(ctx, user, runID)
	if err != nil {
		return nil, err
	}
	if rec.Status != runs.StatusStopped {
		return nil, fmt.Errorf("%w: run %s is %s; only a stopped run can be continued", ErrNotStopped, rec.ID, rec.Status)
	}
	return e.begin(ctx, user, Request{AgentID: rec.AgentID, ThreadID: rec.ThreadID}, rec)
}

// stopRequested is the loop's stop check: whether a graceful stop of this
// run was requested, read from the shared store at each step boundary. A
// store that cannot say does not stop the run.
func (r *Run) stopRequested(ctx context.Context) bool {
	ok, err := r.runs.StopRequested(ctx, r.rec.ID)
	if err != nil {
		r.logger.Warn("read stop request", "run_id", r.rec.ID, "error", err)
	}
	return ok
}
