// Package httperr writes the gateway's error responses: an HTTP status mapped
// from a gRPC code, and the JSON body {"code", "status", "message",
// "trace_id"}. A service's message reaches the client only when its code is
// one whose messages are written for users; any other error is answered with
// a plain message and its full text is logged under the request's trace id.
package httperr

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/platform/rpcstatus"
)

// Body is the JSON of an error, in a response body and in an SSE error frame.
type Body struct {
	// Code is the gRPC status code.
	Code int32 `json:"code"`
	// Status is the code's name, e.g. "NOT_FOUND".
	Status string `json:"status"`
	// Message says what went wrong: the service's own words for a code
	// written for users (Public), else a plain sentence such as "internal
	// error".
	Message string `json:"message"`
	// TraceID is the request's OpenTelemetry trace id, under which the
	// gateway logged the error's full text; absent when the request has no
	// trace. Quote it when reporting a problem.
	TraceID string `json:"trace_id,omitempty"`
}

// NewBody returns the body for a gRPC code and message.
func NewBody(c codes.Code, msg string) Body {
	return Body{Code: int32(c), Status: CodeName(c), Message: msg}
}

// CodeName returns a code's canonical upper-case name ("NOT_FOUND").
func CodeName(c codes.Code) string {
	var b strings.Builder
	prevLower := false
	for _, r := range c.String() {
		upper := r >= 'A' && r <= 'Z'
		if upper && prevLower {
			b.WriteByte('_')
		}
		b.WriteRune(r)
		prevLower = !upper
	}
	return strings.ToUpper(b.String())
}

// Write answers with httpStatus and the body for c and msg.
// The message is the gateway's own, written for the client.
func Write(w http.ResponseWriter, httpStatus int, c codes.Code, msg string) {
	WriteBody(w, httpStatus, NewBody(c, msg))
}

// WriteBody answers with httpStatus and b.
func WriteBody(w http.ResponseWriter, httpStatus int, b Body) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	// An SSE response that fails before its first event answers as plain JSON.
	h.Del("Cache-Control")
	h.Del("X-Accel-Buffering")
	w.WriteHeader(httpStatus)
	_ = json.NewEncoder(w).Encode(b)
}

// WriteStatus answers r with the HTTP status that maps from a gRPC error and
// the body ForClient gives it.
func WriteStatus(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	st := status.Convert(err)
	WriteBody(w, runtime.HTTPStatusFromCode(st.Code()), ForClient(r.Context(), log, st))
}

// Public reports whether the messages of a code are written for the client
// to read and act on. The others (Internal, Unknown, DataLoss, Unavailable,
// DeadlineExceeded) carry whatever a failing dependency said: stack-like
// error chains, dial errors naming internal addresses.
func Public(c codes.Code) bool {
	switch c {
	case codes.InvalidArgument, codes.NotFound, codes.PermissionDenied, codes.FailedPrecondition,
		codes.ResourceExhausted, codes.AlreadyExists, codes.Unauthenticated,
		codes.Aborted, codes.OutOfRange, codes.Unimplemented, codes.Canceled:
		return true
	}
	return false
}

// plainMessage is what a client reads instead of a message that is not
// Public; the code and trace id say the rest.
func plainMessage(c codes.Code) string {
	switch c {
	case codes.Unavailable:
		return "service unavailable; try again"
	case codes.DeadlineExceeded:
		return "the request timed out"
	}
	return "internal error"
}

// TraceID returns the trace id of ctx's span, or "" when it has none.
func TraceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}

// ForClient returns the body a client sees for st, with ctx's trace id. A
// message that is not Public is replaced by a plain one and logged in full,
// with ctx (whose trace id the logger records), so that the trace id in the
// body finds it. A Public message keeps its words but not the "rpc error:
// code = … desc = …" of a status error printed into it: the body has the code.
func ForClient(ctx context.Context, log *slog.Logger, st *status.Status) Body {
	b := NewBody(st.Code(), rpcstatus.Clean(st.Message()))
	b.TraceID = TraceID(ctx)
	if !Public(st.Code()) {
		log.ErrorContext(ctx, "request failed", "code", st.Code().String(), "error", st.Message())
		b.Message = plainMessage(st.Code())
	}
	return b
}

// CodeFromHTTP maps an HTTP status to the closest gRPC code, for errors the
// gateway raises itself.
func CodeFromHTTP(httpStatus int) codes.Code {
	switch httpStatus {
	case http.StatusBadRequest:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.NotFound
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return codes.Unimplemented
	case http.StatusConflict:
		return codes.Aborted
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		return codes.Unavailable
	case http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	}
	return codes.Unknown
}

// ToStatus carries b through grpc-gateway's stream error path, which passes a
// status: the trace id travels as a google.rpc.RequestInfo detail.
func ToStatus(b Body) *status.Status {
	st := status.New(codes.Code(b.Code), b.Message)
	if b.TraceID == "" {
		return st
	}
	if d, err := st.WithDetails(&errdetails.RequestInfo{RequestId: b.TraceID}); err == nil {
		return d
	}
	return st
}

// FromStatus is the body of a status made by ToStatus.
func FromStatus(st *statuspb.Status) Body {
	b := NewBody(codes.Code(st.GetCode()), st.GetMessage())
	for _, d := range st.GetDetails() {
		var ri errdetails.RequestInfo
		if d.UnmarshalTo(&ri) == nil {
			b.TraceID = ri.GetRequestId()
		}
	}
	return b
}
