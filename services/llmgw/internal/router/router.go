// Package router runs one call over a fallback chain of models: it retries a
// model on transient failures with exponential backoff and jitter (honouring
// the provider's Retry-After), then falls back to the next model — but only
// while nothing has been sent to the caller. Once the first delta is out, the
// reply belongs to that model and a failure ends the call.
package router

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

// Defaults of the retry policy.
const (
	DefaultMaxRetries    = 2
	DefaultBaseDelay     = 250 * time.Millisecond
	DefaultMaxDelay      = 8 * time.Second
	DefaultMaxRetryAfter = 30 * time.Second
)

// Target is one model of a chain.
type Target struct {
	// Name is the model as the caller named it.
	Name string
	// Provider and Model say who answers: "openai", "gpt-4o".
	Provider, Model string
	// MaxTokens is the model's default output limit (0: none).
	MaxTokens int
	// Open returns the provider; it fails when, for example, the key is missing.
	Open func() (llm.Provider, error)
}

// Policy is the retry policy.
type Policy struct {
	// MaxRetries is how many times one model is retried after its first attempt.
	MaxRetries int
	// BaseDelay and MaxDelay bound the exponential backoff.
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After the router waits for; a longer
	// one moves on to the next model at once.
	MaxRetryAfter time.Duration
}

// DefaultPolicy returns the default policy.
func DefaultPolicy() Policy {
	return Policy{MaxRetries: DefaultMaxRetries, BaseDelay: DefaultBaseDelay, MaxDelay: DefaultMaxDelay, MaxRetryAfter: DefaultMaxRetryAfter}
}

// Emit receives the events of the answering model.
type Emit func(t *Target, ev llm.Event) error

// Outcome describes how a call went.
type Outcome struct {
	// Target is the model that answered (or failed last).
	Target *Target
	Result llm.Result
	// Upstream is the time spent waiting on providers, without the time spent
	// in emit and without backoff waits.
	Upstream time.Duration
	// Backoff is the time spent waiting between attempts.
	Backoff time.Duration
	// Retries and Fallbacks count the extra attempts.
	Retries, Fallbacks int
	// Started is true once an event was emitted.
	Started bool
}

// Run sends req to the targets in order until one answers.
func (p Policy) Run(ctx context.Context, targets []Target, req llm.Request, emit Emit) (Outcome, error) {
	var out Outcome
	var failures []string
	var last *upstream.Error
	for i := range targets {
		t := &targets[i]
		out.Target = t
		if i > 0 {
			out.Fallbacks++
		}
		err := p.runTarget(ctx, t, req, emit, &out)
		if err == nil {
			return out, nil
		}
		e := upstream.AsError(err)
		if out.Started || e.Kind == upstream.KindCanceled || e.Kind == upstream.KindTimeout || ctx.Err() != nil {
			if ctx.Err() != nil && e.Kind != upstream.KindCanceled && e.Kind != upstream.KindTimeout {
				return out, contextError(ctx)
			}
			return out, err
		}
		last = e
		failures = append(failures, t.Name+": "+e.Error())
	}
	if len(targets) == 1 || last == nil {
		if last == nil {
			return out, upstream.Errorf(upstream.KindBadSpec, "no model to call")
		}
		return out, last
	}
	return out, &upstream.Error{Kind: last.Kind, Status: last.Status, Message: "every model of the fallback chain failed: " + strings.Join(failures, "; "), Err: last}
}

func (p Policy) runTarget(ctx context.Context, t *Target, req llm.Request, emit Emit, out *Outcome) error {
	prov, err := t.Open()
	if err != nil {
		return err
	}
	req.Model = t.Model
	if req.MaxTokens == 0 {
		req.MaxTokens = t.MaxTokens
	}
	return p.Do(ctx, out, func() error {
		var inEmit time.Duration
		start := time.Now()
		res, err := prov.Stream(ctx, req, func(ev llm.Event) error {
			out.Started = true
			s := time.Now()
			err := emit(t, ev)
			inEmit += time.Since(s)
			return err
		})
		out.Upstream += time.Since(start) - inEmit
		if err == nil {
			out.Result = res
		}
		return err
	})
}

// Do runs attempt until it succeeds, fails for good, or the policy's retries
// are spent, waiting between attempts as the policy says. It counts retries
// and backoff into out, and never retries once out.Started. Calls that are
// not streams (embeddings) use it directly.
func (p Policy) Do(ctx context.Context, out *Outcome, attempt func() error) error {
	for n := 0; ; n++ {
		err := attempt()
		if err == nil {
			return nil
		}
		e := upstream.AsError(err)
		if out.Started || !e.Retryable() || n >= p.MaxRetries || ctx.Err() != nil {
			return err
		}
		wait := p.backoff(n)
		if e.RetryAfter > 0 {
			if e.RetryAfter > p.MaxRetryAfter {
				return err
			}
			wait = e.RetryAfter
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return err // waiting would outlive the call; the next model may answer in time
		}
		s := time.Now()
		if serr := upstream.Sleep(ctx, wait); serr != nil {
			return contextError(ctx)
		}
		out.Backoff += time.Since(s)
		out.Retries++
	}
}

// backoff is exponential with equal jitter: half the step fixed, half random,
// so that retries of many calls spread out but never come too soon.
func (p Policy) backoff(attempt int) time.Duration {
	d := p.BaseDelay << attempt
	if d > p.MaxDelay || d <= 0 {
		d = p.MaxDelay
	}
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

func contextError(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &upstream.Error{Kind: upstream.KindTimeout, Message: "the call's timeout passed", Err: ctx.Err()}
	}
	return &upstream.Error{Kind: upstream.KindCanceled, Message: "the call was canceled", Err: ctx.Err()}
}
