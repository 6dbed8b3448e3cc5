package sandbox

import (
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const meterName = "github.com/wick-agent/wick/services/sandbox"

// metrics are the service's OpenTelemetry instruments. Their labels take
// few values (types, states, daemon methods, codes): never a user or an
// agent.
type metrics struct {
	meter     metric.Meter
	create    metric.Float64Histogram
	daemon    metric.Float64Histogram
	fallbacks metric.Int64Counter
	gauge     metric.Int64ObservableGauge

	// sets and daemonSets hold one attribute set per label combination,
	// built once.
	mu         sync.RWMutex
	sets       map[string]attrOpts
	daemonSets map[daemonKey]attrOpts
}

// attrOpts are one attribute set as options of Add, Record and Observe,
// kept so that a measurement passes an existing slice and allocates nothing.
type attrOpts struct {
	add     []metric.AddOption
	record  []metric.RecordOption
	observe []metric.ObserveOption
}

func newAttrOpts(kv ...attribute.KeyValue) attrOpts {
	set := metric.WithAttributeSet(attribute.NewSet(kv...))
	return attrOpts{add: []metric.AddOption{set}, record: []metric.RecordOption{set}, observe: []metric.ObserveOption{set}}
}

func newMetrics(mp metric.MeterProvider) *metrics {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(meterName)
	r := &metrics{meter: m, sets: map[string]attrOpts{}, daemonSets: map[daemonKey]attrOpts{}}
	var errs [4]error
	r.create, errs[0] = m.Float64Histogram("wick.sandbox.create.duration",
		metric.WithDescription("time to bring a sandbox up (create, start or claim from the warm pool), by type, result and whether a warm container was claimed"), metric.WithUnit("s"))
	r.daemon, errs[1] = m.Float64Histogram("wick.sandbox.daemon.call.duration",
		metric.WithDescription("calls to the wick-daemon inside sandboxes, by method and gRPC code"), metric.WithUnit("s"))
	r.fallbacks, errs[2] = m.Int64Counter("wick.sandbox.exec_fallbacks",
		metric.WithDescription("calls that took the Docker-exec path because the daemon did not answer, by method"), metric.WithUnit("{call}"))
	r.gauge, errs[3] = m.Int64ObservableGauge("wick.sandbox.sandboxes",
		metric.WithDescription("sandboxes this service knows, by type and state"), metric.WithUnit("{sandbox}"))
	for _, err := range errs {
		if err != nil {
			otel.Handle(err) // only an invalid name fails, and the names are constants
		}
	}
	return r
}

// set returns the attribute set of key, made by kv on first use; key
// must name the label values in full.
func (m *metrics) set(key string, kv ...attribute.KeyValue) attrOpts {
	m.mu.RLock()
	o, ok := m.sets[key]
	m.mu.RUnlock()
	if ok {
		return o
	}
	o = newAttrOpts(kv...)
	m.mu.Lock()
	m.sets[key] = o
	m.mu.Unlock()
	return o
}

// created records one bring-up of a sandbox.
func (m *metrics) created(ctx context.Context, typ string, err error, warm bool, d time.Duration) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	w := strconv.FormatBool(warm)
	m.create.Record(context.WithoutCancel(ctx), d.Seconds(), m.set("create "+typ+" "+result+" "+w,
		attribute.String("type", typ), attribute.String("result", result), attribute.String("warm", w)).record...)
}

// fellBack counts a call that took Docker exec.
func (m *metrics) fellBack(method string) {
	m.fallbacks.Add(context.Background(), 1, m.set("fallback "+method, attribute.String("method", method)).add...)
}

// daemonCall records one daemon call; fullMethod is gRPC's
// "/package.Service/Method", of which the method is the label.
func (m *metrics) daemonCall(ctx context.Context, fullMethod string, code codes.Code, d time.Duration) {
	method := fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
	c := code.String()
	m.daemon.Record(ctx, d.Seconds(), m.setDaemon(method, c).record...)
}

// setDaemon is daemonCall's set; its key is built only on a miss, so a
// call allocates nothing once its method and code were seen.
func (m *metrics) setDaemon(method, code string) attrOpts {
	k := daemonKey{method, code}
	m.mu.RLock()
	o, ok := m.daemonSets[k]
	m.mu.RUnlock()
	if ok {
		return o
	}
	o = newAttrOpts(attribute.String("method", method), attribute.String("code", code))
	m.mu.Lock()
	m.daemonSets[k] = o
	m.mu.Unlock()
	return o
}

type daemonKey struct{ method, code string }

// dialOptions time every call on a daemon connection.
func (m *metrics) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			start := time.Now()
			err := invoker(ctx, method, req, reply, cc, opts...)
			m.daemonCall(ctx, method, status.Code(err), time.Since(start))
			return err
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			start := time.Now()
			cs, err := streamer(ctx, desc, cc, method, opts...)
			if err != nil {
				m.daemonCall(ctx, method, status.Code(err), time.Since(start))
				return nil, err
			}
			return &timedStream{ClientStream: cs, m: m, ctx: ctx, method: method, start: start}, nil
		}),
	}
}

// timedStream records its call when the stream ends: the first error of
// RecvMsg, io.EOF being a stream that ended well.
type timedStream struct {
	grpc.ClientStream
	m      *metrics
	ctx    context.Context
	method string
	start  time.Time
	once   sync.Once
}

func (s *timedStream) RecvMsg(msg any) error {
	err := s.ClientStream.RecvMsg(msg)
	if err != nil {
		s.once.Do(func() {
			code := codes.OK
			if err != io.EOF {
				code = status.Code(err)
			}
			s.m.daemonCall(s.ctx, s.method, code, time.Since(s.start))
		})
	}
	return err
}

// observeSandboxes reports the sandboxes of the table by type and state.
func (s *Service) observeSandboxes(_ context.Context, o metric.Observer) error {
	type key struct{ typ, state string }
	counts := map[key]int64{}
	s.mu.Lock()
	for _, b := range s.boxes {
		b.mu.Lock()
		k := key{b.set.Type, b.state}
		b.mu.Unlock()
		if k.typ == "" {
			k.typ = s.cfg.DefaultType
		}
		counts[k]++
	}
	s.mu.Unlock()
	for k, n := range counts {
		o.ObserveInt64(s.meters.gauge, n, s.meters.set("sandboxes "+k.typ+" "+k.state,
			attribute.String("type", k.typ), attribute.String("state", k.state)).observe...)
	}
	return nil
}
