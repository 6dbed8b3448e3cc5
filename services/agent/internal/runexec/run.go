package runexec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/quota"
	"github.com/wick-agent/wick/services/agent/internal/redact"
	"github.com/wick-agent/wick/services/agent/internal/runs"
	"github.com/wick-agent/wick/services/agent/internal/threads"
)

// Run is a run this replica executes.
type Run struct {
	*env
	user string
	rec  *runs.Run // guarded by mu
	mu   sync.Mutex
	// logMu makes an event's append to the shared log and to this
	// replica's copy one step: events come from more than one goroutine (a
	// background sub-agent's beside the loop's), and the copy refuses an id
	// that is not after its last one, so two appends interleaved would lose
	// an event for the followers on this replica.
	logMu sync.Mutex
	lease threads.Lease
	// slot gives up the run's place among its user's runs going.
	slot    func()
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timeout context.CancelFunc
	done    chan struct{}
	nudge   chan struct{}
	// decide wakes approve when decisions may have arrived.
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
	// taskMu orders task events sent from outside the loop (EmitTask) with
	// the run's end: none is logged once ended is set.
	taskMu sync.Mutex
	ended  bool
	// logFail is why the run's events could not be logged (guarded by
	// logMu); once set, the run stops and no further event is logged.
	logFail error
	// usage sums the run's logged on_usage events (guarded by logMu), for
	// its final event.
	usage usageTotal
	// err is the loop's error, set before done is closed.
	err error
	// endStatus is the run's final status, set by execute.
	endStatus string
}

// ID is the run's id.
func (r *Run) ID() string { return r.rec.ID } // never changes

// Done is closed when the run has ended and its log is complete.
func (r *Run) Done() <-chan struct{} { return r.done }

// Record returns a copy of the run's record.
func (r *Run) Record() *runs.Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := *r.rec
	c.Pending = append([]llm.ToolCall(nil), r.rec.Pending...)
	return &c
}

// CancelWith cancels the run when ctx ends before the run does: a streaming
// client that goes away takes its run with it.
func (r *Run) CancelWith(ctx context.Context) {
	// A callback rather than a goroutine per run waiting on both: ctx (a
	// stream's) always ends, at the latest when the stream does.
	context.AfterFunc(ctx, func() {
		select {
		case <-r.done:
		default:
			r.cancel(errClientGone)
		}
	})
}

func (r *Run) setStatus(ctx context.Context, runStatus string, pending []llm.ToolCall, msg string) {
	r.update(ctx, func(rec *runs.Run) {
		rec.Status, rec.Pending, rec.Awaiting = runStatus, pending, ""
		if msg != "" {
			rec.Error = msg
		}
	})
}

// update changes the run's record and stores it.
func (r *Run) update(ctx context.Context, change func(*runs.Run)) {
	r.mu.Lock()
	change(r.rec)
	rec := *r.rec
	r.mu.Unlock()
	if err := r.runs.Put(ctx, &rec); err != nil {
		r.logger.Warn("save run record", "run_id", rec.ID, "error", err)
	}
}

// awaitUser records that the run waits for the user (awaiting says for
// what) on the pending calls, marks its thread, and wakes Await.
func (r *Run) awaitUser(ctx context.Context, awaiting string, pending []llm.ToolCall) {
	r.update(ctx, func(rec *runs.Run) {
		rec.Status, rec.Pending, rec.Awaiting = runs.StatusWaiting, pending, awaiting
	})
	r.markThread(context.WithoutCancel(ctx), r.rec.ID, threads.MarkWaiting)
	signal(r.waiting)
}

// emit logs one event: first in the shared log, which gives it its id, then
// in this replica's copy. Data is redacted once, here.
func (r *Run) emit(ev loop.StreamEvent) {
	rec := r.rec // ID and ThreadID never change
	ev.RunID, ev.ThreadID = rec.ID, rec.ThreadID
	if d, ok := delta(ev); ok && utf8.ValidString(d) {
		// A text delta's data is the loop's own: copied only when its text
		// needs masking. (Invalid UTF-8 goes the long way, which replaces
		// it, as protobuf strings must be UTF-8.)
		if masked := redact.String(d); masked != d {
			ev.Data = loop.DeltaData(masked)
		}
	} else if ev.Data != nil {
		ev.Data = redact.Message(ev.Data) // a copy
	}
	if e := ev.Data.GetError(); e != nil && e.GetCode() == "" {
		// The code the API documents, taken from the loop's stop_reason.
		e.Code = "failed"
		if sr := e.GetStopReason(); sr != "" {
			e.Code = sr
		}
	}
	if (ev.Data.GetDone() != nil || ev.Data.GetError() != nil) && !r.closing {
		// The run's last event goes out only after the thread lock is
		// released (see execute), so a client that sends its next message as
		// soon as it sees "done" never finds the thread busy.
		r.final = &ev
		return
	}
	ctx := context.WithoutCancel(r.ctx)
	r.logMu.Lock()
	defer r.logMu.Unlock()
	if r.logFail != nil {
		// The run is being stopped: an event logged now, once the store
		// answers again, would follow a gap in the log.
		return
	}
	start := time.Now()
	id, err := r.log.Append(ctx, rec.ID, ev)
	if o := r.cfg.appendLatency; o != nil {
		o.Observe(time.Since(start).Seconds())
	}
	if err != nil {
		// A run whose events cannot be logged cannot be followed: stop it.
		r.logger.Error("append run event", "run_id", rec.ID, "error", err)
		r.logFail = fmt.Errorf("%w: the run was stopped, as its events could not be logged: %w", ErrStoreUnavailable, err)
		r.cancel(r.logFail)
		return
	}
	if u := ev.Data.GetOnUsage(); u != nil {
		r.usage.add(u)
	}
	if r.sharedLog() {
		ev.ID = id
		if _, err := r.local.Append(ctx, rec.ID, ev); err != nil {
			r.logger.Warn("append local run event", "run_id", rec.ID, "error", err)
		}
	}
}

// save is the loop's save callback: a versioned save that stops once the
// thread's lease is lost, so a run that lost its thread never overwrites it.
// A state over the thread's byte bound has its oldest tool results cut
// (read_file's too, which the filesystem hook never evicts) and is saved
// again; one that no cut brings under the bound fails the run, and the
// thread stays as it was last saved.
func (r *Run) save(ctx context.Context, st *loop.AgentState) error {
	select {
	case <-r.lease.Lost():
		return threads.ErrLeaseLost
	default:
	}
	lim := r.cfg.limits
	b := threads.Bounds{Threads: lim.Threads, MaxBytes: lim.ThreadBytes.Max}
	for {
		err := r.threads.Save(ctx, r.user, st, r.lease.Token(), b)
		var big *threads.TooLargeError
		if !errors.As(err, &big) {
			if err != nil {
				return fmt.Errorf("save thread %s: %w", st.ThreadID, err)
			}
			return nil
		}
		// Cut down to three quarters of the bound, so that the rounds that
		// follow fit without cutting (and encoding twice) every time.
		if hooks.CutToolResults(st.Messages, big.Size-big.Max*3/4, hooks.DefaultEvictKeepChars) == 0 {
			return fmt.Errorf("save thread %s: %w", st.ThreadID,
				lim.ThreadBytes.Exceeded(fmt.Sprintf("thread %s would store %d bytes with its old tool results cut", st.ThreadID, big.Size)))
		}
	}
}

// saveInput saves a new thread with the run's input before the model is
// called, so that thread lists show it, titled and with its run, while its
// first run goes on or waits for approval of a tool call (the loop saves
// only answered tool calls). The loop then gets the thread at that version
// without messages: it appends the input itself and writes the thread
// whole at its first save. A refused save changes nothing: the loop's
// first save meets the same refusal (a bound, a lost lease), and the run
// reports it and counts it as a quota rejection then, once.
func (r *Run) saveInput(state *loop.AgentState, input []llm.Message) {
	first := &loop.AgentState{ThreadID: state.ThreadID, AgentID: state.AgentID, Messages: slices.Clone(input)}
	lim := r.cfg.limits
	uncounted := lim.Threads
	uncounted.Rejections = nil
	if err := r.threads.Save(r.ctx, r.user, first, r.lease.Token(), threads.Bounds{Threads: uncounted, MaxBytes: lim.ThreadBytes.Max}); err != nil {
		r.logger.Info("save the new thread's input", "run_id", r.rec.ID, "error", err)
		return
	}
	state.Version, state.UpdatedAt, state.Stored = first.Version, first.UpdatedAt, nil
}

// markThread leaves the run's mark and id (runID, "" once it ends) on its
// thread (threads.Store.MarkRun), from which a thread list tells a run
// waiting for approval or a failed one, and which run to join. The mark is
// only shown there, so a failure is logged and the run goes on; a lost
// lease marks nothing, as the thread is another run's.
func (r *Run) markThread(ctx context.Context, runID, mark string) {
	err := r.threads.MarkRun(ctx, r.user, r.rec.ThreadID, r.lease.Token(), runID, mark)
	if err != nil && !errors.Is(err, threads.ErrLeaseLost) {
		r.logger.Warn("mark thread", "run_id", r.rec.ID, "mark", mark, "error", err)
	}
}

// execute runs the loop and closes the run: status, final event, end of the
// log, lock release. A run without input continues a stopped one.
func (r *Run) execute(runner runner, state *loop.AgentState, input []llm.Message) {
	watchDone := make(chan struct{})
	go r.watch(watchDone)

	if len(input) > 0 && state.Version == 0 {
		r.saveInput(state, input)
	}
	r.markThread(context.WithoutCancel(r.ctx), r.rec.ID, threads.MarkNone)
	var err error
	if len(input) == 0 {
		err = runner.Continue(r.ctx, r.rec.ID, state, r.emit, r.save)
	} else {
		err = runner.Run(r.ctx, r.rec.ID, state, input, r.emit, r.save)
	}
	close(watchDone)
	if errors.Is(err, loop.ErrStopped) {
		// A run continues from exactly this save (Continue checks it).
		r.update(context.WithoutCancel(r.ctx), func(rec *runs.Run) { rec.ThreadVersion = state.Version })
	}
	if logFail := r.storeFailure(); logFail != nil {
		// The loop only saw its context cancelled; the cause is the store.
		err = logFail
	}
	r.err = err

	final := context.WithoutCancel(r.ctx)
	endStatus, msg, code := r.outcome(err)
	r.endStatus = endStatus
	mark := threads.MarkNone
	if endStatus == runs.StatusFailed {
		mark = threads.MarkFailed
	}
	r.markThread(final, "", mark)
	if err := r.lease.Release(final); err != nil {
		r.logger.Warn("release thread lock", "run_id", r.rec.ID, "error", err)
	}
	// Like the lock, the run's slot is free before its last event goes out.
	r.slot()
	r.taskMu.Lock()
	r.ended = true
	r.taskMu.Unlock()
	if r.storeFailure() == nil {
		r.closing = true
		last := loop.StreamEvent{Data: &agentv1.RunEventData{Kind: &agentv1.RunEventData_Done{Done: &agentv1.DoneData{}}}}
		switch {
		case r.final != nil:
			if e := r.final.Data.GetError(); e != nil {
				// r.final's data is the run's own copy (emit redacted it).
				switch {
				case errors.Is(err, quota.ErrExceeded):
					e.Code = CodeLimit
				case status.Code(err) == codes.Unavailable:
					// A dependency that is down (the LLM gateway, the
					// model's provider) is worth a retry later.
					e.Code = CodeUnavailable
				}
			}
			last = *r.final
		case endStatus != runs.StatusDone:
			last = loop.StreamEvent{Data: loop.ErrorData(msg, code, "")}
		}
		r.logMu.Lock()
		total := r.usage.data()
		r.logMu.Unlock()
		if d := last.Data.GetDone(); d != nil {
			d.Usage = total
		} else if e := last.Data.GetError(); e != nil {
			e.Usage = total
		}
		r.emit(last)
		if e := last.Data.GetError(); e != nil {
			code = e.GetCode()
		}
	}
	if logFail := r.storeFailure(); logFail != nil {
		// The final event could not be logged either (or the run was
		// stopped for the same reason before).
		r.err = logFail
		r.endUnlogged(final)
		return
	}
	r.update(final, func(rec *runs.Run) {
		rec.Status, rec.Pending, rec.Awaiting = endStatus, nil, ""
		if msg != "" {
			rec.Error, rec.Code = msg, code
		}
	})
	if err := r.log.End(final, r.rec.ID); err != nil {
		r.logger.Warn("end run log", "run_id", r.rec.ID, "error", err)
	}
	if r.sharedLog() {
		_ = r.local.End(final, r.rec.ID)
	}
}

// outcome is the final status of a run whose loop returned err, with the
// message and the code of its error event.
func (r *Run) outcome(err error) (endStatus, msg, code string) {
	if err == nil {
		return runs.StatusDone, "", ""
	}
	if errors.Is(err, loop.ErrStopped) {
		return runs.StatusStopped, "", ""
	}
	cause := context.Cause(r.ctx)
	switch {
	case r.ctx.Err() != nil && (errors.Is(cause, errCancelRequested) || errors.Is(cause, errClientGone) || errors.Is(cause, ErrShutdown)):
		return runs.StatusCancelled, cause.Error(), "cancelled"
	case r.ctx.Err() != nil && cause != nil:
		return runs.StatusFailed, cause.Error(), "aborted"
	default:
		return runs.StatusFailed, err.Error(), "failed"
	}
}

// watch cancels the run when its lease is lost or a cancel request comes in
// (announced by a nudge, or found by polling).
func (r *Run) watch(stop <-chan struct{}) {
	t := time.NewTicker(r.cfg.pollInterval)
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
		if ok, err := r.runs.CancelRequested(r.ctx, r.rec.ID); err == nil && ok {
			r.cancel(errCancelRequested)
			return
		}
		r.mu.Lock()
		waiting := r.rec.Status == runs.StatusWaiting
		r.mu.Unlock()
		if waiting {
			// approve polls decisions itself; pass the nudge on.
			signal(r.decide)
		}
	}
}
