package runexec

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/runs"
	"github.com/wick-agent/wick/services/agent/internal/threads"
)

// Snapshot is a run's record with the id of its latest event, after which
// a client re-joins.
type Snapshot struct {
	Run         *runs.Run
	LastEventID string
}

// Outcome is what Await saw when the run ended or paused for approval.
type Outcome struct {
	Run *runs.Run
	// Thread is the thread as saved; nil when a new thread has no save yet
	// (its run paused for approval before its first tool round).
	Thread *loop.AgentState
	// Added are the messages the run added to the thread after its input.
	Added []llm.Message
}

// Await waits until the run ends or waits for approval. A caller that goes
// away first cancels the run. A run that failed returns the loop's error.
func (e *Executor) Await(ctx context.Context, r *Run) (*Outcome, error) {
	select {
	case <-r.done:
	case <-r.waiting:
	case <-ctx.Done():
		r.cancel(errClientGone)
		return nil, ctx.Err()
	}
	rec := r.Record()
	if rec.Status == runs.StatusFailed && r.err != nil {
		return nil, r.err
	}
	out := &Outcome{Run: rec}
	st, err := e.threads.Get(ctx, r.user, rec.ThreadID)
	if errors.Is(err, threads.ErrNotFound) && rec.Status == runs.StatusWaiting {
		return out, nil // a new thread is first saved after its first tool round
	}
	if err != nil {
		return nil, fmt.Errorf("load thread %s: %w", rec.ThreadID, err)
	}
	out.Thread = st
	if from := r.baseLen + r.inputLen; from < len(st.Messages) {
		out.Added = st.Messages[from:]
	}
	return out, nil
}

// own returns the user's run; another user's run is not found.
func (e *Executor) own(ctx context.Context, user, runID string) (*runs.Run, error) {
	if err := checkID("run_id", runID); err != nil {
		return nil, err
	}
	rec, err := e.runs.Get(ctx, runID)
	if err != nil {
		return nil, err
	}
	if rec.User != user {
		return nil, fmt.Errorf("run %s %w", runID, ErrNotFound)
	}
	return rec, nil
}

func (e *Executor) snapshot(ctx context.Context, rec *runs.Run) *Snapshot {
	return &Snapshot{Run: rec, LastEventID: e.lastEventID(ctx, rec.ID)}
}

func (e *Executor) lastEventID(ctx context.Context, runID string) string {
	if ev, err := e.local.Last(ctx, runID); err == nil && ev != nil {
		return ev.ID
	}
	if ev, _ := e.log.Last(ctx, runID); ev != nil {
		return ev.ID
	}
	return ""
}

// Get returns the user's run. A run whose owner (another replica) died is
// closed first, so its status never stays "running" for a run nobody runs.
func (e *Executor) Get(ctx context.Context, user, runID string) (*Snapshot, error) {
	rec, err := e.current(ctx, user, runID)
	if err != nil {
		return nil, err
	}
	return e.snapshot(ctx, rec), nil
}

// Cancel stops the user's run. The request is stored and announced, so the
// replica running the run stops it, whichever it is; when it is this one,
// Cancel waits for the run to end.
func (e *Executor) Cancel(ctx context.Context, user, runID string) (*Snapshot, error) {
	rec, err := e.current(ctx, user, runID)
	if err != nil {
		return nil, err
	}
	if !runs.Terminal(rec.Status) {
		if rec, err = e.cancel(ctx, rec.ID); err != nil {
			return nil, err
		}
	}
	return e.snapshot(ctx, rec), nil
}

// cancel requests the end of a run that has not ended and returns its
// record after; when this replica runs it, it waits for the run to end.
func (e *Executor) cancel(ctx context.Context, runID string) (*runs.Run, error) {
	if err := e.runs.RequestCancel(ctx, runID); err != nil {
		return nil, fmt.Errorf("request cancel of run %s: %w", runID, err)
	}
	if r := e.lookup(runID); r != nil {
		r.cancel(errCancelRequested)
		select {
		case <-r.done:
		case <-ctx.Done():
		}
	}
	return e.runs.Get(ctx, runID)
}

// CancelAgent cancels the user's unfinished runs of agentID, on whichever
// replica runs them, and returns their ids. A run on another replica is
// asked to stop, as by Cancel; it may end a moment after CancelAgent returns.
func (e *Executor) CancelAgent(ctx context.Context, user, agentID string) ([]string, error) {
	ids, err := e.runs.Unfinished(ctx, user, agentID)
	if err != nil {
		return nil, err
	}
	var cancelled []string
	for _, id := range ids {
		rec, err := e.current(ctx, user, id)
		if errors.Is(err, runs.ErrNotFound) || errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return cancelled, err
		}
		if rec.AgentID != agentID || runs.Terminal(rec.Status) {
			continue
		}
		if _, err := e.cancel(ctx, id); err != nil {
			return cancelled, err
		}
		cancelled = append(cancelled, id)
	}
	sort.Strings(cancelled)
	return cancelled, nil
}

// current returns the user's run record after reaping the run when its
// owner (another replica) died.
func (e *Executor) current(ctx context.Context, user, runID string) (*runs.Run, error) {
	rec, err := e.own(ctx, user, runID)
	if err != nil || runs.Terminal(rec.Status) {
		return rec, err
	}
	if r := e.lookup(rec.ID); r != nil {
		select {
		case <-r.done:
			// Stopped by its store, which has not taken its end yet.
			return r.Record(), nil
		default:
			return rec, nil
		}
	}
	if _, err := e.reapIfDead(ctx, user, rec.ID); err != nil {
		return nil, err
	}
	return e.runs.Get(ctx, rec.ID)
}

// Follow sends the events of a run this replica started, from its first,
// until its log ends.
func (e *Executor) Follow(ctx context.Context, r *Run, send func(loop.StreamEvent) error) error {
	return e.follow(ctx, r.user, r.rec.ID, "", send)
}

// Join sends the events of the user's run after the event id after ("":
// from the first) until the run's log ends, whichever replica runs it.
func (e *Executor) Join(ctx context.Context, user, runID, after string, send func(loop.StreamEvent) error) error {
	if _, err := e.own(ctx, user, runID); err != nil {
		return err
	}
	if err := runs.CheckEventID(after); err != nil {
		return invalid("after_event_id", err.Error())
	}
	err := e.follow(ctx, user, runID, after, send)
	if errors.Is(err, runs.ErrBadEventID) {
		return invalid("after_event_id", err.Error())
	}
	return err
}

// readLog reads the run's events from this replica's copy when it has
// one, and from the shared log otherwise; both carry the same ids. local
// reports which it read.
func (e *Executor) readLog(ctx context.Context, runID, after string) (evs []loop.StreamEvent, ended, local bool, err error) {
	evs, ended, err = e.local.Read(ctx, runID, after, followBatch, e.cfg.joinBlock)
	if err == nil || !errors.Is(err, runs.ErrNotFound) || !e.sharedLog() {
		return evs, ended, true, err
	}
	evs, ended, err = e.log.Read(ctx, runID, after, followBatch, e.cfg.joinBlock)
	return evs, ended, false, err
}

// follow sends a run's events after the id after until the log ends. When
// another replica runs it and stops logging, follow checks that replica is
// alive (it still holds the thread's lease); a dead run is closed with an
// error event so every follower ends.
func (e *Executor) follow(ctx context.Context, user, runID, after string, send func(loop.StreamEvent) error) error {
	// caughtUp is set once a read found no more than it returned: from
	// then on a backlog is events that waited for this follower, which
	// mergeDeltas may merge; before, it is the run's history being
	// replayed, which goes out as logged.
	caughtUp := false
	// last is the last event sent, nil before the first.
	var last *loop.StreamEvent
	for {
		evs, ended, local, err := e.readLog(ctx, runID, after)
		if err != nil {
			return err
		}
		read := len(evs)
		if e.cfg.merge && caughtUp {
			evs = mergeDeltas(evs)
		}
		caughtUp = caughtUp || read < followBatch
		for _, ev := range evs {
			if err := send(ev); err != nil {
				return err
			}
			after = ev.ID
		}
		if len(evs) > 0 {
			last = &evs[len(evs)-1]
		}
		if ended {
			return e.sendMissingEnd(ctx, runID, last, local, send)
		}
		if len(evs) > 0 || local {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		over, err := e.reapIfDead(ctx, user, runID)
		if err != nil {
			return err
		}
		if over {
			// The record says the run ended but its log has no end marker
			// (its owner died between the two): send what is left and stop.
			evs, _, err := e.log.Read(ctx, runID, after, followBatch, 0)
			if err != nil {
				return err
			}
			if e.cfg.merge && caughtUp {
				evs = mergeDeltas(evs)
			}
			for _, ev := range evs {
				if err := send(ev); err != nil {
					return err
				}
			}
			if len(evs) > 0 {
				last = &evs[len(evs)-1]
			}
			return e.sendMissingEnd(ctx, runID, last, false, send)
		}
	}
}

// endsRun reports whether ev is a run's last event (done or error).
func endsRun(ev *loop.StreamEvent) bool {
	return ev != nil && (ev.Data.GetDone() != nil || ev.Data.GetError() != nil)
}

// sendMissingEnd gives a follower the last event of a run that is over but
// whose log lacks it (its replica could not log it, the store being down,
// and has not yet, or died): one made from the run's record, without an id
// as it is in no log. last is the last event sent (nil: none, then the
// log's last is looked up, in this replica's copy when local).
func (e *Executor) sendMissingEnd(ctx context.Context, runID string, last *loop.StreamEvent, local bool, send func(loop.StreamEvent) error) error {
	if last == nil {
		l := e.log
		if local {
			l = e.local
		}
		var err error
		if last, err = l.Last(ctx, runID); err != nil {
			return err
		}
	}
	if endsRun(last) {
		return nil
	}
	rec, err := e.runs.Get(ctx, runID)
	if err != nil {
		return err
	}
	return send(endOf(rec))
}

// endOf is the last event a run's record tells.
func endOf(rec *runs.Run) loop.StreamEvent {
	ev := loop.StreamEvent{RunID: rec.ID, ThreadID: rec.ThreadID}
	switch rec.Status {
	case runs.StatusDone:
		ev.Data = loop.DoneData(loop.StopCompleted)
		return ev
	case runs.StatusStopped:
		ev.Data = loop.DoneData(loop.StopStopped)
		return ev
	}
	msg, code := rec.Error, rec.Code
	if msg == "" {
		msg = "the run ended without logging its last event"
	}
	if code == "" {
		code = "failed"
		if rec.Status == runs.StatusCancelled {
			code = "cancelled"
		}
	}
	ev.Data = loop.ErrorData(msg, code, "")
	return ev
}

// reapIfDead closes a run whose owner no longer holds its thread's lease.
// It reports whether the run is over without an end marker to wait for.
func (e *Executor) reapIfDead(ctx context.Context, user, runID string) (bool, error) {
	rec, err := e.runs.Get(ctx, runID)
	if err != nil {
		return false, err
	}
	if runs.Terminal(rec.Status) {
		// Every event was logged before the status was written.
		return true, nil
	}
	holder, err := e.locker.Holder(ctx, user, rec.ThreadID)
	if err != nil {
		return false, fmt.Errorf("lock holder of thread %s: %w", rec.ThreadID, err)
	}
	if holder == rec.LeaseToken {
		return false, nil
	}
	won, err := e.runs.Finish(ctx, runID, runs.StatusFailed, lostMessage, codeLost)
	if err != nil || !won {
		return false, err
	}
	e.logger.Warn("run lost its replica", "run_id", runID, "thread_id", rec.ThreadID)
	if _, err := e.log.AppendClosing(ctx, runID, loop.StreamEvent{RunID: runID, ThreadID: rec.ThreadID, Data: loop.ErrorData(lostMessage, codeLost, "")}); err != nil {
		return false, err
	}
	return false, e.log.End(ctx, runID)
}
