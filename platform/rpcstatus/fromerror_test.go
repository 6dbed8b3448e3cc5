package rpcstatus_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/platform/errcode"
	"github.com/wick-agent/wick/platform/rpcstatus"
)

var errThreadNotFound = errcode.New(codes.NotFound, "thread not found")

// kindError is a domain error type with a code of its own (errcode.Coder).
type kindError struct{ retry bool }

func (e kindError) Error() string { return "provider overloaded" }

func (e kindError) Code() codes.Code {
	if e.retry {
		return codes.Unavailable
	}
	return codes.InvalidArgument
}

// captureLog points slog.Default at a buffer for the test.
func captureLog(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &buf
}

func TestFromError(t *testing.T) {
	log := captureLog(t)
	traceID := trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	traced := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled,
	}))
	secret := errors.New("dial redis://:hunter2@10.0.0.7:6379: connection refused")
	netErr := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		err    error
		opts   []rpcstatus.Option
		code   codes.Code
		msg    string
		logged bool
	}{
		{name: "coded sentinel", err: errThreadNotFound, code: codes.NotFound, msg: "thread not found"},
		{name: "sentinel wrapped twice", err: fmt.Errorf("run r1: %w", fmt.Errorf("load thread t1: %w", errThreadNotFound)),
			code: codes.NotFound, msg: "run r1: load thread t1: thread not found"},
		{name: "the outer code wins", err: errcode.Wrap(codes.FailedPrecondition, fmt.Errorf("resume: %w", errThreadNotFound)),
			code: codes.FailedPrecondition, msg: "resume: thread not found"},
		{name: "left operand first", err: fmt.Errorf("%w: %w", errcode.New(codes.InvalidArgument, "invalid"), errThreadNotFound),
			code: codes.InvalidArgument, msg: "invalid: thread not found"},
		{name: "a domain type with a code", err: fmt.Errorf("call: %w", kindError{retry: true}), code: codes.Unavailable, msg: "call: provider overloaded"},
		{name: "dependency status keeps its code, with our context", err: fmt.Errorf("write /workspace/a: %w", status.Error(codes.InvalidArgument, "name too long")),
			code: codes.InvalidArgument, msg: "write /workspace/a: name too long"},
		{name: "status error kept, message cleaned", err: status.Error(codes.PermissionDenied, "read /x: rpc error: code = PermissionDenied desc = denied"),
			code: codes.PermissionDenied, msg: "read /x: denied"},
		{name: "canceled", err: fmt.Errorf("stream: %w", context.Canceled), code: codes.Canceled, msg: "stream: context canceled"},
		{name: "deadline", err: fmt.Errorf("exec: %w", context.DeadlineExceeded), code: codes.DeadlineExceeded, msg: "exec: context deadline exceeded"},
		{name: "network error with WithNetError", err: fmt.Errorf("load thread t1: %w", netErr), opts: []rpcstatus.Option{rpcstatus.WithNetError("the store is unreachable")},
			code: codes.Unavailable, msg: "the store is unreachable: load thread t1: dial tcp: connection refused"},
		{name: "network error without it", err: fmt.Errorf("load thread t1: %w", netErr), code: codes.Internal, msg: rpcstatus.InternalMessage, logged: true},
		{name: "a dependency's Unknown status is unknown", err: fmt.Errorf("call: %w", status.Error(codes.Unknown, "boom at 10.0.0.7")),
			code: codes.Internal, msg: rpcstatus.InternalMessage, logged: true},
		{name: "unknown", err: fmt.Errorf("save: %w", secret), code: codes.Internal, msg: rpcstatus.InternalMessage, logged: true},
		{name: "unknown, with a trace id", ctx: traced, err: fmt.Errorf("save: %w", secret), code: codes.Internal,
			msg: rpcstatus.InternalMessage + " (trace_id " + traceID.String() + ")", logged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log.Reset()
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			got := rpcstatus.FromError(ctx, tc.err, tc.opts...)
			st, ok := status.FromError(got)
			if !ok || st.Code() != tc.code || st.Message() != tc.msg {
				t.Fatalf("FromError = %v %q (a status: %v), want %v %q", st.Code(), st.Message(), ok, tc.code, tc.msg)
			}
			if c := rpcstatus.Code(tc.err, tc.opts...); c != tc.code {
				t.Errorf("Code = %v, want %v (as FromError)", c, tc.code)
			}
			if !tc.logged {
				if log.Len() != 0 {
					t.Errorf("logged %s for a classified error", log)
				}
				return
			}
			if !strings.Contains(log.String(), tc.err.Error()) {
				t.Errorf("log %q does not hold the error's text %q", log, tc.err)
			}
			if tc.ctx != nil && !strings.Contains(log.String(), `"trace_id":"`+traceID.String()+`"`) {
				t.Errorf("log %q does not hold the trace id", log)
			}
		})
	}
	if rpcstatus.FromError(context.Background(), nil) != nil || rpcstatus.Code(nil) != codes.OK {
		t.Error("nil is not an error")
	}
	// errors.Is still matches a coded sentinel through the wrapping.
	if !errors.Is(fmt.Errorf("a: %w", fmt.Errorf("b: %w", errThreadNotFound)), errThreadNotFound) {
		t.Error("errors.Is lost the sentinel")
	}
}
