package testenv

import (
	"fmt"
	"testing"
	"time"
)

// PollInterval is how often Eventually checks its condition.
const PollInterval = 10 * time.Millisecond

// Eventually calls cond until it returns true and fails t when it has not
// within timeout, with the message format and args make (formatted then,
// so an fmt.Stringer among args can report the last state seen). It is for
// state that another process or a clock settles, which has no event to
// wait on; a goroutine of the test itself is waited for on a channel.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", timeout, fmt.Sprintf(format, args...))
		}
		time.Sleep(PollInterval) // polling a condition with a deadline, not synchronising on time
	}
}
