// Package httperr writes the gateway's error responses: an HTTP status mapped
// from a gRPC code, and the JSON body {"code", "status", "message"}.
package httperr

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Body is the JSON of an error, in a response body and in an SSE error frame.
type Body struct {
	// Code is the gRPC status code.
	Code int32 `json:"code"`
	// Status is the code's name, e.g. "NOT_FOUND".
	Status string `json:"status"`
	// Message says what went wrong.
	Message string `json:"message"`
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
func Write(w http.ResponseWriter, httpStatus int, c codes.Code, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	// An SSE response that fails before its first event answers as plain JSON.
	h.Del("Cache-Control")
	h.Del("X-Accel-Buffering")
	w.WriteHeader(httpStatus)
	_ = json.NewEncoder(w).Encode(NewBody(c, msg))
}

// WriteStatus answers with the HTTP status that maps from a gRPC error.
func WriteStatus(w http.ResponseWriter, err error) {
	st := status.Convert(err)
	Write(w, runtime.HTTPStatusFromCode(st.Code()), st.Code(), st.Message())
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
