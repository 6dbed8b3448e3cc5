package quota

import (
	"context"
	"fmt"
	"time"
)

// Rates counts what users do in a sliding window of time (tool calls that
// reach the outside world), where Store counts what they hold. Counted in
// the store every replica shares, a user's limit holds however their calls
// spread over replicas.
type Rates interface {
	// Count records one event of kind for user unless max (> 0) events are
	// counted in the window already. It returns the events counted, with
	// this one when it was recorded, and, on a refusal, how long until the
	// oldest leaves the window.
	Count(ctx context.Context, user, kind string, max int64, window time.Duration) (n int64, ok bool, retryAfter time.Duration, err error)
}

// RateLimit is a bound on events per window and how to explain it.
type RateLimit struct {
	Limit
	// Window is the span events are counted over.
	Window time.Duration
}

// Take counts one event of kind for user under l; a full window is refused
// with an error that says when to try again. A zero Max does not bound.
func Take(ctx context.Context, r Rates, user, kind string, l RateLimit) error {
	if l.Max <= 0 {
		return nil
	}
	n, ok, retry, err := r.Count(ctx, user, kind, l.Max, l.Window)
	if err != nil {
		return fmt.Errorf("count %s of user %s: %w", kind, user, err)
	}
	if ok {
		return nil
	}
	lim := l.Limit
	lim.Free = fmt.Sprintf("try again in %s", retry.Round(time.Second).String())
	if retry < time.Second {
		lim.Free = "try again in a second"
	}
	return lim.Refuse(user, n)
}
