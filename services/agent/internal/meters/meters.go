// Package meters holds what the agent service's packages share to record
// OpenTelemetry metrics: the meter they all record on, attribute sets built
// once per label value, and the count of Redis errors of the stores.
package meters

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Name is the instrumentation scope of every agent instrument, so that one
// instrument recorded by several packages is one series.
const Name = "github.com/wick-agent/wick/services/agent"

// Meter is the agent's meter of mp; nil means the global provider.
func Meter(mp metric.MeterProvider) metric.Meter {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	return mp.Meter(Name)
}

// Sets keeps the measurement options of one attribute set per key, built
// on first use, so that a measurement on a hot path allocates nothing (a
// variadic option passed on its own would be a new slice each time). Keys
// must come from a bounded set of values.
type Sets[K comparable] struct {
	build func(K) attribute.Set
	mu    sync.RWMutex
	m     map[K]Opts
}

// Opts are an attribute set as the options of a counter's Add and a
// histogram's Record: pass them as opts.Add... and opts.Record....
type Opts struct {
	Add    []metric.AddOption
	Record []metric.RecordOption
}

// NewSets returns a cache of the sets build makes.
func NewSets[K comparable](build func(K) attribute.Set) *Sets[K] {
	return &Sets[K]{build: build, m: map[K]Opts{}}
}

// Get returns k's options.
func (s *Sets[K]) Get(k K) Opts {
	s.mu.RLock()
	o, ok := s.m[k]
	s.mu.RUnlock()
	if ok {
		return o
	}
	set := metric.WithAttributeSet(s.build(k))
	o = Opts{Add: []metric.AddOption{set}, Record: []metric.RecordOption{set}}
	s.mu.Lock()
	s.m[k] = o
	s.mu.Unlock()
	return o
}

// RedisErrors counts the errors of Redis as wick.agent.redis.errors by the
// store operation that met them (thread.save, run.append …). A nil
// *RedisErrors counts nothing.
type RedisErrors struct {
	c    metric.Int64Counter
	sets *Sets[string]
}

// NewRedisErrors creates the counter on mp (nil: the global provider).
func NewRedisErrors(mp metric.MeterProvider) *RedisErrors {
	c, err := Meter(mp).Int64Counter("wick.agent.redis.errors",
		metric.WithDescription("Redis errors met by the agent's stores, by store operation"), metric.WithUnit("{error}"))
	if err != nil {
		// Only an invalid name fails, and the name is a constant.
		otel.Handle(err)
	}
	return &RedisErrors{c: c, sets: NewSets(func(op string) attribute.Set { return attribute.NewSet(attribute.String("op", op)) })}
}

// Observe counts *errp when it is an error of Redis or of the way to it;
// it is meant to be deferred by a store method with a named error result.
func (r *RedisErrors) Observe(ctx context.Context, op string, errp *error) {
	if r == nil || !IsRedisError(*errp) {
		return
	}
	r.c.Add(context.WithoutCancel(ctx), 1, r.sets.Get(op).Add...)
}

// IsRedisError reports whether err came from Redis or from the way to it:
// an error reply, a network error, a closed client or an exhausted pool.
// A missing key (redis.Nil), a lost optimistic transaction and the store's
// own refusals are answers, not errors; a request its caller cancelled or
// timed out (a wait for a busy thread's lock) is not Redis's fault, while
// Redis's own slowness is a network timeout.
func IsRedisError(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, redis.TxFailedErr) || errors.Is(err, context.Canceled) {
		return false
	}
	var re redis.Error
	var ne net.Error
	return errors.As(err, &re) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout)
}
