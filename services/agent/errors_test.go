package agent

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/services/agent/internal/threads"
)

func TestRPCErrThreadHistory(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want codes.Code
	}{
		{fmt.Errorf("load thread th: %w: bad", threads.ErrCorrupt), codes.DataLoss},
		{fmt.Errorf("save thread th: %w: bad", threads.ErrInvalidHistory), codes.Internal},
	}
	for _, tt := range tests {
		if got := status.Code(rpcErr(context.Background(), tt.err)); got != tt.want {
			t.Errorf("rpcErr(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// A sandbox status the agent wraps with its context keeps its code, and its
// message has the words of both layers without Go's "rpc error: …" text.
func TestRPCErrUnwrapsDependencyStatus(t *testing.T) {
	t.Parallel()
	sandbox := status.Error(codes.InvalidArgument, `path "/workspace/aaa" has a name of 300 bytes`)
	for _, tc := range []struct {
		name string
		err  error
		code codes.Code
		msg  string
	}{
		{"wrapped", fmt.Errorf("write /workspace/aaa: %w", sandbox), codes.InvalidArgument,
			`write /workspace/aaa: path "/workspace/aaa" has a name of 300 bytes`},
		{"a status carrying one in its text", status.Error(codes.NotFound, "read /x: rpc error: code = NotFound desc = no such file"),
			codes.NotFound, "read /x: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := status.Convert(rpcErr(context.Background(), tc.err))
			if st.Code() != tc.code || st.Message() != tc.msg {
				t.Fatalf("rpcErr = %v %q, want %v %q", st.Code(), st.Message(), tc.code, tc.msg)
			}
		})
	}
}
