package agent

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// TestBackendRoundTrip checks that every field of an agent's backend,
// the workspace size among them, survives the agent API both ways.
func TestBackendRoundTrip(t *testing.T) {
	t.Parallel()
	in := &loop.BackendCfg{Type: "docker", Image: "img", Workdir: "/w", Timeout: time.Minute, MaxOutputBytes: 1,
		Network: "none", MemoryBytes: 2, NanoCPUs: 3, WorkspaceBytes: 64 << 20}
	out := backendFromProto(backendToProto(in))
	if *out != *in {
		t.Fatalf("round trip = %+v, want %+v", out, in)
	}
	if p := backendToProto(in); !proto.Equal(p, backendToProto(out)) || p.GetWorkspaceBytes() != 64<<20 {
		t.Fatalf("proto = %v", p)
	}
}
