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

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// DefaultMaxBodyBytes bounds one export request. The OTLP/HTTP exporter's
// batches (512 spans by default) stay far below it.
const DefaultMaxBodyBytes = 4 << 20

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

type relay struct {
	up      Uploader
	maxBody int64
}

// Handler serves POST /v1/traces (OTLP/HTTP, binary protobuf) and forwards
// each request's spans through up.
func Handler(up Uploader, opts ...Option) http.Handler {
	r := &relay{up: up, maxBody: DefaultMaxBodyBytes}
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
