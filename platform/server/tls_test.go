package server

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/tlsconf"
	"github.com/wick-agent/wick/platform/tlsconf/tlstest"
)

// tlsServer is a server of this package on TLS with a plaintext health
// listener.
type tlsServer struct {
	addr, healthAddr string
	key              *identity.Key
	cancel           context.CancelFunc
	done             chan error
}

func startTLS(t *testing.T, src *tlsconf.Source) *tlsServer {
	t.Helper()
	key := identity.RandomKey()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New("test", slog.New(slog.NewTextHandler(io.Discard, nil)),
		WithIdentity(key), WithDrainDelay(0), WithTLS(src), WithHealthListener(hl))
	srv.GRPC().RegisterService(&probeDesc, struct{}{})
	ctx, cancel := context.WithCancel(context.Background())
	s := &tlsServer{addr: lis.Addr().String(), healthAddr: hl.Addr().String(), key: key, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	return s
}

func conn(t *testing.T, target string, opts ...dial.Option) *grpc.ClientConn {
	t.Helper()
	c, err := dial.New(target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMutualTLS runs the suite's two halves, this package's server and
// platform/dial, over mutual TLS with signed identities, and the plaintext
// health listener beside it.
func TestMutualTLS(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "wick test CA")
	s := startTLS(t, tlstest.Load(t, tlstest.Write(t, t.TempDir(), ca.Issue(t, "127.0.0.1"), ca)))
	client := tlstest.Load(t, tlstest.Write(t, t.TempDir(), ca.Issue(t, "agent"), ca))
	other := tlstest.NewCA(t, "another CA")
	foreign := tlstest.Load(t, tlstest.Write(t, t.TempDir(), other.Issue(t, "agent"), ca))
	noCert := dial.WithDialOption(grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS13})))

	alice := identity.WithUser(context.Background(), "alice")
	tests := []struct {
		name string
		conn *grpc.ClientConn
		want codes.Code
	}{
		{"mutual TLS and a signed user", conn(t, s.addr, dial.WithIdentity(s.key), dial.WithTLS(client)), codes.OK},
		{"plaintext", conn(t, s.addr, dial.WithIdentity(s.key)), codes.Unavailable},
		{"TLS without a client certificate", conn(t, s.addr, dial.WithIdentity(s.key), noCert), codes.Unavailable},
		{"a client certificate of another CA", conn(t, s.addr, dial.WithIdentity(s.key), dial.WithTLS(foreign)), codes.Unavailable},
		{"mutual TLS without the identity key", conn(t, s.addr, dial.WithTLS(client)), codes.Unauthenticated},
		{"the plaintext health listener", conn(t, s.healthAddr, dial.WithIdentity(s.key)), codes.Unimplemented},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(alice, 10*time.Second)
			defer cancel()
			var out wrapperspb.StringValue
			err := tc.conn.Invoke(ctx, "/wick.test.Probe/WhoAmI", &emptypb.Empty{}, &out)
			if status.Code(err) != tc.want {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if err == nil && out.Value != "alice" {
				t.Fatalf("user %q, want alice", out.Value)
			}
		})
	}
}

// TestHealthListener checks that a probe without a certificate reads the
// server's health in plaintext, and sees NOT_SERVING while it drains.
func TestHealthListener(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "wick test CA")
	s := startTLS(t, tlstest.Load(t, tlstest.Write(t, t.TempDir(), ca.Issue(t, "127.0.0.1"), ca)))
	probe := healthpb.NewHealthClient(conn(t, s.healthAddr))
	for _, svc := range []string{"", "wick.test.Probe"} {
		resp, err := probe.Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health %q = %v, %v; want SERVING", svc, resp.GetStatus(), err)
		}
	}
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	watch, err := probe.Watch(wctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := watch.Recv(); err != nil || first.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first watch status = %v, %v", first.GetStatus(), err)
	}
	s.cancel()
	// The listener stays until the service has stopped, so the watch
	// reads NOT_SERVING; ending it lets the listener stop.
	resp, err := watch.Recv()
	if err != nil || resp.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("watch during shutdown = %v, %v; want NOT_SERVING", resp.GetStatus(), err)
	}
	wcancel()
	if err := <-s.done; err != nil {
		t.Fatalf("Serve = %v", err)
	}
	s.done <- nil // for the cleanup
}
