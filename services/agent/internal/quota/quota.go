// Package quota bounds what one user may hold in the agent service and says
// so in words the user can act on. Things that are stored (agents, tools,
// threads) are counted by their own stores, atomically with the write;
// things that are held while they last (runs going, runs waiting for a busy
// thread, open event streams) are counted here, in a Store every replica
// shares.
package quota

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
)

// ErrExceeded matches every refusal by a limit (errors.Is); a client sees
// ResourceExhausted.
var ErrExceeded = errcode.New(codes.ResourceExhausted, "limit exceeded")

// Limit is one bound and how to explain it.
type Limit struct {
	// Max is the bound; 0 means none.
	Max int64
	// Name says what is bounded: "concurrent runs per user".
	Name string
	// Unit names what a user holds, after a count: "runs going".
	Unit string
	// Flag is the command-line flag that raises it: "-max-runs-per-user".
	Flag string
	// Free says how to get under it: "wait for one to end or cancel one".
	Free string
	// Rejections, when set, counts the limit's refusals.
	Rejections *Rejections
}

// Allows reports whether holding n is within the limit.
func (l Limit) Allows(n int64) bool { return l.Max <= 0 || n <= l.Max }

// Refuse is the error of a user who holds n already.
func (l Limit) Refuse(user string, n int64) error {
	return l.Exceeded(fmt.Sprintf("user %s has %d %s", user, n, l.Unit))
}

// Exceeded is the refusal of what, a description of who holds how much.
func (l Limit) Exceeded(what string) error {
	l.Rejections.count(l.Flag)
	return &Exceeded{What: what, Limit: l}
}

// Rejections counts refusals as wick.agent.quota.rejections by the name
// of the flag that raises the limit. A nil *Rejections counts nothing.
type Rejections struct {
	c metric.Int64Counter
}

// NewRejections creates the counter on m, the agent service's meter.
func NewRejections(m metric.Meter) *Rejections {
	c, err := m.Int64Counter("wick.agent.quota.rejections",
		metric.WithDescription("requests refused by a per-user limit, by the limit's flag"), metric.WithUnit("{rejection}"))
	if err != nil {
		otel.Handle(err) // only an invalid name fails, and the name is a constant
	}
	return &Rejections{c: c}
}

// count is off the hot path (a refusal), so its attribute set is built
// each time.
func (r *Rejections) count(flag string) {
	if r == nil {
		return
	}
	r.c.Add(context.Background(), 1, metric.WithAttributes(attribute.String("limit", flag)))
}

// Exceeded is a refusal by a limit.
type Exceeded struct {
	// What says who holds how much: "user alice has 8 runs going".
	What  string
	Limit Limit
}

func (e *Exceeded) Error() string {
	return fmt.Sprintf("%s; the limit of %s is %d (%s); %s", e.What, e.Limit.Name, e.Limit.Max, e.Limit.Flag, e.Limit.Free)
}

// Is makes errors.Is(err, ErrExceeded) true.
func (e *Exceeded) Is(target error) bool { return target == ErrExceeded }

// Code is ErrExceeded's code, since the refusal matches it without wrapping it.
func (e *Exceeded) Code() codes.Code { return codes.ResourceExhausted }

// Store counts what users hold while it lasts. Each user has a set per kind
// of members (run ids, stream ids); a member lives for Lease unless renewed,
// so one whose holder died stops counting by itself.
type Store interface {
	// Take adds id to the user's set of kind unless the set already holds
	// max members (0: no max). It returns the members held after, or at the
	// refusal, and whether id was added. Taking an id already held renews it.
	Take(ctx context.Context, user, kind, id string, max int64) (n int64, ok bool, err error)
	// Renew keeps id counted for another lease.
	Renew(ctx context.Context, user, kind, id string) error
	// Drop stops counting id.
	Drop(ctx context.Context, user, kind, id string) error
	// Lease is how long a member counts without renewal; 0 means until
	// dropped (a store that dies with its process).
	Lease() time.Duration
}

// dropTimeout bounds the Drop of a released slot, which runs after the
// request that held it has ended.
const dropTimeout = 5 * time.Second

// Hold takes a slot of kind for user under l, keeps it renewed, and returns
// the function that gives it up. A full set is l.Refuse.
func Hold(ctx context.Context, s Store, user, kind, id string, l Limit) (release func(), err error) {
	n, ok, err := s.Take(ctx, user, kind, id, l.Max)
	if err != nil {
		return nil, fmt.Errorf("count %s of user %s: %w", kind, user, err)
	}
	if !ok {
		return nil, l.Refuse(user, n)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	every := s.Lease() / 3
	if every <= 0 {
		// Slots that never expire (one process) need no renewing: no
		// goroutine waits beside each held slot.
		close(done)
	} else {
		go renew(s, user, kind, id, every, stop, done)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dropTimeout)
			defer cancel()
			_ = s.Drop(dctx, user, kind, id) // a slot not dropped expires after its lease
		})
	}, nil
}

// renew renews a held slot every interval until stop is closed, then
// closes done.
func renew(s Store, user, kind, id string, every time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			rctx, cancel := context.WithTimeout(context.Background(), every)
			// A failed renewal is retried on the next tick; a slot lost
			// meanwhile only undercounts for a moment.
			_ = s.Renew(rctx, user, kind, id)
			cancel()
		}
	}
}
