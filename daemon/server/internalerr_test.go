package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/platform/rpcstatus"
)

// An error the daemon does not classify reaches the client as Internal
// without its text, which may name the host's paths.
func TestUnknownErrorTextStaysInTheDaemon(t *testing.T) {
	t.Parallel()
	d := start(t, config{})
	// A symlink loop: the file system's own error (ELOOP) is none of wickfs's
	// classes.
	if err := os.Symlink("b", filepath.Join(d.dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(d.dir, "b")); err != nil {
		t.Fatal(err)
	}
	stream, err := d.client.ReadFile(context.Background(), &daemonv1.ReadFileRequest{Path: "a"})
	if err == nil {
		_, err = stream.Recv()
	}
	st := status.Convert(err)
	if st.Code() != codes.Internal || !strings.HasPrefix(st.Message(), rpcstatus.InternalMessage) || strings.Contains(st.Message(), "symbolic links") {
		t.Fatalf("ReadFile of a symlink loop = %v %q, want Internal %q", st.Code(), st.Message(), rpcstatus.InternalMessage)
	}
}
