package tasks

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent/internal/ids"
)

func stores() map[string]func(t testing.TB) Store {
	return map[string]func(t testing.TB) Store{
		"memory": func(testing.TB) Store { return NewMemoryStore() },
		"redis": func(t testing.TB) Store {
			rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{testenv.Redis(t)}})
			t.Cleanup(func() { rdb.Close() })
			return NewRedisStore(rdb, ids.New("t")) // a prefix of its own: tests share the server
		},
	}
}

func newTask(user, thread string) *Task {
	return &Task{ID: ids.New("task_"), User: user, ThreadID: thread, Tool: "render", Kind: KindNative,
		Args: map[string]any{"n": 1.0, "list": []any{"a"}}, CreatedAt: time.Now().UTC(), Owner: "A"}
}

func TestStoreContract(t *testing.T) {
	t.Parallel()
	for name, mk := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := mk(t)
			t1, t2 := newTask("alice", "th1"), newTask("alice", "th1")
			for _, tk := range []*Task{t1, t2} {
				if err := s.Create(ctx, tk, time.Minute, 2); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Create(ctx, newTask("alice", "th2"), time.Minute, 2); !errors.Is(err, ErrTooMany) {
				t.Fatalf("a third running task of alice = %v, want ErrTooMany", err)
			}
			if err := s.Create(ctx, newTask("bob", "th1"), time.Minute, 2); err != nil {
				t.Fatalf("bob's own bound: %v", err)
			}
			got, err := s.Get(ctx, "alice", t1.ID)
			if err != nil || got.Status != StatusRunning || got.Attempts != 1 || got.Owner != "A" || got.Args["list"].([]any)[0] != "a" {
				t.Fatalf("Get = %+v, %v", got, err)
			}
			if _, err := s.Get(ctx, "bob", t1.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("bob's Get of alice's task = %v", err)
			}
			if _, err := s.Cancel(ctx, "bob", t1.ID, "no"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("bob's Cancel of alice's task = %v", err)
			}
			list, err := s.List(ctx, "alice", "th1")
			if err != nil || len(list) != 2 {
				t.Fatalf("List = %v, %v", list, err)
			}
			if lost, err := s.Renew(ctx, "B", []string{t1.ID}, time.Minute); err != nil || len(lost) != 1 {
				t.Fatalf("Renew by another owner = %v, %v", lost, err)
			}
			if lost, err := s.Renew(ctx, "A", []string{t1.ID, t2.ID}, time.Minute); err != nil || len(lost) != 0 {
				t.Fatalf("Renew by the owner = %v, %v", lost, err)
			}
			if ok, _ := s.Finish(ctx, "B", t1.ID, StatusDone, "x"); ok {
				t.Fatal("another owner finished the task")
			}
			if ok, err := s.Finish(ctx, "A", t1.ID, StatusDone, "out"); !ok || err != nil {
				t.Fatalf("Finish = %v, %v", ok, err)
			}
			if ok, _ := s.Finish(ctx, "A", t1.ID, StatusFailed, "again"); ok {
				t.Fatal("a task finished twice")
			}
			// A place is free again once a task finished.
			if err := s.Create(ctx, newTask("alice", "th2"), time.Minute, 2); err != nil {
				t.Fatalf("create after a finish: %v", err)
			}
			c, err := s.Cancel(ctx, "alice", t2.ID, "by user")
			if err != nil || c.Status != StatusCancelled || c.Result != "by user" {
				t.Fatalf("Cancel = %+v, %v", c, err)
			}
			if c, _ := s.Cancel(ctx, "alice", t1.ID, "late"); c.Status != StatusDone || c.Result != "out" {
				t.Fatalf("Cancel of a finished task changed it: %+v", c)
			}
			if lost, _ := s.Renew(ctx, "A", []string{t2.ID}, time.Minute); len(lost) != 1 {
				t.Fatal("the owner still holds a cancelled task")
			}
			taken, err := s.TakeUndelivered(ctx, "alice", "th1")
			if err != nil || len(taken) != 2 || taken[0].ID != t1.ID || taken[1].ID != t2.ID {
				t.Fatalf("TakeUndelivered = %v, %v", taken, err)
			}
			if again, _ := s.TakeUndelivered(ctx, "alice", "th1"); len(again) != 0 {
				t.Fatalf("results delivered twice: %v", again)
			}
		})
	}
}

// TestClaimAfterLease: a task whose lease ends is taken over by another
// owner, with one more attempt; past the attempts it fails instead. The
// memory store runs in a synctest bubble, so its leases end on the
// bubble's clock at once; Redis keeps its own clock, outside any bubble.
func TestClaimAfterLease(t *testing.T) {
	t.Parallel()
	for name, mk := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if name == "memory" {
				synctest.Test(t, func(t *testing.T) { claimAfterLease(t, mk(t)) })
				return
			}
			claimAfterLease(t, mk(t))
		})
	}
}

func claimAfterLease(t *testing.T, s Store) {
	t.Helper()
	ctx := context.Background()
	tk := newTask("alice", "th1")
	if err := s.Create(ctx, tk, 100*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Claim(ctx, "B", time.Minute, 2, 10); len(got) != 0 {
		t.Fatalf("claimed a task under lease: %v", got)
	}
	var claimed []*Task
	testenv.Eventually(t, 10*time.Second, func() bool {
		claimed, _ = s.Claim(ctx, "B", 100*time.Millisecond, 2, 10)
		return len(claimed) > 0
	}, "take-over")
	if len(claimed) != 1 || claimed[0].Owner != "B" || claimed[0].Attempts != 2 || claimed[0].Finished() {
		t.Fatalf("claimed %+v", claimed[0])
	}
	if lost, _ := s.Renew(ctx, "A", []string{tk.ID}, time.Minute); len(lost) != 1 {
		t.Fatal("the old owner kept its lease")
	}
	testenv.Eventually(t, 10*time.Second, func() bool {
		claimed, _ = s.Claim(ctx, "C", time.Minute, 2, 10)
		return len(claimed) > 0
	}, "failure after the last attempt")
	if claimed[0].Status != StatusFailed || claimed[0].Attempts != 3 {
		t.Fatalf("third claim = %+v", claimed[0])
	}
	if taken, _ := s.TakeUndelivered(ctx, "alice", "th1"); len(taken) != 1 || taken[0].Status != StatusFailed {
		t.Fatalf("the failure is not delivered: %v", taken)
	}
}

// TestDeliverOnce: replicas asking together get a result once in all.
func TestDeliverOnce(t *testing.T) {
	t.Parallel()
	for name, mk := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := mk(t)
			tk := newTask("alice", "th1")
			if err := s.Create(ctx, tk, time.Minute, 0); err != nil {
				t.Fatal(err)
			}
			if ok, _ := s.Finish(ctx, "A", tk.ID, StatusDone, "out"); !ok {
				t.Fatal("not finished")
			}
			var mu sync.Mutex
			total := 0
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got, err := s.TakeUndelivered(ctx, "alice", "th1")
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					total += len(got)
					mu.Unlock()
				}()
			}
			wg.Wait()
			if total != 1 {
				t.Fatalf("delivered %d times", total)
			}
		})
	}
}
