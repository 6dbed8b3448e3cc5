package runexec_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wick-agent/wick/llm/llmtest"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/runexec"
	"github.com/wick-agent/wick/services/agent/internal/runs"
)

// storeMessage is the documented message of a run stopped by its store.
const storeMessage = "the run store is unreachable: the run was stopped, as its events could not be logged"

// errDown is what the shared store answers while it is down.
var errDown = errors.New("dial tcp 10.0.0.9:6379: connect: connection refused")

// outage is the state of a shared store (Redis, as replicas see it) that
// goes down when the event after the first on_tool_end is logged, and comes
// back when the test says so: while down, every call fails. logsDown keeps
// only the log's writes failing after the rest came back.
type outage struct {
	mu       sync.Mutex
	toolEnd  bool
	tripped  bool
	down     bool
	logsDown bool
}

func (o *outage) check(write bool, ev *loop.StreamEvent) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ev != nil && o.toolEnd && !o.tripped {
		o.tripped, o.down = true, true
	}
	if o.down || (write && o.logsDown) {
		return errDown
	}
	if ev != nil && ev.Event() == "on_tool_end" {
		o.toolEnd = true
	}
	return nil
}

func (o *outage) recover(logsToo bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down, o.logsDown = false, !logsToo
}

type outageStore struct {
	runs.Store
	o *outage
}

func (s outageStore) Put(ctx context.Context, r *runs.Run) error {
	if err := s.o.check(false, nil); err != nil {
		return err
	}
	return s.Store.Put(ctx, r)
}

func (s outageStore) Get(ctx context.Context, id string) (*runs.Run, error) {
	if err := s.o.check(false, nil); err != nil {
		return nil, err
	}
	return s.Store.Get(ctx, id)
}

func (s outageStore) Finish(ctx context.Context, id, status, msg, code string) (bool, error) {
	if err := s.o.check(false, nil); err != nil {
		return false, err
	}
	return s.Store.Finish(ctx, id, status, msg, code)
}

type outageLog struct {
	runs.Log
	o *outage
}

func (l outageLog) Append(ctx context.Context, id string, ev loop.StreamEvent) (string, error) {
	if err := l.o.check(true, &ev); err != nil {
		return "", err
	}
	return l.Log.Append(ctx, id, ev)
}

func (l outageLog) AppendClosing(ctx context.Context, id string, ev loop.StreamEvent) (string, error) {
	if err := l.o.check(true, &ev); err != nil {
		return "", err
	}
	return l.Log.AppendClosing(ctx, id, ev)
}

func (l outageLog) End(ctx context.Context, id string) error {
	if err := l.o.check(true, nil); err != nil {
		return err
	}
	return l.Log.End(ctx, id)
}

func (l outageLog) Read(ctx context.Context, id, after string, max int, block time.Duration) ([]loop.StreamEvent, bool, error) {
	if err := l.o.check(false, nil); err != nil {
		return nil, false, err
	}
	return l.Log.Read(ctx, id, after, max, block)
}

func (l outageLog) Last(ctx context.Context, id string) (*loop.StreamEvent, error) {
	if err := l.o.check(false, nil); err != nil {
		return nil, err
	}
	return l.Log.Last(ctx, id)
}

// checkStoreError checks that a run's events end with the error event of a
// run stopped by its store.
func checkStoreError(t *testing.T, what string, evs []loop.StreamEvent) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatalf("%s: no events", what)
	}
	last := evs[len(evs)-1]
	data := last.DataMap()
	if last.Event() != "error" || data["message"] != storeMessage || data["code"] != runexec.CodeUnavailable {
		t.Fatalf("%s ends with %+v, want an error event with code unavailable and %q", what, last, storeMessage)
	}
	for _, ev := range evs[:len(evs)-1] {
		if ev.Event() == "done" || ev.Event() == "error" {
			t.Fatalf("%s: a last event before the last: %v", what, names(evs))
		}
	}
}

// collect gathers the events a follow sends.
func collect(evs *[]loop.StreamEvent) func(loop.StreamEvent) error {
	return func(ev loop.StreamEvent) error {
		*evs = append(*evs, ev)
		return nil
	}
}

// TestStoreLostMidRun: the shared store goes down while a run streams, after
// a completed tool round, and comes back. The live follower's last event is
// the documented error event (not a bare error); once the store answers,
// the run's record says failed with that message and every reader of its
// log, on any replica, gets that event last and an end — written by the
// replica that ran it, or, when that one could not write the event, made
// by the reader from the record.
func TestStoreLostMidRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// logsBack: the log takes writes again when the rest of the store does.
		logsBack bool
		// wantLogged: the shared log holds the error event in the end.
		wantLogged bool
	}{
		{name: "the replica writes the end when the store is back", logsBack: true, wantLogged: true},
		{name: "readers end the log from the record", logsBack: false, wantLogged: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := &outage{}
			script := func() *llmtest.Script {
				return llmtest.New(llmtest.Call(calc("c1", "2+3")), llmtest.Turn{Deltas: []string{"it is", " 5"}})
			}
			retry := []runexec.Option{runexec.WithStoreRetry(time.Minute)}
			if !tc.logsBack {
				retry = []runexec.Option{runexec.WithStoreRetry(300 * time.Millisecond)}
			}
			var shared runs.Log
			f := newFixtureOver(t, script(), func(s runs.Store, l runs.Log) (runs.Store, runs.Log) {
				shared = l
				return outageStore{s, o}, outageLog{l, o}
			}, retry...)
			ctx := testCtx(t)
			r := f.start(ctx, runexec.Request{AgentID: "calc", Input: human("2+3?")})

			var live []loop.StreamEvent
			if err := f.exec.Follow(ctx, r, collect(&live)); err != nil {
				t.Fatalf("the live follow failed (%v) instead of ending with an error event; events %v", err, names(live))
			}
			checkStoreError(t, "the live stream", live)
			if _, err := f.exec.Await(ctx, r); !errors.Is(err, runexec.ErrStoreUnavailable) {
				t.Fatalf("Await = %v, want ErrStoreUnavailable", err)
			}
			if rec := r.Record(); rec.Status != runs.StatusFailed || rec.Error != storeMessage {
				t.Fatalf("record on the replica = %+v, want failed with %q", rec, storeMessage)
			}

			o.recover(tc.logsBack)
			// The replica retries with backoff; nothing announces its success.
			deadline := time.Now().Add(10 * time.Second)
			for {
				rec, err := f.runs.Get(ctx, r.ID())
				if err == nil && rec.Status == runs.StatusFailed {
					if rec.Error != storeMessage || rec.Code != runexec.CodeUnavailable {
						t.Fatalf("stored record = %+v, want the store's message and code", rec)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the stored record stayed %+v, %v after the store came back", rec, err)
				}
				time.Sleep(10 * time.Millisecond) // polling the store, which announces nothing
			}
			snap, err := f.exec.Get(ctx, user, r.ID())
			if err != nil || snap.Run.Status != runs.StatusFailed {
				t.Fatalf("Get = %+v, %v; want failed", snap, err)
			}

			// The shared log as another replica reads it.
			logged, _, err := shared.Read(ctx, r.ID(), "", 1000, 0)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantLogged {
				checkStoreError(t, "the shared log", logged)
			} else if n := len(logged); n == 0 || logged[n-1].Event() == "error" {
				t.Fatalf("shared log %v: the case wants it without its error event", names(logged))
			}
			other := newReplica(t, f, shared, o)
			for _, after := range []string{"", logged[len(logged)-1].ID} {
				var joined []loop.StreamEvent
				if err := other.Join(ctx, user, r.ID(), after, collect(&joined)); err != nil {
					t.Fatalf("join after %q on another replica: %v", after, err)
				}
				if after == "" || !tc.wantLogged {
					checkStoreError(t, "a join after "+after+" on another replica", joined)
				} else if len(joined) != 0 {
					t.Fatalf("join after the last event = %v, want nothing", names(joined))
				}
			}
			var again []loop.StreamEvent
			if err := f.exec.Join(ctx, user, r.ID(), "", collect(&again)); err != nil {
				t.Fatalf("join on the run's replica: %v", err)
			}
			checkStoreError(t, "a join on the run's replica", again)
		})
	}
}

// newReplica is another executor over f's thread store and run records
// and the shared log, seen through the outage o.
func newReplica(t *testing.T, f *fixture, shared runs.Log, o *outage) *runexec.Executor {
	t.Helper()
	return newExecutor(t, f.model, f.threads, outageStore{f.runs, o}, outageLog{shared, o})
}
