package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/services/agent"
)

// unknownLs is a sandbox client whose Ls fails the way a dependency that
// returned a plain error does: with an Unknown status carrying its text.
type unknownLs struct{ sandboxv1.SandboxServiceClient }

const unknownText = "readdirent /var/lib/wick/volumes/alice-default: input/output error"

func (unknownLs) Ls(context.Context, *sandboxv1.LsRequest, ...grpc.CallOption) (*sandboxv1.LsResponse, error) {
	return nil, status.Error(codes.Unknown, unknownText)
}

// An error the agent service cannot classify reaches the client as Internal
// without its text, which may name hosts and paths.
func TestUnknownErrorTextStaysInTheAgent(t *testing.T) {
	t.Parallel()
	s := newSuite(t, calcThenAnswer)
	s.sbClient = unknownLs{sandboxv1.NewSandboxServiceClient(s.conn(s.sbAddr))}
	a := s.agent(agent.MemoryStores(), nil)
	ctx := withTimeout(t, as("alice"), 30*time.Second)
	_, err := a.client.ListFiles(ctx, &agentv1.ListFilesRequest{AgentId: "default", Path: "/workspace"})
	st := status.Convert(err)
	// The message may carry the request's trace id, which points the
	// operator at the logged detail; it never carries the detail.
	if st.Code() != codes.Internal || !strings.HasPrefix(st.Message(), rpcstatus.InternalMessage) || strings.Contains(st.Message(), "volumes") {
		t.Fatalf("ListFiles = %v %q, want Internal %q", st.Code(), st.Message(), rpcstatus.InternalMessage)
	}
}
