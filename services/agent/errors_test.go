package agent

import (
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
		if got := status.Code(rpcErr(tt.err)); got != tt.want {
			t.Errorf("rpcErr(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
