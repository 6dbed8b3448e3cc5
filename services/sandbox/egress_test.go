package sandbox

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
)

// TestEgressAllow: a spec's egress patterns are checked against the
// operator's bound when the sandbox is made; one outside it is refused by
// name, a malformed one is invalid, and the accepted ones are kept in
// canonical form for the egress proxy.
func TestEgressAllow(t *testing.T) {
	t.Parallel()
	bounded, cli := newLocal(t, Config{AllowLocal: true, EgressAllow: []string{"*.npmjs.org:443", "github.com:22"}})
	_, unbounded := newLocal(t, Config{AllowLocal: true})
	for _, tc := range []struct {
		name  string
		cli   sandboxv1.SandboxServiceClient
		allow []string
		code  codes.Code
		msg   string   // part of the error
		kept  []string // the settings' patterns when accepted
	}{
		{name: "within the bound", cli: cli, allow: []string{"Registry.npmjs.org:443", "github.com:22"},
			kept: []string{"registry.npmjs.org:443", "github.com:22"}},
		{name: "none asked", cli: cli},
		{name: "outside the bound", cli: cli, allow: []string{"registry.npmjs.org:443", "github.com:443"},
			code: codes.PermissionDenied, msg: "egress to github.com:443 is not allowed on this service (the operator allows: *.npmjs.org:443, github.com:22)"},
		{name: "no bound", cli: unbounded, allow: []string{"registry.npmjs.org:443"},
			code: codes.PermissionDenied, msg: "egress to registry.npmjs.org:443 is not allowed on this service (the operator allows: nothing)"},
		{name: "malformed", cli: cli, allow: []string{"registry.npmjs.org"},
			code: codes.InvalidArgument, msg: `egress_allow: egress pattern "registry.npmjs.org": want host:port`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
			defer cancel()
			agent := strings.ReplaceAll(tc.name, " ", "-")
			_, err := tc.cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: agent,
				Spec: &sandboxv1.SandboxSpec{Type: backend.Local, EgressAllow: tc.allow}})
			if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.msg) {
				t.Fatalf("EnsureSandbox: %v; want %s with %q", err, tc.code, tc.msg)
			}
			if tc.code != codes.OK {
				return
			}
			b, err := bounded.lookup("alice", agent)
			if err != nil {
				t.Fatal(err)
			}
			b.mu.Lock()
			kept := b.set.Egress
			b.mu.Unlock()
			if !slices.Equal(kept, tc.kept) {
				t.Fatalf("kept %q, want %q", kept, tc.kept)
			}
		})
	}
}

func TestEgressBound(t *testing.T) {
	t.Parallel()
	_, err := New(Config{StateDir: t.TempDir(), EgressAllow: []string{"github.com:22", "*.npmjs.org"}}, WithEngineDialer(noDocker))
	if err == nil || !strings.Contains(err.Error(), `-egress-allow`) || !strings.Contains(err.Error(), `"*.npmjs.org"`) {
		t.Fatalf("New with a malformed bound: %v; want an error naming the flag and the pattern", err)
	}
}
