package agent

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// TestBackendRoundTrip checks that every field of an agent's backend,
// the workspace size and the model endpoint among them, survives the agent
// API both ways; an unset model endpoint stays unset (it has a default).
func TestBackendRoundTrip(t *testing.T) {
	t.Parallel()
	off := false
	for _, me := range []*bool{nil, &off} {
		in := &loop.BackendCfg{Type: "docker", Image: "img", Workdir: "/w", Timeout: time.Minute, MaxOutputBytes: 1,
			Network: "none", MemoryBytes: 2, NanoCPUs: 3, WorkspaceBytes: 64 << 20, ModelEndpoint: me}
		out := backendFromProto(backendToProto(in))
		if (out.ModelEndpoint == nil) != (me == nil) || me != nil && (out.ModelEndpoint == me || *out.ModelEndpoint != *me) {
			t.Fatalf("model endpoint %v, want a copy of %v", out.ModelEndpoint, me)
		}
		a, b := *out, *in
		a.ModelEndpoint, b.ModelEndpoint = nil, nil
		if a != b {
			t.Fatalf("round trip = %+v, want %+v", out, in)
		}
		if p := backendToProto(in); !proto.Equal(p, backendToProto(out)) || p.GetWorkspaceBytes() != 64<<20 || p.ModelEndpoint == nil != (me == nil) {
			t.Fatalf("proto = %v", p)
		}
	}
}
