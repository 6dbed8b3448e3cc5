package dial_test

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/wick-agent/wick/platform/dial"
)

// replica is a gRPC server on loopback that counts the calls it answers.
type replica struct {
	addr  string
	calls atomic.Int64
	srv   *grpc.Server
}

func startReplica(t *testing.T) *replica {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{addr: lis.Addr().String()}
	r.srv = grpc.NewServer(grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		r.calls.Add(1)
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(r.srv, health.NewServer())
	go func() { _ = r.srv.Serve(lis) }()
	t.Cleanup(r.srv.Stop)
	return r
}

func check(ctx context.Context, conn *grpc.ClientConn) error {
	_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// TestReplicas dials two replicas through each form of target that names
// several: calls reach both, and once one stops they all reach the other.
func TestReplicas(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target func(a, b *replica) string
	}{
		{"list", func(a, b *replica) string { return a.addr + "," + b.addr }},
		{"list with spaces", func(a, b *replica) string { return a.addr + " , " + b.addr }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := startReplica(t), startReplica(t)
			conn, err := dial.New(tc.target(a, b))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// Round robin uses a replica once its connection is ready, so
			// both see calls soon, not necessarily from the first call.
			for a.calls.Load() == 0 || b.calls.Load() == 0 {
				if err := check(ctx, conn); err != nil {
					t.Fatalf("call: %v (calls: %d, %d)", err, a.calls.Load(), b.calls.Load())
				}
			}
			a.srv.Stop()
			stopped := a.calls.Load()
			// A call already on the closing connection may fail; after the
			// balancer has seen it close, every call reaches b.
			for ok := 0; ok < 20; {
				if ctx.Err() != nil {
					t.Fatalf("calls do not settle on the live replica: %d in a row", ok)
				}
				if err := check(ctx, conn); err != nil {
					ok = 0
					continue
				}
				ok++
			}
			if got := a.calls.Load(); got != stopped {
				t.Errorf("the stopped replica answered %d more calls", got-stopped)
			}
		})
	}
}

// TestDNSTarget checks that a dns:/// target, a headless Service's form, is
// passed to gRPC as it is.
func TestDNSTarget(t *testing.T) {
	r := startReplica(t)
	conn, err := dial.New("dns:///" + r.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := check(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if r.calls.Load() != 1 {
		t.Fatalf("calls = %d, want 1", r.calls.Load())
	}
}

func TestBadList(t *testing.T) {
	for _, tc := range []struct{ target, want string }{
		{"a:1,,b:2", "element 2 is empty"},
		{"a:1,", "element 2 is empty"},
		{"a:1,b", "element 2: address b: missing port"},
		{"a:1,:2", `element 2 (":2") has no host`},
		{"a:1,b:http", `port "http" is not a number`},
		{"a:1,b:70000", `port "70000" is not a number`},
		{"a:1:2,b:3", "element 1"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			conn, err := dial.New(tc.target)
			if err == nil {
				conn.Close()
				t.Fatalf("dial.New(%q) succeeded", tc.target)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}
