package daemonfs_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/daemon/daemonfs"
	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/wickfs"
)

func TestDialTargets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"/run/wick/daemon.sock", "unix:///run/wick/daemon.sock"},
		{"unix:///tmp/d.sock", "unix:///tmp/d.sock"},
		{"10.0.0.5:9090", "passthrough:///10.0.0.5:9090"},
		{"localhost:9090", "passthrough:///localhost:9090"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			conn, err := daemonfs.Dial(context.Background(), tc.in, "tok")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			if conn.Target() != tc.want {
				t.Errorf("target = %q; want %q", conn.Target(), tc.want)
			}
		})
	}
}

// TestRefusesBeforeCalling checks inputs protobuf cannot carry are refused
// on the client with LocalFS's error, without a call.
func TestRefusesBeforeCalling(t *testing.T) {
	t.Parallel()
	conn, err := daemonfs.Dial(context.Background(), "/nonexistent/daemon.sock", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fs := daemonfs.New(daemonv1.NewDaemonClient(conn))
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"read":  func() error { _, err := fs.ReadFile(ctx, "\xff"); return err },
		"grep":  func() error { _, err := fs.Grep(ctx, "\xff", ""); return err },
		"edit":  func() error { _, err := fs.EditFile(ctx, "f", "\xfe", "x"); return err },
		"exec":  func() error { _, err := fs.Exec(ctx, "echo \xff"); return err },
		"lines": func() error { _, err := fs.ReadLines(ctx, "f", -1, 0); return err },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := call()
			if !errors.Is(err, wickfs.ErrInvalidArgument) || status.Code(err) == codes.Unavailable {
				t.Fatalf("err = %v; want ErrInvalidArgument without a call", err)
			}
		})
	}
}
