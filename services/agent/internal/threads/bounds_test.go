package threads

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/quota"
)

// TestSaveBounds: a save that would create a thread beyond the user's bound
// or store more bytes than the thread's bound stores nothing; replacing a
// thread is no new thread, and a deleted thread frees its place.
func TestSaveBounds(t *testing.T) {
	t.Parallel()
	lim := quota.Limit{Max: 2, Name: "threads per user", Unit: "threads", Flag: "-max-threads-per-user", Free: "delete one"}
	b := Bounds{Threads: lim, MaxBytes: 4 << 10}
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := mk(t)
			save := func(user, id, content string) (*loop.AgentState, error) {
				st, err := s.LoadOrCreate(ctx, user, id)
				if err != nil {
					t.Fatal(err)
				}
				st.Messages = append(st.Messages, loop.Human(content))
				return st, s.Save(ctx, user, st, "", b)
			}
			for _, id := range []string{"t1", "t2"} {
				if _, err := save("alice", id, "hi"); err != nil {
					t.Fatal(err)
				}
			}
			_, err := save("alice", "t3", "hi")
			var ex *quota.Exceeded
			if !errors.As(err, &ex) || !errors.Is(err, quota.ErrExceeded) || ex.Error() != "user alice has 2 threads; the limit of threads per user is 2 (-max-threads-per-user); delete one" {
				t.Fatalf("third thread = %v", err)
			}
			if _, err := s.Get(ctx, "alice", "t3"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("refused thread was stored: %v", err)
			}
			if n, err := s.Count(ctx, "alice"); err != nil || n != 2 {
				t.Fatalf("Count = %d, %v", n, err)
			}
			if _, err := save("alice", "t1", "again"); err != nil {
				t.Fatalf("saving an existing thread: %v", err)
			}
			if _, err := save("bob", "t3", "hi"); err != nil {
				t.Fatalf("another user's thread: %v", err)
			}

			// Too many bytes: nothing is stored, the version stays.
			st, err := save("alice", "t1", strings.Repeat("x", 5<<10))
			var big *TooLargeError
			if !errors.As(err, &big) || big.Max != 4<<10 || big.Size <= big.Max || big.ThreadID != "t1" {
				t.Fatalf("oversized save = %v", err)
			}
			if st.Version != 2 {
				t.Fatalf("version after a refused save = %d, want 2", st.Version)
			}
			if got, err := s.Get(ctx, "alice", "t1"); err != nil || len(got.Messages) != 2 || got.Version != 2 {
				t.Fatalf("thread after a refused save = %+v, %v", got, err)
			}

			if err := s.Delete(ctx, "alice", "t2"); err != nil {
				t.Fatal(err)
			}
			if _, err := save("alice", "t3", "hi"); err != nil {
				t.Fatalf("after a delete: %v", err)
			}
		})
	}
}

// TestExpiredThreadsFreeTheirPlace: the Redis index still names a thread
// whose hash expired; a save at the bound drops such names before refusing.
func TestExpiredThreadsFreeTheirPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := newRedis(t)
	s := NewRedisStore(rdb)
	b := Bounds{Threads: quota.Limit{Max: 1}}
	st := &loop.AgentState{ThreadID: "old"}
	if err := s.Save(ctx, "alice", st, "", b); err != nil {
		t.Fatal(err)
	}
	// What a TTL expiry does: the hash goes, the index entry stays.
	if err := rdb.Del(ctx, s.threadKey("alice", "old")).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, "alice", &loop.AgentState{ThreadID: "new"}, "", b); err != nil {
		t.Fatalf("save after the only thread expired: %v", err)
	}
	if n, err := s.Count(ctx, "alice"); err != nil || n != 1 {
		t.Fatalf("Count = %d, %v", n, err)
	}
}
