package upstream

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/netguard"
)

// Kind classifies a failure by what the gateway should do about it.
type Kind int

// Kinds of failure.
const (
	// KindUnknown is a failure nothing more is known about; it is retried like
	// a connection error, since it did not come with a refusal from the provider.
	KindUnknown Kind = iota
	// KindInvalid is a request the provider refused (400, 422): never retried.
	KindInvalid
	// KindAuth is a key the provider refused (401, 403): never retried.
	KindAuth
	// KindNotFound is an unknown model or path (404): never retried.
	KindNotFound
	// KindRateLimited is 429: retried after Retry-After.
	KindRateLimited
	// KindOverloaded is 529 or an overloaded_error event: retried.
	KindOverloaded
	// KindServer is 408, 409 or 5xx: retried.
	KindServer
	// KindConnection is a refused, reset or cut connection, or a stream that
	// ended without its terminal event: retried.
	KindConnection
	// KindTimeout is the call's own deadline passing: not retried.
	KindTimeout
	// KindCanceled is the caller going away: not retried.
	KindCanceled
	// KindMissingKey is an API key variable that is not set.
	KindMissingKey
	// KindForbidden is a model spec the gateway's policy does not allow.
	KindForbidden
	// KindBadSpec is a model spec or request the gateway cannot use.
	KindBadSpec
	// KindTooLarge is a reply over the gateway's size limit.
	KindTooLarge
	// KindBadResponse is a reply the gateway cannot parse.
	KindBadResponse
	// KindProtocol is a stream that parses but breaks the provider's own
	// protocol (a delta or stop for a content block that was never started):
	// never retried, since the same provider is likely to break it again and
	// the fault is not the connection's.
	KindProtocol
)

var kindNames = map[Kind]string{
	KindUnknown: "unknown", KindInvalid: "invalid_request", KindAuth: "authentication",
	KindNotFound: "not_found", KindRateLimited: "rate_limited", KindOverloaded: "overloaded",
	KindServer: "server_error", KindConnection: "connection", KindTimeout: "timeout",
	KindCanceled: "canceled", KindMissingKey: "missing_key", KindForbidden: "forbidden",
	KindBadSpec: "bad_spec", KindTooLarge: "too_large", KindBadResponse: "bad_response",
	KindProtocol: "protocol_error",
}

func (k Kind) String() string { return kindNames[k] }

// Code is the gRPC code a client sees for a failure of kind k. A kind the
// gateway retries, and one nothing is known about, is Unavailable: the
// provider did not refuse the request, so it may answer later.
func (k Kind) Code() codes.Code {
	switch k {
	case KindInvalid, KindBadSpec:
		return codes.InvalidArgument
	case KindAuth, KindMissingKey:
		return codes.FailedPrecondition
	case KindNotFound:
		return codes.NotFound
	case KindRateLimited, KindTooLarge:
		return codes.ResourceExhausted
	case KindTimeout:
		return codes.DeadlineExceeded
	case KindCanceled:
		return codes.Canceled
	case KindForbidden:
		return codes.PermissionDenied
	case KindProtocol:
		// The provider answered, but broke its own wire protocol. Internal
		// ("an invariant of the underlying system is broken") says so without
		// inviting the retry that Unavailable would; the message names the fault.
		return codes.Internal
	}
	return codes.Unavailable
}

// Error is a classified failure of one provider call.
type Error struct {
	Kind Kind
	// Status is the provider's HTTP status; 200 for an error event inside a
	// stream, 0 when no response arrived.
	Status int
	// RetryAfter is the provider's requested wait, from retry-after-ms or
	// Retry-After; 0 when it gave none.
	RetryAfter time.Duration
	// Message is safe to show to the caller: it never holds a key.
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s (HTTP %d): %s", e.Kind, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Code is the code of the failure's kind (errcode.Coder), so the RPC edge
// converts it like any other error.
func (e *Error) Code() codes.Code { return e.Kind.Code() }

// Retryable reports whether the same request may succeed when sent again.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case KindUnknown, KindRateLimited, KindOverloaded, KindServer, KindConnection:
		return true
	}
	return false
}

// Errorf returns an *Error of kind k.
func Errorf(k Kind, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Kind: k, Message: err.Error(), Err: errors.Unwrap(err)}
}

// AsError returns err as an *Error, classifying an unknown error as kind
// KindUnknown.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: KindUnknown, Message: err.Error(), Err: err}
}

// KindForStatus classifies an HTTP status: 408/409/429/5xx/529 say the
// provider could answer later, so they are retried; 400/401/403/404/422 say
// the same request fails again, so they never are.
func KindForStatus(status int) Kind {
	switch {
	case status == http.StatusTooManyRequests:
		return KindRateLimited
	case status == 529 || status == http.StatusServiceUnavailable:
		return KindOverloaded
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500:
		return KindServer
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return KindAuth
	case status == http.StatusNotFound:
		return KindNotFound
	case status == http.StatusRequestEntityTooLarge:
		return KindTooLarge
	default:
		return KindInvalid
	}
}

// KindForErrorType classifies the "type" (or "code") of an error object that
// a provider sent inside a 200 stream, so that it is handled like the HTTP
// error it stands for. ok is false for a type it does not know.
func KindForErrorType(typ string) (k Kind, ok bool) {
	switch strings.ToLower(typ) {
	case "overloaded_error", "overloaded", "server_overloaded", "service_unavailable":
		return KindOverloaded, true
	case "rate_limit_error", "rate_limit_exceeded", "requests", "tokens", "too_many_requests":
		return KindRateLimited, true
	case "api_error", "server_error", "internal_error", "internal_server_error", "timeout_error", "timeout":
		return KindServer, true
	case "invalid_request_error", "invalid_request", "context_length_exceeded", "invalid_prompt":
		return KindInvalid, true
	case "authentication_error", "permission_error", "invalid_api_key", "insufficient_quota", "permission_denied":
		return KindAuth, true
	case "not_found_error", "model_not_found", "not_found":
		return KindNotFound, true
	case "request_too_large":
		return KindTooLarge, true
	}
	return KindUnknown, false
}

// RetryAfter reads a provider's requested wait from h: retry-after-ms
// (milliseconds, OpenAI and Anthropic), else Retry-After in seconds or as an
// HTTP date. It returns 0 when neither is present or valid.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && !math.IsInf(ms, 0) && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e6 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// TransportError classifies an error that came with no answer from the
// provider: a destination the network guard refused is the gateway's policy
// (not retried, never a dropped connection); anything else is a connection
// error.
func TransportError(err error) *Error {
	if errors.Is(err, netguard.ErrDenied) {
		// The guard's own words name the destination only; the URL error
		// around them would repeat the request line.
		msg := "the provider's address is not allowed"
		var d *netguard.DeniedError
		if errors.As(err, &d) && d.Dest != "" {
			msg = "the provider's address " + d.Dest + " is not allowed"
		}
		return &Error{Kind: KindForbidden, Message: msg + ": loopback, private and link-local addresses are reached only where the operator configured them (models file, -request-base-url-allow-nets)", Err: err}
	}
	return &Error{Kind: KindConnection, Message: err.Error(), Err: err}
}
