// Package tracerelay takes OTLP/HTTP trace exports from inside a sandbox
// and forwards them to the sandbox service's own collector. wick-daemon runs
// in a container without a network: it exports to a Unix socket in its run
// directory, served by this handler on the host side.
package tracerelay

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"golang.org/x/time/rate"
	"google.golang.org/protobuf/proto"
)

// DefaultMaxBodyBytes bounds one export request. The OTLP/HTTP exporter's
// batches (512 spans by default) stay far below it.
const DefaultMaxBodyBytes = 4 << 20

// DefaultSpansPerSecond and DefaultSpanBurst bound what one sandbox sends
// to the collector: a daemon traces a few spans per call, while a process in
// the sandbox could otherwise flood the operator's tracing backend.
const (
	DefaultSpansPerSecond = 200
	DefaultSpanBurst      = 2000
)

// ServiceName is the service.name every relayed span carries, whatever the
// sender claims: what runs in a sandbox cannot pass its spans off as
// another service's.
const ServiceName = "wick-daemon"

// Uploader sends spans to the collector (otlptrace.Client's method).
type Uploader interface {
	UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error
}

// Option configures the handler.
type Option func(*relay)

// WithMaxBodyBytes bounds one export request (default DefaultMaxBodyBytes).
func WithMaxBodyBytes(n int64) Option { return func(r *relay) { r.maxBody = n } }

// WithSpanRate bounds the spans relayed per second, with bursts of up to
// burst spans (default DefaultSpansPerSecond, DefaultSpanBurst). A request
// beyond it is answered 429 with Retry-After, which OTLP exporters honour; a
// request of more than burst spans could never pass and is answered 413.
func WithSpanRate(perSecond float64, burst int) Option {
	return func(r *relay) { r.limit = rate.NewLimiter(rate.Limit(perSecond), burst) }
}

type relay struct {
	up      Uploader
	maxBody int64
	limit   *rate.Limiter
}

// Handler serves POST /v1/traces (OTLP/HTTP, binary protobuf) and forwards
// each request's spans through up.
func Handler(up Uploader, opts ...Option) http.Handler {
	r := &relay{up: up, maxBody: DefaultMaxBodyBytes, limit: rate.NewLimiter(DefaultSpansPerSecond, DefaultSpanBurst)}
	for _, o := range opts {
		o(r)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.traces)
	return mux
}

func (r *relay) traces(w http.ResponseWriter, req *http.Request) {
	if req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "only application/x-protobuf is relayed", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, r.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "export request too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "read the export request", http.StatusBadRequest)
		return
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &msg); err != nil {
		http.Error(w, "not an OTLP trace export request", http.StatusBadRequest)
		return
	}
	if !r.admit(w, spanCount(&msg)) {
		return
	}
	for _, rs := range msg.GetResourceSpans() {
		setServiceName(rs)
	}
	if len(msg.GetResourceSpans()) > 0 {
		if err := r.up.UploadTraces(req.Context(), msg.GetResourceSpans()); err != nil {
			// The collector's address and errors are the service's: the
			// sender learns only that it may retry.
			http.Error(w, "the collector did not take the spans", http.StatusServiceUnavailable)
			return
		}
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// admit takes n spans from the rate limit, or answers why not.
func (r *relay) admit(w http.ResponseWriter, n int) bool {
	if n > r.limit.Burst() {
		http.Error(w, "more spans in one request than the relay takes at once ("+strconv.Itoa(r.limit.Burst())+")", http.StatusRequestEntityTooLarge)
		return false
	}
	res := r.limit.ReserveN(time.Now(), n)
	if d := res.Delay(); d > 0 {
		res.Cancel()
		w.Header().Set("Retry-After", strconv.Itoa(int(d/time.Second)+1))
		http.Error(w, "too many spans: retry later", http.StatusTooManyRequests)
		return false
	}
	return true
}

func spanCount(msg *coltracepb.ExportTraceServiceRequest) int {
	n := 0
	for _, rs := range msg.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	return n
}

// setServiceName replaces the resource's service.name with ServiceName.
func setServiceName(rs *tracepb.ResourceSpans) {
	if rs.Resource == nil {
		rs.Resource = &resourcepb.Resource{}
	}
	attrs := rs.Resource.Attributes[:0]
	for _, kv := range rs.Resource.Attributes {
		if kv.GetKey() != "service.name" {
			attrs = append(attrs, kv)
		}
	}
	rs.Resource.Attributes = append(attrs, &commonpb.KeyValue{
		Key:   "service.name",
		Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: ServiceName}},
	})
}
