package quota

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wick-agent/wick/platform/testenv"
)

func newRedis(t *testing.T) redis.UniversalClient {
	t.Helper()
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{testenv.Redis(t)}})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestStores: a full set refuses, taking a held id again is no new member,
// a drop frees a place, and users and kinds count apart. The Redis case
// takes through two stores on two clients, as two replicas do.
func TestStores(t *testing.T) {
	t.Parallel()
	mem := NewMemory()
	rdb := newRedis(t)
	cases := map[string][2]Store{
		"memory": {mem, mem},
		"redis":  {NewRedis(rdb, "", time.Minute), NewRedis(rdb, "", time.Minute)},
	}
	for name, pair := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, b := pair[0], pair[1]
			take := func(s Store, user, kind, id string) (int64, bool) {
				n, ok, err := s.Take(ctx, user, kind, id, 2)
				if err != nil {
					t.Fatal(err)
				}
				return n, ok
			}
			if n, ok := take(a, "alice", "runs", "r1"); !ok || n != 1 {
				t.Fatalf("first = %d, %v", n, ok)
			}
			if n, ok := take(b, "alice", "runs", "r2"); !ok || n != 2 {
				t.Fatalf("second = %d, %v", n, ok)
			}
			if n, ok := take(a, "alice", "runs", "r3"); ok || n != 2 {
				t.Fatalf("third = %d, %v, want refused at 2", n, ok)
			}
			if n, ok := take(a, "alice", "runs", "r1"); !ok || n != 2 {
				t.Fatalf("again = %d, %v", n, ok)
			}
			if _, ok := take(a, "bob", "runs", "r3"); !ok {
				t.Fatal("another user was refused")
			}
			if _, ok := take(a, "alice", "watchers", "r3"); !ok {
				t.Fatal("another kind was refused")
			}
			if err := b.Drop(ctx, "alice", "runs", "r1"); err != nil {
				t.Fatal(err)
			}
			if _, ok := take(a, "alice", "runs", "r3"); !ok {
				t.Fatal("refused after a drop")
			}
			if n, ok, err := a.Take(ctx, "alice", "runs", "r4", 0); err != nil || !ok || n != 3 {
				t.Fatalf("no max = %d, %v, %v", n, ok, err)
			}
		})
	}
}

// TestRedisMembersExpire: a member whose holder stopped renewing stops
// counting after its lease, so a replica that died frees its users' places.
func TestRedisMembersExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewRedis(newRedis(t), "", 100*time.Millisecond)
	if _, ok, err := s.Take(ctx, "alice", "runs", "dead", 1); err != nil || !ok {
		t.Fatalf("take = %v, %v", ok, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, ok, err := s.Take(ctx, "alice", "runs", "next", 1)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("an unrenewed member never expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHold: Hold refuses with the limit's message, renews what it holds,
// and its release frees the place.
func TestHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := newRedis(t)
	s := NewRedis(rdb, "", 300*time.Millisecond)
	lim := Limit{Max: 1, Name: "concurrent runs per user", Unit: "runs going", Flag: "-max-runs-per-user", Free: "wait for one to end or cancel one"}
	release, err := Hold(ctx, s, "alice", "runs", "r1", lim)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Hold(ctx, s, "alice", "runs", "r2", lim)
	if !errors.Is(err, ErrExceeded) || err.Error() != "user alice has 1 runs going; the limit of concurrent runs per user is 1 (-max-runs-per-user); wait for one to end or cancel one" {
		t.Fatalf("second hold = %v", err)
	}
	// The holder renews: the member's lease end moves on.
	first, err := rdb.ZScore(ctx, s.key("alice", "runs"), "r1").Result()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		score, err := rdb.ZScore(ctx, s.key("alice", "runs"), "r1").Result()
		if err != nil {
			t.Fatalf("held member is gone: %v", err)
		}
		if score > first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a held member was never renewed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	release()
	release() // twice is harmless
	again, err := Hold(ctx, s, "alice", "runs", "r2", lim)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}
