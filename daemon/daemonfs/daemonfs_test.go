package daemonfs_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"google.golang.org/grpc"
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

// stalledDaemon takes Exec calls and holds them without a header, as a
// daemon killed before it took the command would leave them.
type stalledDaemon struct {
	daemonv1.UnimplementedDaemonServer
	called chan struct{}
}

func (d *stalledDaemon) Exec(_ *daemonv1.ExecRequest, stream grpc.ServerStreamingServer[daemonv1.ExecResponse]) error {
	d.called <- struct{}{}
	<-stream.Context().Done()
	return stream.Context().Err()
}

// TestExecBrokenBeforeTaken checks that a stream that breaks before the
// daemon's header is Unavailable, so the caller may run the command
// elsewhere: only a command the daemon took is never run again.
func TestExecBrokenBeforeTaken(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	d := &stalledDaemon{called: make(chan struct{}, 1)}
	daemonv1.RegisterDaemonServer(srv, d)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := daemonfs.Dial(context.Background(), lis.Addr().String(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fs := daemonfs.New(daemonv1.NewDaemonClient(conn))
	go func() {
		<-d.called
		srv.Stop() // the daemon dies before it sent its header
	}()
	_, err = fs.Exec(context.Background(), "true")
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("Exec = %v (%s); want Unavailable: the command was never taken", err, status.Code(err))
	}
}
