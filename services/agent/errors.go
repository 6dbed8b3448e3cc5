package agent

import (
	"context"
	"errors"
	"net"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/services/agent/internal/ids"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/quota"
	"github.com/wick-agent/wick/services/agent/internal/registry"
	"github.com/wick-agent/wick/services/agent/internal/runexec"
	"github.com/wick-agent/wick/services/agent/internal/runs"
	"github.com/wick-agent/wick/services/agent/internal/sandboxfs"
	"github.com/wick-agent/wick/services/agent/internal/secrets"
	"github.com/wick-agent/wick/services/agent/internal/threads"
	"github.com/wick-agent/wick/services/agent/internal/tools"
)

// rpcErr converts an internal error to a gRPC status, once, at the edge.
func rpcErr(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
		return rpcstatus.Plain(err)
	}
	// A dependency's status wrapped with our context prints as "ctx: rpc
	// error: code = … desc = …"; the client reads the words, the code
	// travels in the status.
	msg := rpcstatus.Message(err)
	switch {
	case errors.Is(err, quota.ErrExceeded):
		return status.Error(codes.ResourceExhausted, msg)
	case errors.Is(err, registry.ErrNotFound), errors.Is(err, threads.ErrNotFound), errors.Is(err, runs.ErrNotFound),
		errors.Is(err, runexec.ErrNotFound):
		return status.Error(codes.NotFound, msg)
	case errors.Is(err, registry.ErrInvalid), errors.Is(err, tools.ErrInvalidToolDef), errors.Is(err, runs.ErrBadEventID),
		errors.Is(err, loop.ErrInvalidInput), errors.Is(err, runexec.ErrInvalid):
		return status.Error(codes.InvalidArgument, msg)
	case errors.Is(err, threads.ErrBusy), errors.Is(err, runexec.ErrNotWaiting), errors.Is(err, runexec.ErrNotRunning),
		errors.Is(err, runexec.ErrNotStopped), errors.Is(err, secrets.ErrNotFound):
		return status.Error(codes.FailedPrecondition, msg)
	case errors.Is(err, threads.ErrConflict), errors.Is(err, threads.ErrLeaseLost):
		return status.Error(codes.Aborted, msg)
	case errors.Is(err, registry.ErrExists):
		return status.Error(codes.AlreadyExists, msg)
	case errors.Is(err, registry.ErrTemplate), errors.Is(err, registry.ErrSecretDenied):
		return status.Error(codes.PermissionDenied, msg)
	case errors.Is(err, sandboxfs.ErrTooLarge):
		return status.Error(codes.ResourceExhausted, msg)
	case errors.Is(err, threads.ErrCorrupt):
		return status.Error(codes.DataLoss, msg)
	case errors.Is(err, threads.ErrInvalidHistory):
		// The loop produced a history it must never produce: our bug, not
		// the client's, hence Internal rather than InvalidArgument.
		return status.Error(codes.Internal, msg)
	case errors.Is(err, runexec.ErrShutdown), errors.Is(err, runexec.ErrStoreUnavailable):
		return status.Error(codes.Unavailable, msg)
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, msg)
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, msg)
	}
	// A dependency's status keeps its code, with our context in the message.
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		return status.Error(st.Code(), msg)
	}
	var ne net.Error
	if errors.As(err, &ne) {
		// The service's own network calls are to its store (Redis); its
		// other dependencies answer with a status, handled above.
		return status.Error(codes.Unavailable, "the store is unreachable: "+msg)
	}
	return status.Error(codes.Internal, msg)
}

func invalid(field, why string) error {
	return status.Errorf(codes.InvalidArgument, "%s: %s", field, why)
}

// checkID validates a client-chosen id, naming the field.
func checkID(field, v string) error {
	if err := ids.Check(field, v); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return nil
}
