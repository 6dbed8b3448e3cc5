package threads

import (
	"context"
	"strings"
	"testing"
)

// TestLockNamesItsHolder: a thread's lock key says which replica holds it,
// and the name does not weaken the token (two takes differ).
func TestLockNamesItsHolder(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	ctx := context.Background()
	for _, tc := range []struct{ name, suffix string }{{"pod-a:7", "@pod-a:7"}, {"", ""}} {
		s := NewRedisStore(rdb, WithHolderName(tc.name))
		l, err := s.Acquire(ctx, "alice", "t-"+tc.name, false)
		if err != nil {
			t.Fatal(err)
		}
		holder, err := s.Holder(ctx, "alice", "t-"+tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if holder != l.Token() || !strings.HasPrefix(holder, "lk_") || !strings.HasSuffix(holder, tc.suffix) || strings.Contains(holder, "@") != (tc.suffix != "") {
			t.Fatalf("holder %q, token %q, want the token ending %q", holder, l.Token(), tc.suffix)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		l2, err := s.Acquire(ctx, "alice", "t-"+tc.name, false)
		if err != nil {
			t.Fatal(err)
		}
		if l2.Token() == l.Token() {
			t.Fatalf("two takes got the same token %q", l.Token())
		}
		_ = l2.Release(ctx)
	}
}
