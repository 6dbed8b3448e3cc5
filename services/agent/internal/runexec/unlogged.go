package runexec

import (
	"context"
	"errors"
	"time"

	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/runs"
)

// A run whose events could not be logged (the shared store stopped
// answering) is stopped, and its end must still reach every reader: this
// replica's followers at once, from its own copy of the log, and the shared
// store once it answers again, written by retries with backoff. A reader
// that finds the run over before that (or after the retries gave up, or
// after this replica died) gives the log the end the run's record tells
// (Executor.follow).

// DefaultStoreRetry bounds how long the replica that ran a run stopped by
// its store keeps trying to write the run's end (status, error event, end
// of the log) to that store.
const DefaultStoreRetry = 10 * time.Minute

// Backoff of the retries: the first comes after storeRetryFirst, each
// following one after twice the pause before it, at most storeRetryMax.
const (
	storeRetryFirst = 100 * time.Millisecond
	storeRetryMax   = 5 * time.Second
)

// WithStoreRetry bounds how long a run stopped by its store has its end
// retried (DefaultStoreRetry); zero or less tries once.
func WithStoreRetry(d time.Duration) Option { return func(c *config) { c.storeRetry = d } }

// storeFailure is why the run's events could not be logged, or nil.
func (r *Run) storeFailure() error {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	return r.logFail
}

// unloggedEvent is the last event of a run stopped by its store.
func (r *Run) unloggedEvent() loop.StreamEvent {
	return loop.StreamEvent{RunID: r.rec.ID, ThreadID: r.rec.ThreadID, Data: loop.ErrorData(unloggedMessage, CodeUnavailable, "")}
}

// endUnlogged ends a run stopped by its store on this replica: the record
// says failed, and this replica's copy of the log ends with the error event
// that says why, which its followers get last. The shared store gets the
// same end from writeEnd.
func (r *Run) endUnlogged(ctx context.Context) {
	r.mu.Lock()
	r.rec.Status, r.rec.Pending, r.rec.Awaiting = runs.StatusFailed, nil, ""
	r.rec.Error, r.rec.Code = unloggedMessage, CodeUnavailable
	r.mu.Unlock()
	if _, err := r.local.Append(ctx, r.rec.ID, r.unloggedEvent()); err != nil {
		r.logger.Warn("append local run event", "run_id", r.rec.ID, "error", err)
	}
	_ = r.local.End(ctx, r.rec.ID)
}

// writeEnd writes the end of a run stopped by its store to that store, at
// once and then with backoff until it succeeds, the retry bound passes or
// ctx (the executor's) ends.
func (r *Run) writeEnd(ctx context.Context) {
	deadline := time.Now().Add(r.cfg.storeRetry)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var step endStep
	for pause := storeRetryFirst; ; pause = min(2*pause, storeRetryMax) {
		err := r.writeEndSteps(ctx, &step)
		if err == nil {
			return
		}
		if !time.Now().Add(pause).Before(deadline) {
			// Readers still end the run's log from its record once they
			// can read it (follow); a record the store never took stays
			// "running" until another replica finds its lease gone.
			r.logger.Error("write the end of a run stopped by its store: giving up", "run_id", r.rec.ID, "error", err)
			return
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			r.logger.Warn("write the end of a run stopped by its store: interrupted", "run_id", r.rec.ID, "error", err)
			return
		case <-t.C:
		}
	}
}

// endStep is how far writeEnd got; each step is done once.
type endStep int

const (
	stepFinish endStep = iota
	stepEvent
	stepRecord
	stepEnd
	stepDone
)

// writeEndSteps does the steps of writeEnd from *step on. Finish comes
// first: of this replica and one that found the run's owner gone (its
// lease was released or expired while the store was down), the one that
// finishes the run writes its last event, so the log gets one.
func (r *Run) writeEndSteps(ctx context.Context, step *endStep) error {
	rec := r.Record()
	for *step < stepDone {
		var err error
		switch *step {
		case stepFinish:
			var won bool
			won, err = r.runs.Finish(ctx, rec.ID, rec.Status, rec.Error, rec.Code)
			if errors.Is(err, runs.ErrNotFound) {
				r.logger.Warn("run stopped by its store: its record is gone", "run_id", rec.ID)
				return nil
			}
			if err == nil && !won {
				return nil // another replica closed it, with its own last event
			}
		case stepEvent:
			if r.sharedLog() {
				_, err = r.log.AppendClosing(ctx, rec.ID, r.unloggedEvent())
			}
		case stepRecord:
			err = r.runs.Put(ctx, rec)
		case stepEnd:
			if r.sharedLog() {
				err = r.log.End(ctx, rec.ID)
			}
		}
		if err != nil {
			return err
		}
		*step++
	}
	r.logger.Info("wrote the end of a run stopped by its store", "run_id", rec.ID)
	return nil
}
