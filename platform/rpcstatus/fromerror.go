package rpcstatus

import (
	"context"
	"errors"
	"log/slog"
	"net"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/platform/errcode"
	"github.com/wick-agent/wick/platform/logging"
)

// InternalMessage is what a client reads for an error nothing classified:
// its text may name hosts, paths or keys, so it goes to the log only.
const InternalMessage = "internal error"

// Option configures FromError.
type Option func(*fromOptions)

type fromOptions struct {
	netPrefix string
}

// WithNetError makes a network error (a net.Error nothing else classified)
// Unavailable, its message prefixed with prefix and ": ". It suits a service
// whose own network calls all go to one dependency, such as the agent
// service's store; its other dependencies answer with a status.
func WithNetError(prefix string) Option {
	return func(o *fromOptions) { o.netPrefix = prefix }
}

// FromError converts err to the status a client sees, once, at an RPC edge.
// In order:
//   - a status error is kept, its message cleaned (Plain);
//   - an error that carries a code (errcode.Of) gets that code;
//   - context.Canceled and context.DeadlineExceeded get theirs;
//   - a dependency's status wrapped with our context keeps its code;
//   - a network error is Unavailable when the caller asked (WithNetError);
//   - anything else is Internal with InternalMessage (and the trace id when
//     ctx has one), and its text is logged through slog.Default().
//
// The message of every case but the last is err's text (Message).
func FromError(ctx context.Context, err error, opts ...Option) error {
	if err == nil {
		return nil
	}
	if isStatus(err) {
		return Plain(err)
	}
	var o fromOptions
	for _, opt := range opts {
		opt(&o)
	}
	c, prefix, ok := classify(err, o)
	if !ok {
		return internal(ctx, err)
	}
	return status.Error(c, prefix+Message(err))
}

// Code is the code FromError gives err, without converting or logging it:
// for metrics, and for an edge that is not gRPC (an HTTP status).
func Code(err error, opts ...Option) codes.Code {
	if err == nil {
		return codes.OK
	}
	if isStatus(err) {
		return status.Code(err)
	}
	var o fromOptions
	for _, opt := range opts {
		opt(&o)
	}
	if c, _, ok := classify(err, o); ok {
		return c
	}
	return codes.Internal
}

func isStatus(err error) bool {
	_, ok := err.(interface{ GRPCStatus() *status.Status })
	return ok
}

// classify returns the code of an error that is not itself a status, and the
// prefix its message gets; ok is false when nothing classifies it.
func classify(err error, o fromOptions) (c codes.Code, prefix string, ok bool) {
	if c, ok := errcode.Of(err); ok {
		return c, "", true
	}
	switch {
	case errors.Is(err, context.Canceled):
		return codes.Canceled, "", true
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded, "", true
	}
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		if c := se.GRPCStatus().Code(); c != codes.OK && c != codes.Unknown {
			return c, "", true
		}
	}
	var ne net.Error
	if o.netPrefix != "" && errors.As(err, &ne) {
		return codes.Unavailable, o.netPrefix + ": ", true
	}
	return codes.Internal, "", false
}

// internal logs err with ctx's trace id and returns a status that does not
// carry its text.
func internal(ctx context.Context, err error) error {
	h := slog.Default().Handler()
	if _, ok := h.(logging.TraceHandler); !ok {
		h = logging.TraceHandler{Handler: h}
	}
	slog.New(h).ErrorContext(ctx, "internal error returned to a client", "error", err.Error())
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return status.Error(codes.Internal, InternalMessage+" (trace_id "+sc.TraceID().String()+")")
	}
	return status.Error(codes.Internal, InternalMessage)
}
