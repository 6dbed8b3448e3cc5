package server_test

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/daemon/daemonfs"
	"github.com/wick-agent/wick/daemon/server"
	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/wickfs"
)

func TestTokenAuthTCP(t *testing.T) {
	t.Parallel()
	local, err := wickfs.NewLocalFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() })
	unary, stream := server.TokenAuth("s3cret-token")
	g := grpc.NewServer(grpc.UnaryInterceptor(unary), grpc.StreamInterceptor(stream))
	server.New(local).Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	for _, tc := range []struct {
		name, token string
		code        codes.Code
	}{
		{"right token", "s3cret-token", codes.OK},
		{"no token", "", codes.Unauthenticated},
		{"wrong token", "s3cret-tokem", codes.Unauthenticated},
		{"prefix of token", "s3cret", codes.Unauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conn, err := daemonfs.Dial(context.Background(), lis.Addr().String(), tc.token)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			c := daemonv1.NewDaemonClient(conn)
			_, err = c.Health(context.Background(), &daemonv1.HealthRequest{})
			if status.Code(err) != tc.code {
				t.Fatalf("Health = %v; want %v", err, tc.code)
			}
			// Streams are guarded too.
			s, err := c.Exec(context.Background(), &daemonv1.ExecRequest{Command: "echo hi"})
			if err == nil {
				_, err = s.Recv()
			}
			if status.Code(err) != tc.code {
				t.Fatalf("Exec = %v; want %v", err, tc.code)
			}
		})
	}
}
