package runs

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/runevent"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

type both interface {
	Store
	Log
}

func impls(t *testing.T) map[string]func(t *testing.T) both {
	return map[string]func(t *testing.T) both{
		"memory": func(t *testing.T) both { return NewMemory() },
		"redis": func(t *testing.T) both {
			rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
			t.Cleanup(func() { rdb.Close() })
			return NewRedis(rdb)
		},
	}
}

func TestLogContract(t *testing.T) {
	t.Parallel()
	for name, mk := range impls(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			l := mk(t)
			var ids []string
			for i := range 5 {
				id, err := l.Append(ctx, "r1", loop.StreamEvent{RunID: "r1", Data: runevent.MustFromJSON("on_chat_model_stream", map[string]any{"delta": fmt.Sprint(i)})})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			for i := 1; i < len(ids); i++ {
				a, _ := parseEventID(ids[i-1])
				b, _ := parseEventID(ids[i])
				if !a.less(b) {
					t.Fatalf("ids not increasing: %v", ids)
				}
			}
			evs, ended, err := l.Read(ctx, "r1", "", 100, 0)
			if err != nil || ended || len(evs) != 5 || evs[4].DataMap()["delta"] != "4" || evs[2].ID != ids[2] {
				t.Fatalf("Read all = %v, %v, %v", evs, ended, err)
			}
			evs, _, _ = l.Read(ctx, "r1", ids[1], 2, 0)
			if len(evs) != 2 || evs[0].ID != ids[2] || evs[1].ID != ids[3] {
				t.Fatalf("Read after 1, max 2 = %v", evs)
			}
			// A blocked read wakes up on the next append.
			got := make(chan []loop.StreamEvent, 1)
			go func() {
				evs, _, err := l.Read(ctx, "r1", ids[4], 10, 10*time.Second)
				if err != nil {
					t.Error(err)
				}
				got <- evs
			}()
			id6, err := l.Append(ctx, "r1", loop.StreamEvent{Data: runevent.MustFromJSON("done", nil)})
			if err != nil {
				t.Fatal(err)
			}
			// The reader may have started after the append: it returns at once then too.
			if evs := <-got; len(evs) != 1 || evs[0].ID != id6 {
				t.Fatalf("blocked read = %v", evs)
			}
			if last, _ := l.Last(ctx, "r1"); last == nil || last.ID != id6 || last.Event() != "done" {
				t.Fatalf("Last = %+v, want done %s", last, id6)
			}
			if err := l.End(ctx, "r1"); err != nil {
				t.Fatal(err)
			}
			evs, ended, err = l.Read(ctx, "r1", id6, 10, time.Second)
			if err != nil || !ended || len(evs) != 0 {
				t.Fatalf("read at end = %v, %v, %v", evs, ended, err)
			}
			evs, ended, _ = l.Read(ctx, "r1", ids[3], 10, 0)
			if !ended || len(evs) != 2 {
				t.Fatalf("read of the tail = %v, ended %v", evs, ended)
			}
			if last, _ := l.Last(ctx, "r1"); last == nil || last.ID != id6 || last.Event() != "done" {
				t.Fatalf("Last after End = %+v", last)
			}
			if _, _, err := l.Read(ctx, "r1", "not-an-id", 10, 0); !errors.Is(err, ErrBadEventID) {
				t.Fatalf("bad id = %v", err)
			}
		})
	}
}

func TestStoreContract(t *testing.T) {
	t.Parallel()
	for name, mk := range impls(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := mk(t)
			nudges, err := s.Nudges(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, "nope"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get missing = %v", err)
			}
			r := &Run{ID: "r1", User: "u", ThreadID: "t", AgentID: "a", Status: StatusWaiting, CreatedAt: time.Now().UTC(),
				Pending: []llm.ToolCall{{ID: "c1", Name: "ls", Args: map[string]any{"path": "/"}}}}
			if err := s.Put(ctx, r); err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(ctx, "r1")
			if err != nil || got.Status != StatusWaiting || len(got.Pending) != 1 || got.Pending[0].Name != "ls" {
				t.Fatalf("Get = %+v, %v", got, err)
			}
			if d, _ := s.TakeDecisions(ctx, "r1"); d != nil {
				t.Fatalf("decisions before any = %v", d)
			}
			if err := s.PutDecisions(ctx, "r1", []loop.Decision{{ToolCallID: "c1", Action: "approve"}}); err != nil {
				t.Fatal(err)
			}
			if id := <-nudges; id != "r1" {
				t.Fatalf("nudge = %q", id)
			}
			d, err := s.TakeDecisions(ctx, "r1")
			if err != nil || len(d) != 1 || d[0].Action != "approve" {
				t.Fatalf("TakeDecisions = %v, %v", d, err)
			}
			if d, _ := s.TakeDecisions(ctx, "r1"); d != nil {
				t.Fatalf("decisions taken twice: %v", d)
			}
			if ok, _ := s.CancelRequested(ctx, "r1"); ok {
				t.Fatal("cancel requested before any")
			}
			if err := s.RequestCancel(ctx, "r1"); err != nil {
				t.Fatal(err)
			}
			<-nudges
			if ok, _ := s.CancelRequested(ctx, "r1"); !ok {
				t.Fatal("cancel request not recorded")
			}
			if ok, _ := s.StopRequested(ctx, "r1"); ok {
				t.Fatal("stop requested before any")
			}
			if err := s.RequestStop(ctx, "r1"); err != nil {
				t.Fatal(err)
			}
			if ok, err := s.StopRequested(ctx, "r1"); !ok || err != nil {
				t.Fatalf("stop request not recorded: %v", err)
			}
			won, err := s.Finish(ctx, "r1", StatusFailed, "lost", "lost")
			if err != nil || !won {
				t.Fatalf("Finish = %v, %v", won, err)
			}
			if won, _ := s.Finish(ctx, "r1", StatusCancelled, "again", "cancelled"); won {
				t.Fatal("a finished run was finished again")
			}
			if got, _ := s.Get(ctx, "r1"); got.Status != StatusFailed || len(got.Pending) != 0 || got.Error != "lost" || got.Code != "lost" {
				t.Fatalf("after Finish = %+v, want failed with the message and code of the first Finish", got)
			}
		})
	}
}

func TestMemoryLocalCopyKeepsSharedIDs(t *testing.T) {
	t.Parallel()
	m := NewMemory()
	ctx := context.Background()
	for _, id := range []string{"1700000000000-0", "1700000000000-1", "1700000000001-0"} {
		if _, err := m.Append(ctx, "r", loop.StreamEvent{ID: id, Data: runevent.MustFromJSON("on_usage", nil)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Append(ctx, "r", loop.StreamEvent{ID: "1700000000000-5", Data: runevent.MustFromJSON("on_usage", nil)}); err == nil {
		t.Fatal("an id going backwards was accepted")
	}
	evs, _, _ := m.Read(ctx, "r", "1700000000000-0", 10, 0)
	if len(evs) != 2 || evs[0].ID != "1700000000000-1" {
		t.Fatalf("Read = %v", evs)
	}
	// An event of the copy's own (one the shared log refused) goes after
	// the last, where a reader after that one finds it.
	id, err := m.Append(ctx, "r", loop.StreamEvent{Data: runevent.MustFromJSON("error", nil)})
	if err != nil || id != "1700000000001-1" {
		t.Fatalf("own event's id = %q, %v; want 1700000000001-1", id, err)
	}
	if evs, _, _ := m.Read(ctx, "r", "1700000000001-0", 10, 0); len(evs) != 1 || evs[0].Event() != "error" {
		t.Fatalf("Read after the last shared id = %v", evs)
	}
}

// TestMemoryKeepsStoppedRuns: past the retention a stopped run's log goes,
// but its record stays, to be continued, until DefaultStoppedRetention.
func TestMemoryKeepsStoppedRuns(t *testing.T) {
	t.Parallel()
	m := NewMemory(WithMemoryRetention(time.Minute))
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	ctx := context.Background()
	m.Put(ctx, &Run{ID: "stopped", Status: StatusStopped})
	m.Append(ctx, "stopped", loop.StreamEvent{Data: runevent.MustFromJSON("on_usage", nil)})
	m.End(ctx, "stopped")
	now = now.Add(2 * time.Minute)
	m.Append(ctx, "new", loop.StreamEvent{Data: runevent.MustFromJSON("on_usage", nil)})
	if got, err := m.Get(ctx, "stopped"); err != nil || got.Status != StatusStopped {
		t.Fatalf("stopped run after the retention = %v, %v", got, err)
	}
	if evs, ended, err := m.Read(ctx, "stopped", "", 10, 0); err != nil || len(evs) != 0 || !ended {
		t.Fatalf("stopped run's log after the retention = %v, %v, %v", evs, ended, err)
	}
	now = now.Add(DefaultStoppedRetention)
	m.Append(ctx, "newer", loop.StreamEvent{Data: runevent.MustFromJSON("on_usage", nil)})
	if _, err := m.Get(ctx, "stopped"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("stopped run after its own retention = %v", err)
	}
}

func TestMemoryEvictsFinishedRuns(t *testing.T) {
	t.Parallel()
	m := NewMemory(WithMemoryRetention(time.Minute))
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	ctx := context.Background()
	m.Append(ctx, "old", loop.StreamEvent{Data: runevent.MustFromJSON("on_usage", nil)})
	m.End(ctx, "old")
	m.Append(ctx, "live", loop.StreamEvent{Data: runevent.MustFromJSON("on_usage", nil)})
	now = now.Add(2 * time.Minute)
	m.Append(ctx, "new", loop.StreamEvent{Data: runevent.MustFromJSON("on_usage", nil)})
	if _, _, err := m.Read(ctx, "old", "", 1, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("finished run kept: %v", err)
	}
	if evs, _, err := m.Read(ctx, "live", "", 1, 0); err != nil || len(evs) != 1 {
		t.Fatalf("live run evicted: %v", err)
	}
}

func TestRedisFencesFinishedRun(t *testing.T) {
	t.Parallel()
	r := impls(t)["redis"](t)
	ctx := context.Background()
	if err := r.Put(ctx, &Run{ID: "r", Status: StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(ctx, "r", loop.StreamEvent{Data: runevent.MustFromJSON("on_usage", nil)}); err != nil {
		t.Fatal(err)
	}
	if won, err := r.Finish(ctx, "r", StatusFailed, "lost", "lost"); err != nil || !won {
		t.Fatalf("Finish = %v, %v", won, err)
	}
	if _, err := r.Append(ctx, "r", loop.StreamEvent{Data: loop.DeltaData("late")}); err == nil {
		t.Fatal("an event was appended to a run another replica closed")
	}
	if _, err := r.AppendClosing(ctx, "r", loop.StreamEvent{Data: runevent.MustFromJSON("error", nil)}); err != nil {
		t.Fatal(err)
	}
	r.End(ctx, "r")
	evs, ended, _ := r.Read(ctx, "r", "", 10, 0)
	if !ended || len(evs) != 2 || evs[1].Event() != "error" {
		t.Fatalf("log = %v, ended %v", evs, ended)
	}
}

// TestStoppedIsFinal: a stopped run is over for every store: it is not
// finished again (a replica reaping it must not call it lost), nor does
// its log take events.
func TestStoppedIsFinal(t *testing.T) {
	t.Parallel()
	for name, mk := range impls(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := mk(t)
			if err := s.Put(ctx, &Run{ID: "r", User: "u", AgentID: "a", Status: StatusStopped, ThreadVersion: 3}); err != nil {
				t.Fatal(err)
			}
			if won, err := s.Finish(ctx, "r", StatusFailed, "lost", "lost"); err != nil || won {
				t.Fatalf("Finish of a stopped run = %v, %v", won, err)
			}
			got, err := s.Get(ctx, "r")
			if err != nil || got.Status != StatusStopped || got.ThreadVersion != 3 {
				t.Fatalf("Get = %+v, %v", got, err)
			}
			if ids, _ := s.Unfinished(ctx, "u", "a"); len(ids) != 0 {
				t.Fatalf("a stopped run is listed unfinished: %v", ids)
			}
		})
	}
	r := impls(t)["redis"](t)
	ctx := context.Background()
	if err := r.Put(ctx, &Run{ID: "r", Status: StatusStopped}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(ctx, "r", loop.StreamEvent{Data: loop.DeltaData("late")}); err == nil {
		t.Fatal("an event was appended to a stopped run")
	}
}

func TestRedisReadersBeyondBlockingSlotsPoll(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t), PoolSize: 4})
	t.Cleanup(func() { rdb.Close() })
	r := NewRedis(rdb, WithBlockingReaders(1))
	r.poll = 10 * time.Millisecond
	ctx := context.Background()
	const readers = 6 // more than the pool: blocking them all would starve Append
	got := make(chan int, readers)
	for range readers {
		go func() {
			n := 0
			after := ""
			for n < 3 {
				evs, _, err := r.Read(ctx, "r", after, 10, 5*time.Second)
				if err != nil {
					t.Error(err)
					got <- n
					return
				}
				for _, e := range evs {
					after = e.ID
					n++
				}
			}
			got <- n
		}()
	}
	for i := range 3 {
		if _, err := r.Append(ctx, "r", loop.StreamEvent{Data: loop.DeltaData(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	for range readers {
		if n := <-got; n != 3 {
			t.Fatalf("a reader got %d events, want 3", n)
		}
	}
}
