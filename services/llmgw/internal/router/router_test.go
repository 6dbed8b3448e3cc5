package router_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/llmgw/internal/router"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

// scripted fails with errs[i] on attempt i, then answers; when deltaFirst is
// set it sends a delta before failing.
type scripted struct {
	errs       []error
	deltaFirst bool
	calls      atomic.Int32
}

func (s *scripted) Stream(_ context.Context, _ llm.Request, emit llm.Emit) (llm.Result, error) {
	i := int(s.calls.Add(1) - 1)
	if s.deltaFirst {
		if err := emit(llm.Event{Delta: "partial"}); err != nil {
			return llm.Result{}, err
		}
	}
	if i < len(s.errs) && s.errs[i] != nil {
		return llm.Result{}, s.errs[i]
	}
	_ = emit(llm.Event{Delta: "ok"})
	return llm.Result{Content: "ok", FinishReason: "stop"}, nil
}

func target(name string, p llm.Provider) router.Target {
	return router.Target{Name: name, Provider: "fake", Model: name, Open: func() (llm.Provider, error) { return p, nil }}
}

var fast = router.Policy{MaxRetries: 2, BaseDelay: time.Microsecond, MaxDelay: 10 * time.Microsecond, MaxRetryAfter: time.Second}

func kindErr(k upstream.Kind) error { return &upstream.Error{Kind: k, Message: k.String()} }

func TestRetryAndFallback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		first, second *scripted
		wantErr       upstream.Kind
		wantFirst     int32
		wantSecond    int32
		wantModel     string
		wantRetries   int
		wantFallbacks int
	}{
		{name: "success", first: &scripted{}, second: &scripted{}, wantFirst: 1, wantModel: "a"},
		{name: "429 retried then ok", first: &scripted{errs: []error{kindErr(upstream.KindRateLimited)}}, second: &scripted{}, wantFirst: 2, wantModel: "a", wantRetries: 1},
		{name: "529 retried then ok", first: &scripted{errs: []error{kindErr(upstream.KindOverloaded), kindErr(upstream.KindOverloaded)}}, second: &scripted{}, wantFirst: 3, wantModel: "a", wantRetries: 2},
		{name: "retries exhausted, fallback", first: &scripted{errs: []error{kindErr(upstream.KindServer), kindErr(upstream.KindServer), kindErr(upstream.KindServer)}}, second: &scripted{}, wantFirst: 3, wantSecond: 1, wantModel: "b", wantRetries: 2, wantFallbacks: 1},
		{name: "400 not retried, fallback", first: &scripted{errs: []error{kindErr(upstream.KindInvalid)}}, second: &scripted{}, wantFirst: 1, wantSecond: 1, wantModel: "b", wantFallbacks: 1},
		{name: "401 not retried, fallback", first: &scripted{errs: []error{kindErr(upstream.KindAuth)}}, second: &scripted{}, wantFirst: 1, wantSecond: 1, wantModel: "b", wantFallbacks: 1},
		{name: "no fallback after first delta", first: &scripted{errs: []error{kindErr(upstream.KindConnection)}, deltaFirst: true}, second: &scripted{}, wantErr: upstream.KindConnection, wantFirst: 1, wantModel: "a"},
		{name: "both fail", first: &scripted{errs: []error{kindErr(upstream.KindNotFound)}}, second: &scripted{errs: []error{kindErr(upstream.KindAuth)}}, wantErr: upstream.KindAuth, wantFirst: 1, wantSecond: 1, wantModel: "b", wantFallbacks: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			targets := []router.Target{target("a", tt.first), target("b", tt.second)}
			var from []string
			out, err := fast.Run(context.Background(), targets, llm.Request{}, func(tg *router.Target, ev llm.Event) error {
				from = append(from, tg.Name)
				return nil
			})
			if tt.wantErr != 0 || err != nil {
				var e *upstream.Error
				if !errors.As(err, &e) || e.Kind != tt.wantErr {
					t.Fatalf("err = %v, want kind %v", err, tt.wantErr)
				}
			}
			if got := tt.first.calls.Load(); got != tt.wantFirst {
				t.Errorf("first called %d times, want %d", got, tt.wantFirst)
			}
			if got := tt.second.calls.Load(); got != tt.wantSecond {
				t.Errorf("second called %d times, want %d", got, tt.wantSecond)
			}
			if out.Target.Name != tt.wantModel || out.Retries != tt.wantRetries || out.Fallbacks != tt.wantFallbacks {
				t.Errorf("outcome = %s retries %d fallbacks %d", out.Target.Name, out.Retries, out.Fallbacks)
			}
			for _, f := range from {
				if f != tt.wantModel {
					t.Errorf("events from %v, want only %s", from, tt.wantModel)
					break
				}
			}
		})
	}
}

func TestRetryAfterTooLongMovesOn(t *testing.T) {
	t.Parallel()
	first := &scripted{errs: []error{&upstream.Error{Kind: upstream.KindRateLimited, RetryAfter: time.Hour}}}
	second := &scripted{}
	out, err := fast.Run(context.Background(), []router.Target{target("a", first), target("b", second)}, llm.Request{}, func(*router.Target, llm.Event) error { return nil })
	if err != nil || out.Target.Name != "b" || first.calls.Load() != 1 {
		t.Fatalf("out %s err %v first calls %d", out.Target.Name, err, first.calls.Load())
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	first := &scripted{errs: []error{&upstream.Error{Kind: upstream.KindRateLimited, RetryAfter: 2 * time.Millisecond}}}
	out, err := fast.Run(context.Background(), []router.Target{target("a", first)}, llm.Request{}, func(*router.Target, llm.Event) error { return nil })
	if err != nil || out.Retries != 1 {
		t.Fatalf("err %v retries %d", err, out.Retries)
	}
	if out.Backoff < 2*time.Millisecond {
		t.Fatalf("waited %v, less than the provider's Retry-After", out.Backoff)
	}
}

func TestCanceledIsNotRetried(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	first := &scripted{errs: []error{&upstream.Error{Kind: upstream.KindCanceled}}}
	second := &scripted{}
	_, err := fast.Run(ctx, []router.Target{target("a", first), target("b", second)}, llm.Request{}, func(*router.Target, llm.Event) error { return nil })
	var e *upstream.Error
	if !errors.As(err, &e) || e.Kind != upstream.KindCanceled || second.calls.Load() != 0 {
		t.Fatalf("err %v second calls %d", err, second.calls.Load())
	}
}

func TestOpenFailureFallsBack(t *testing.T) {
	t.Parallel()
	missing := router.Target{Name: "a", Open: func() (llm.Provider, error) {
		return nil, upstream.Errorf(upstream.KindMissingKey, "the API key variable X_API_KEY is not set")
	}}
	second := &scripted{}
	out, err := fast.Run(context.Background(), []router.Target{missing, target("b", second)}, llm.Request{}, func(*router.Target, llm.Event) error { return nil })
	if err != nil || out.Target.Name != "b" {
		t.Fatalf("out %s err %v", out.Target.Name, err)
	}
}
