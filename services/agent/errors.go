package agent

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/services/agent/internal/ids"
)

// rpcErr converts an internal error to a gRPC status, once, at the edge. The
// service's own network calls are to its store (Redis); its other
// dependencies answer with a status, so a network error says the store is
// unreachable.
func rpcErr(ctx context.Context, err error) error {
	return rpcstatus.FromError(ctx, err, rpcstatus.WithNetError("the store is unreachable"))
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
