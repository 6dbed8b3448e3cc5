package testenv

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// lastSeen reports, when a failure is formatted, the last value a
// condition saw.
type lastSeen struct{ n *int }

func (l lastSeen) String() string { return strconv.Itoa(*l.n) }

// TestEventually: a condition that comes true within the timeout passes
// after exactly as many checks as it needed; one that never does fails
// once the timeout has passed, not before, with its message formatted at
// the failure (the last state seen).
func TestEventually(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		trueAfter int // checks until cond holds; -1 never
		timeout   time.Duration
		wantFatal string
	}{
		{"at once", 0, time.Second, ""},
		{"after a few checks", 5, time.Second, ""},
		{"never", -1, time.Second, "not within 1s: counter (last 102)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ft := &fakeT{TB: t}
				calls := 0
				start := time.Now()
				func() {
					defer func() {
						if p := recover(); p != nil && p != ft {
							panic(p)
						}
					}()
					Eventually(ft, tt.timeout, func() bool {
						calls++
						return tt.trueAfter >= 0 && calls > tt.trueAfter
					}, "counter (last %v)", lastSeen{&calls})
				}()
				if ft.fatal != tt.wantFatal {
					t.Fatalf("failure %q, want %q", ft.fatal, tt.wantFatal)
				}
				if tt.wantFatal == "" && calls != tt.trueAfter+1 {
					t.Fatalf("cond called %d times, want %d", calls, tt.trueAfter+1)
				}
				if elapsed := time.Since(start); tt.wantFatal != "" && elapsed < tt.timeout {
					t.Fatalf("gave up after %s, before the %s timeout", elapsed, tt.timeout)
				}
			})
		})
	}
}
