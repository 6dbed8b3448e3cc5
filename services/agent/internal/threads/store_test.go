package threads

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

func newRedis(t testing.TB) redis.UniversalClient {
	t.Helper()
	addr := testenv.Redis(t)
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{addr}})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

type storeAndLocker interface {
	Store
	Locker
}

func stores(t *testing.T) map[string]func(t *testing.T) storeAndLocker {
	return map[string]func(t *testing.T) storeAndLocker{
		"memory": func(t *testing.T) storeAndLocker {
			s := NewMemoryStore()
			t.Cleanup(func() { s.Close() })
			return s
		},
		"redis": func(t *testing.T) storeAndLocker {
			return NewRedisStore(newRedis(t), WithLease(time.Second))
		},
	}
}

func TestStoreContract(t *testing.T) {
	t.Parallel()
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := mk(t)

			st, err := s.LoadOrCreate(ctx, "alice", "th1")
			if err != nil || st.Version != 0 || st.ThreadID != "th1" || len(st.Messages) != 0 {
				t.Fatalf("LoadOrCreate new = %+v, %v", st, err)
			}
			if _, err := s.Get(ctx, "alice", "th1"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get before save = %v, want ErrNotFound", err)
			}
			st.AgentID = "a1"
			st.Messages = append(st.Messages, loop.Human("hi"))
			if err := s.Save(ctx, "alice", st, "", Bounds{}); err != nil {
				t.Fatalf("Save: %v", err)
			}
			if st.Version != 1 || st.UpdatedAt.IsZero() {
				t.Fatalf("after Save version=%d updated=%v", st.Version, st.UpdatedAt)
			}
			// A second writer that loaded version 1 saves first; the stale one is refused.
			other, err := s.Get(ctx, "alice", "th1")
			if err != nil || other.Version != 1 || other.Messages[0].Content != "hi" {
				t.Fatalf("Get = %+v, %v", other, err)
			}
			other.Messages = append(other.Messages, loop.AI("hello"))
			if err := s.Save(ctx, "alice", other, "", Bounds{}); err != nil {
				t.Fatalf("Save other: %v", err)
			}
			st.Messages = append(st.Messages, loop.AI("stale"))
			if err := s.Save(ctx, "alice", st, "", Bounds{}); !errors.Is(err, ErrConflict) {
				t.Fatalf("stale Save = %v, want ErrConflict", err)
			}
			if st.Version != 1 {
				t.Fatalf("failed Save changed version to %d", st.Version)
			}
			got, _ := s.Get(ctx, "alice", "th1")
			if len(got.Messages) != 2 || got.Messages[1].Content != "hello" || got.Version != 2 {
				t.Fatalf("stored = %+v", got)
			}
			// Creating a thread that someone else created meanwhile also conflicts.
			fresh := &loop.AgentState{ThreadID: "th1"}
			if err := s.Save(ctx, "alice", fresh, "", Bounds{}); !errors.Is(err, ErrConflict) {
				t.Fatalf("blind create = %v, want ErrConflict", err)
			}
			// Users are isolated.
			if _, err := s.Get(ctx, "bob", "th1"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("bob Get = %v, want ErrNotFound", err)
			}
			bobs, _ := listOf(ctx, s, "bob", "")
			if len(bobs) != 0 {
				t.Fatalf("bob List = %v", bobs)
			}
			// List, filtered by agent.
			st2 := &loop.AgentState{ThreadID: "th2", AgentID: "a2", Messages: []llm.Message{loop.Human("x")}}
			if err := s.Save(ctx, "alice", st2, "", Bounds{}); err != nil {
				t.Fatal(err)
			}
			all, _ := listOf(ctx, s, "alice", "")
			if len(all) != 2 {
				t.Fatalf("List = %+v", all)
			}
			a1, _ := listOf(ctx, s, "alice", "a1")
			if len(a1) != 1 || a1[0].ThreadID != "th1" || a1[0].MessageCount != 2 {
				t.Fatalf("List a1 = %+v", a1)
			}
			if err := s.Delete(ctx, "alice", "th1"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, "alice", "th1"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get after Delete = %v", err)
			}
			if err := s.Delete(ctx, "alice", "missing"); err != nil {
				t.Fatalf("Delete missing = %v", err)
			}
			// Returned states are copies.
			c1, _ := s.Get(ctx, "alice", "th2")
			c1.Messages[0].Content = "mutated"
			c2, _ := s.Get(ctx, "alice", "th2")
			if c2.Messages[0].Content != "x" {
				t.Fatal("Get returned shared memory")
			}
		})
	}
}

func TestConcurrentSavesOneWins(t *testing.T) {
	t.Parallel()
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := mk(t)
			base := &loop.AgentState{ThreadID: "race"}
			if err := s.Save(ctx, "u", base, "", Bounds{}); err != nil {
				t.Fatal(err)
			}
			const writers = 8
			var wg sync.WaitGroup
			var mu sync.Mutex
			wins := 0
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					st, err := s.Get(ctx, "u", "race")
					if err != nil {
						t.Error(err)
						return
					}
					if st.Version != 1 {
						return // another writer already won; this one loaded the newer state
					}
					st.Messages = append(st.Messages, loop.Human(fmt.Sprint(i)))
					if err := s.Save(ctx, "u", st, "", Bounds{}); err == nil {
						mu.Lock()
						wins++
						mu.Unlock()
					} else if !errors.Is(err, ErrConflict) {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if wins != 1 {
				t.Fatalf("%d writers saved over version 1, want exactly 1", wins)
			}
		})
	}
}

func TestMemoryTTL(t *testing.T) {
	t.Parallel()
	s := NewMemoryStore(WithTTL(time.Hour), WithSweepInterval(time.Hour))
	t.Cleanup(func() { s.Close() })
	now := time.Unix(1_000_000, 0)
	s.now = func() time.Time { return now }
	ctx := context.Background()
	for _, id := range []string{"old", "touched"} {
		if err := s.Save(ctx, "u", &loop.AgentState{ThreadID: id}, "", Bounds{}); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(50 * time.Minute)
	if _, err := s.Get(ctx, "u", "touched"); err != nil { // slides its TTL
		t.Fatal(err)
	}
	now = now.Add(20 * time.Minute)
	s.Sweep()
	if _, err := s.Get(ctx, "u", "old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("idle thread survived the sweep: %v", err)
	}
	if _, err := s.Get(ctx, "u", "touched"); err != nil {
		t.Fatalf("recently read thread evicted: %v", err)
	}
}

func TestRedisSlidingTTL(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	s := NewRedisStore(rdb, WithRedisTTL(time.Hour))
	ctx := context.Background()
	if err := s.Save(ctx, "u", &loop.AgentState{ThreadID: "t"}, "", Bounds{}); err != nil {
		t.Fatal(err)
	}
	key := s.threadKey("u", "t")
	if err := rdb.PExpire(ctx, key, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "u", "t"); err != nil {
		t.Fatal(err)
	}
	ttl, err := rdb.PTTL(ctx, key).Result()
	if err != nil || ttl < 30*time.Minute {
		t.Fatalf("TTL after Get = %v, %v; want it slid back to about an hour", ttl, err)
	}
}

func TestRunLockAcrossReplicas(t *testing.T) {
	t.Parallel()
	addr := testenv.Redis(t)
	client := func() *RedisStore {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { rdb.Close() })
		return NewRedisStore(rdb, WithLease(time.Second), WithRetryInterval(10*time.Millisecond))
	}
	a, b := client(), client()
	ctx := context.Background()

	la, err := a.Acquire(ctx, "u", "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "u", "t", false); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Acquire = %v, want ErrBusy", err)
	}
	// Renewal keeps the lease past its nominal length: poll well beyond it.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if h, _ := b.Holder(ctx, "u", "t"); h != la.Token() {
			t.Fatalf("lease lapsed while its holder renews it (holder %q)", h)
		}
		select {
		case <-la.Lost():
			t.Fatal("lease reported lost while renewing")
		case <-time.After(20 * time.Millisecond):
		}
	}
	// Other users and threads are independent.
	lo, err := b.Acquire(ctx, "v", "t", false)
	if err != nil {
		t.Fatalf("other user's thread: %v", err)
	}
	lo.Release(ctx)

	// A waiting Acquire gets the lock once it is released.
	got := make(chan Lease, 1)
	go func() {
		l, err := b.Acquire(ctx, "u", "t", true)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lb := <-got
	if lb == nil {
		t.FailNow()
	}
	// A release by a stale holder does not free someone else's lock.
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if h, _ := a.Holder(ctx, "u", "t"); h != lb.Token() {
		t.Fatalf("stale Release freed the lock (holder %q)", h)
	}

	// A crashed holder: stop its renewals without releasing, as a killed
	// process would; its lease expires and the thread frees itself.
	crashed := lb.(*redisLease)
	crashed.stopOnce.Do(func() { close(crashed.stop) })
	<-crashed.done
	var lc Lease
	deadline = time.Now().Add(15 * time.Second)
	for lc == nil {
		if time.Now().After(deadline) {
			t.Fatal("crashed holder's lease never expired")
		}
		l, err := a.Acquire(ctx, "u", "t", false)
		if err == nil {
			lc = l
		} else if !errors.Is(err, ErrBusy) {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { lc.Release(context.Background()) })

	// The old holder, were it still running, finds out its lease is gone.
	crashed2 := &redisLease{s: b, key: crashed.key, token: crashed.token, acquired: time.Now(), lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go crashed2.renew()
	select {
	case <-crashed2.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("a holder whose lease was taken over was not told")
	}
}

// TestMemoryLock runs in a synctest bubble: the waiting Acquire's deadline
// passes on the bubble's clock, at once.
func TestMemoryLock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testMemoryLock)
}

func testMemoryLock(t *testing.T) {
	s := NewMemoryStore()
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	l, err := s.Acquire(ctx, "u", "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, "u", "t", false); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Acquire = %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.Acquire(wctx, "u", "t", true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting Acquire = %v, want deadline", err)
	}
	l.Release(ctx)
	l2, err := s.Acquire(ctx, "u", "t", false)
	if err != nil {
		t.Fatal(err)
	}
	l2.Release(ctx)
}

// A save is fenced by the run lock's token, not only by version: a run whose
// lease passed to another holder cannot write, even with the version it
// loaded, and a writer with no lease cannot write while someone holds one.
func TestSavesFencedByLeaseToken(t *testing.T) {
	t.Parallel()
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := mk(t)
			la, err := s.Acquire(ctx, "u", "t", false)
			if err != nil {
				t.Fatal(err)
			}
			st, _ := s.LoadOrCreate(ctx, "u", "t")
			st.Messages = append(st.Messages, loop.Human("from a"))
			if err := s.Save(ctx, "u", st, la.Token(), Bounds{}); err != nil {
				t.Fatalf("holder's save: %v", err)
			}
			for _, fence := range []string{"", "lk_someone_else"} {
				stale, _ := s.Get(ctx, "u", "t")
				stale.Messages = append(stale.Messages, loop.Human("intruder"))
				if err := s.Save(ctx, "u", stale, fence, Bounds{}); !errors.Is(err, ErrLeaseLost) {
					t.Fatalf("save fenced by %q while a holds the lock = %v, want ErrLeaseLost", fence, err)
				}
			}

			// The lock passes to b; a, still running with the version it
			// loaded, must not overwrite b's thread.
			aView, _ := s.Get(ctx, "u", "t")
			if err := la.Release(ctx); err != nil {
				t.Fatal(err)
			}
			lb, err := s.Acquire(ctx, "u", "t", false)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { lb.Release(context.Background()) })
			aView.Messages = append(aView.Messages, loop.Human("late write from a"))
			if err := s.Save(ctx, "u", aView, la.Token(), Bounds{}); !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("stale holder's save = %v, want ErrLeaseLost", err)
			}
			got, err := s.Get(ctx, "u", "t")
			if err != nil || got.Version != 1 || len(got.Messages) != 1 {
				t.Fatalf("thread after refused saves = v%d %d messages, %v; want v1 with 1", got.Version, len(got.Messages), err)
			}
			got.Messages = append(got.Messages, loop.Human("from b"))
			if err := s.Save(ctx, "u", got, lb.Token(), Bounds{}); err != nil {
				t.Fatalf("new holder's save: %v", err)
			}
		})
	}
}

// When renewals fail (Redis stops answering writes), the holder gives the
// lease up while it still holds in Redis, so no other replica can take the
// thread while this run believes it has it.
func TestLeaseLostBeforeItExpires(t *testing.T) {
	t.Parallel()
	addr := testenv.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { admin.Close() })
	s := NewRedisStore(rdb, WithLease(1500*time.Millisecond))
	ctx := context.Background()
	l, err := s.Acquire(ctx, "u", "t", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Release(context.Background()) })

	// Writes (the renewal script) block; reads (PTTL) still answer.
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "10000", "WRITE").Err(); err != nil {
		t.Skipf("CLIENT PAUSE WRITE unsupported: %v", err)
	}
	t.Cleanup(func() { admin.Do(context.Background(), "CLIENT", "UNPAUSE") })
	select {
	case <-l.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("failed renewals never gave the lease up")
	}
	ttl, err := admin.PTTL(ctx, s.lockKey("u", "t")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 0 {
		t.Fatalf("the lease was given up only after it expired (PTTL %v): another replica could already hold the thread", ttl)
	}
}

// A release that fails while Redis is unreachable is retried, so the thread
// is free soon after Redis answers again, not only once the lease expires.
func TestFailedReleaseIsRetried(t *testing.T) {
	t.Parallel()
	addr := testenv.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { admin.Close() })
	const lease = time.Minute
	s := NewRedisStore(rdb, WithLease(lease), WithRetryInterval(10*time.Millisecond))
	ctx := context.Background()
	l, err := s.Acquire(ctx, "u", "t", false)
	if err != nil {
		t.Fatal(err)
	}

	if err := admin.Do(ctx, "CLIENT", "PAUSE", "60000", "WRITE").Err(); err != nil {
		t.Skipf("CLIENT PAUSE WRITE unsupported: %v", err)
	}
	unpaused := false
	t.Cleanup(func() {
		if !unpaused {
			admin.Do(context.Background(), "CLIENT", "UNPAUSE")
		}
	})
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := l.Release(short); err == nil {
		t.Fatal("Release succeeded while Redis refused writes")
	}
	if err := admin.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	unpaused = true

	// Without the retry the lock would hold for the whole minute.
	deadline := time.Now().Add(lease / 3)
	for {
		n, err := admin.Exists(ctx, s.lockKey("u", "t")).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lock is still held %v after Redis answered again", lease/3)
		}
		time.Sleep(20 * time.Millisecond) // polling Redis: there is no event to wait on
	}
	if _, err := s.Acquire(ctx, "u", "t", false); err != nil {
		t.Fatalf("Acquire after the retried release: %v", err)
	}
}
