package sandbox

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/rpcstatus"
)

// An error the service does not classify reaches the client as Internal
// without its text, which may name the host's paths.
func TestUnknownErrorTextStaysInTheService(t *testing.T) {
	t.Parallel()
	svc, cli := newLocal(t, Config{AllowLocal: true})
	ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
	defer cancel()
	if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "dev", Spec: &sandboxv1.SandboxSpec{Type: backend.Local}}); err != nil {
		t.Fatal(err)
	}
	if _, err := writeFile(ctx, cli, "dev", "/workspace/marker", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// Find the workspace on the host by the file just written.
	var root string
	_ = filepath.WalkDir(filepath.Join(svc.cfg.StateDir, "local"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "marker" {
			root = filepath.Dir(p)
		}
		return nil
	})
	if root == "" {
		t.Fatal("the local workspace was not found")
	}
	// A symlink loop: the file system's own error (ELOOP) is none of wickfs's
	// classes.
	if err := os.Symlink("b", filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(root, "b")); err != nil {
		t.Fatal(err)
	}
	err := readFile(ctx, cli, "dev", "/workspace/a", io.Discard)
	st := status.Convert(err)
	if st.Code() != codes.Internal || !strings.HasPrefix(st.Message(), rpcstatus.InternalMessage) || strings.Contains(st.Message(), "symbolic links") {
		t.Fatalf("ReadFile of a symlink loop = %v %q, want Internal %q", st.Code(), st.Message(), rpcstatus.InternalMessage)
	}
}
