package gateway

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/gateway/internal/httperr"
	"github.com/wick-agent/wick/services/gateway/internal/sse"
)

// jsonMarshaler is the REST API's JSON: proto field names (tool_calls,
// thread_id), empty fields left out (a missing field reads as its zero
// value), and unknown request fields refused so that a typo is a 400 naming
// the field.
func jsonMarshaler() *runtime.JSONPb {
	return &runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}
}

func (g *Gateway) newAPIMux() (*runtime.ServeMux, error) {
	js := sse.EventJSON{JSONPb: jsonMarshaler()}
	mux := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, js),
		runtime.WithMarshalerOption(sse.ContentType, &sse.Marshaler{JSON: js}),
		runtime.WithErrorHandler(g.errorHandler),
		runtime.WithStreamErrorHandler(g.streamErrorHandler),
		runtime.WithRoutingErrorHandler(g.routingErrorHandler),
		runtime.WithIncomingHeaderMatcher(incomingHeader),
		runtime.WithOutgoingHeaderMatcher(outgoingHeader),
		runtime.WithMiddlewares(recordRoute),
		runtime.WithDisableHTTPMethodOverride(),
		// Called with each message of a stream as it arrives (and once
		// with none before the first), before it is encoded.
		runtime.WithForwardResponseOption(func(_ context.Context, w http.ResponseWriter, m proto.Message) error {
			if sw, ok := w.(*sse.Writer); ok && m != nil {
				sw.Received()
			}
			return nil
		}),
	)
	if err := agentv1.RegisterAgentServiceHandlerClient(context.Background(), mux, g.agent); err != nil {
		return nil, fmt.Errorf("gateway: register agent service: %w", err)
	}
	return mux, nil
}

// incomingHeader forwards no client header as gRPC metadata. Identity comes
// only from the gateway's signed assertion: a client header such as
// Grpc-Metadata-X-Wick-User must not reach the services, and the bearer
// token stays at the edge. Trace context travels through otel, not headers.
func incomingHeader(string) (string, bool) { return "", false }

// outgoingHeader passes no service metadata to HTTP clients.
func outgoingHeader(string) (string, bool) { return "", false }

// errorHandler answers a failed call with the HTTP status mapped from its
// gRPC code and the JSON body {"code", "status", "message", "trace_id"},
// whatever the Accept header asked for (an SSE stream that fails before its
// first event answers as plain JSON). A message not written for users is
// logged and replaced (httperr.ForClient).
func (g *Gateway) errorHandler(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if bodyTooLarge(r) {
		tooLarge(w, g.cfg.MaxBodyBytes)
		return
	}
	log := g.log.With("method", r.Method, "path", r.URL.Path)
	var he *runtime.HTTPStatusError
	if errors.As(err, &he) {
		httperr.WriteBody(w, he.HTTPStatus, httperr.ForClient(ctx, log, status.Convert(he.Err)))
		return
	}
	st := status.Convert(err)
	if st.Code() == codes.InvalidArgument && isDecodeError(st.Message()) {
		st = status.New(codes.InvalidArgument, "malformed request body: "+jsonFieldName.ReplaceAllStringFunc(st.Message(), protoFieldName))
	}
	httperr.WriteBody(w, runtime.HTTPStatusFromCode(st.Code()), httperr.ForClient(ctx, log, st))
}

// streamErrorHandler gives a stream's error the same treatment as
// errorHandler; the SSE marshaler turns the status it returns into the same
// body (httperr.ToStatus, httperr.FromStatus).
func (g *Gateway) streamErrorHandler(ctx context.Context, err error) *status.Status {
	return httperr.ToStatus(httperr.ForClient(ctx, g.log, status.Convert(err)))
}

// jsonFieldName finds the field protojson names in its errors, which it
// spells in lowerCamelCase while the API speaks proto names.
var jsonFieldName = regexp.MustCompile(`field [a-z][A-Za-z0-9]*`)

func protoFieldName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isDecodeError recognises protojson's messages about a request body.
func isDecodeError(msg string) bool {
	return strings.HasPrefix(msg, "proto:") || strings.Contains(msg, "unexpected EOF") || strings.Contains(msg, "syntax error")
}

func (g *Gateway) routingErrorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	msg := http.StatusText(httpStatus)
	switch httpStatus {
	case http.StatusNotFound:
		msg = "no API route for " + r.URL.Path
	case http.StatusMethodNotAllowed:
		msg = r.Method + " is not allowed on " + r.URL.Path
	}
	httperr.Write(w, httpStatus, httperr.CodeFromHTTP(httpStatus), msg)
}

// recordRoute notes the matched route for span names and metric labels.
func recordRoute(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		if p, ok := runtime.HTTPPattern(r.Context()); ok {
			// "/agents/{agent_id=*}/stream" → "/agents/{agent_id}/stream"
			setRoute(r.Context(), strings.ReplaceAll(p.String(), "=*}", "}"))
		}
		next(w, r, params)
	}
}

// isStreamRoute reports whether r is one of the server-streaming routes
// (a run's stream, a run's re-join, the agent events feed), which are served
// as SSE rather than as one JSON body.
func isStreamRoute(r *http.Request) bool {
	p := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodPost && len(p) == 3 && p[0] == "agents" && p[2] == "stream":
		return true
	case r.Method == http.MethodGet && len(p) == 2 && p[0] == "agents" && p[1] == "events":
		return true
	case r.Method == http.MethodGet && len(p) == 3 && p[0] == "runs" && p[2] == "events":
		return true
	}
	return false
}

// wantsSSE reports whether a stream's client takes SSE: it asked for
// text/event-stream, or for nothing in particular. A client that asks for
// JSON gets grpc-gateway's newline-delimited {"result": …} objects.
func wantsSSE(r *http.Request) bool {
	accepts := r.Header.Values("Accept")
	if len(accepts) == 0 {
		return true
	}
	for _, a := range accepts {
		for part := range strings.SplitSeq(a, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			if mt == sse.ContentType || mt == "*/*" || mt == "text/*" {
				return true
			}
		}
	}
	return false
}

// sseAware prepares stream requests for SSE. grpc-gateway picks a marshaler
// by an exact Accept match, so the header is normalised; the writer adds the
// SSE headers and heartbeats; Last-Event-ID becomes JoinRun's after_event_id.
func (g *Gateway) sseAware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isStreamRoute(r) {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodPost && r.Header.Get("Last-Event-ID") != "" {
			// A client library retrying the POST after a drop would start a
			// second run with the same message; the run is re-joined instead.
			httperr.Write(w, http.StatusBadRequest, codes.InvalidArgument,
				"Last-Event-ID on POST would start a second run; re-join the run with GET /runs/{run_id}/events")
			return
		}
		if !wantsSSE(r) {
			next.ServeHTTP(w, r)
			return
		}
		r = r.Clone(r.Context())
		r.Header.Set("Accept", sse.ContentType)
		if last := r.Header.Get("Last-Event-ID"); last != "" && r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/runs/") {
			q := r.URL.Query()
			if q.Get("after_event_id") == "" {
				q.Set("after_event_id", last)
				r.URL.RawQuery = q.Encode()
			}
		}
		sw := sse.NewWriter(w, g.cfg.Heartbeat, sse.WithForwarded(func(d time.Duration) { g.metrics.sseForward.Observe(d.Seconds()) }))
		defer sw.Close()
		g.metrics.streams.Inc()
		defer g.metrics.streams.Dec()
		next.ServeHTTP(sw, r)
	})
}

// normalizePath accepts API paths with a trailing slash (`/agents/`, the
// agent list's documented path), which the proto's patterns (`/agents`) do
// not match.
func normalizePath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if len(p) > 1 && strings.HasSuffix(p, "/") && isAPIPath(p) {
			r = r.Clone(r.Context())
			r.URL.Path = strings.TrimRight(p, "/")
			if r.URL.RawPath != "" {
				r.URL.RawPath = strings.TrimRight(r.URL.RawPath, "/")
			}
			if r.URL.Path == "" {
				r.URL.Path = "/"
			}
		}
		next.ServeHTTP(w, r)
	})
}

func isAPIPath(p string) bool {
	for _, prefix := range apiPrefixes {
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			return true
		}
	}
	return false
}

type bodyLimitKey struct{}

// limitedBody records that a request body went past its limit, so that the
// error it causes deep inside grpc-gateway is answered with 413.
type limitedBody struct {
	exceeded bool
}

// limitBody bounds request bodies to MaxBodyBytes.
func (g *Gateway) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > g.cfg.MaxBodyBytes {
			tooLarge(w, g.cfg.MaxBodyBytes)
			return
		}
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		lb := &limitedBody{}
		r = r.WithContext(context.WithValue(r.Context(), bodyLimitKey{}, lb))
		r.Body = &limitReader{rc: http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes), lb: lb}
		next.ServeHTTP(w, r)
	})
}

type limitReader struct {
	rc interface {
		Read([]byte) (int, error)
		Close() error
	}
	lb *limitedBody
}

func (l *limitReader) Read(p []byte) (int, error) {
	n, err := l.rc.Read(p)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		l.lb.exceeded = true
	}
	return n, err
}

func (l *limitReader) Close() error { return l.rc.Close() }

func bodyTooLarge(r *http.Request) bool {
	lb, ok := r.Context().Value(bodyLimitKey{}).(*limitedBody)
	return ok && lb.exceeded
}

func tooLarge(w http.ResponseWriter, limit int64) {
	httperr.Write(w, http.StatusRequestEntityTooLarge, codes.ResourceExhausted,
		fmt.Sprintf("request body is larger than the limit of %d bytes", limit))
}
