package quota

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRates: a full window refuses with the time until its oldest event
// leaves it, users and kinds count apart, and a window that has passed
// counts again. The Redis case counts through two stores on two clients,
// as two replicas do.
func TestRates(t *testing.T) {
	t.Parallel()
	mem := NewMemory()
	rdb := newRedis(t)
	cases := map[string][2]Rates{
		"memory": {mem, mem},
		"redis":  {NewRedis(rdb, "", 0), NewRedis(rdb, "", 0)},
	}
	for name, pair := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, b := pair[0], pair[1]
			count := func(r Rates, user, kind string, window time.Duration) (int64, bool, time.Duration) {
				n, ok, retry, err := r.Count(ctx, user, kind, 2, window)
				if err != nil {
					t.Fatal(err)
				}
				return n, ok, retry
			}
			if n, ok, _ := count(a, "alice", "fetch", time.Hour); !ok || n != 1 {
				t.Fatalf("first = %d, %v", n, ok)
			}
			if n, ok, _ := count(b, "alice", "fetch", time.Hour); !ok || n != 2 {
				t.Fatalf("second = %d, %v", n, ok)
			}
			n, ok, retry := count(a, "alice", "fetch", time.Hour)
			if ok || n != 2 {
				t.Fatalf("third = %d, %v, want refused at 2", n, ok)
			}
			if retry <= 59*time.Minute || retry > time.Hour {
				t.Fatalf("retry after %s, want just under an hour", retry)
			}
			if _, ok, _ := count(a, "bob", "fetch", time.Hour); !ok {
				t.Fatal("another user was refused")
			}
			if _, ok, _ := count(a, "alice", "search", time.Hour); !ok {
				t.Fatal("another kind was refused")
			}
			// A 1 ms window has passed by the next count: the deadline
			// poll waits on the clock, not on a sleep of a guessed length.
			deadline := time.Now().Add(5 * time.Second)
			for {
				count(a, "carol", "tick", time.Millisecond)
				count(a, "carol", "tick", time.Millisecond)
				if _, ok, _ := count(a, "carol", "tick", time.Millisecond); ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("a passed window still refuses")
				}
			}
		})
	}
}

// TestTake: a refusal is ErrExceeded and says which limit, which flag and
// when to try again; a zero limit does not count.
func TestTake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := NewMemory()
	l := RateLimit{Limit: Limit{Max: 1, Name: "fetch_url calls per user per minute", Unit: "fetch_url calls in the last minute", Flag: "-web-rate-per-minute"}, Window: time.Minute}
	if err := Take(ctx, m, "alice", "fetch", l); err != nil {
		t.Fatal(err)
	}
	err := Take(ctx, m, "alice", "fetch", l)
	if !errors.Is(err, ErrExceeded) {
		t.Fatalf("second take = %v, want ErrExceeded", err)
	}
	for _, want := range []string{"user alice has 1 fetch_url calls in the last minute", "limit of fetch_url calls per user per minute is 1", "-web-rate-per-minute", "try again in 1m0s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	for range 3 {
		if err := Take(ctx, m, "bob", "fetch", RateLimit{Window: time.Minute}); err != nil {
			t.Fatalf("unbounded take = %v", err)
		}
	}
}
