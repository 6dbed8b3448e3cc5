package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
)

// probeDesc is a hand-written service so the test needs no generated code.
var probeDesc = grpc.ServiceDesc{
	ServiceName: "wick.test.Probe",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Panic", Handler: func(_ any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			in := new(emptypb.Empty)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(context.Context, any) (any, error) { panic("boom") }
			return ic(ctx, in, &grpc.UnaryServerInfo{FullMethod: "/wick.test.Probe/Panic"}, h)
		}},
		{MethodName: "WhoAmI", Handler: func(_ any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			in := new(emptypb.Empty)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, _ any) (any, error) {
				u, err := identity.Require(ctx)
				if err != nil {
					return nil, err
				}
				return wrapperspb.String(u), nil
			}
			return ic(ctx, in, &grpc.UnaryServerInfo{FullMethod: "/wick.test.Probe/WhoAmI"}, h)
		}},
	},
}

type started struct {
	srv    *Server
	conn   *grpc.ClientConn
	key    *identity.Key
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, opts ...Option) *started {
	t.Helper()
	key := identity.RandomKey()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := New("test", logger, append([]Option{WithIdentity(key), WithDrainDelay(0)}, opts...)...)
	srv.GRPC().RegisterService(&probeDesc, struct{}{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	conn, err := dial.New(lis.Addr().String(), dial.WithIdentity(key))
	if err != nil {
		t.Fatal(err)
	}
	s := &started{srv: srv, conn: conn, key: key, cancel: cancel, done: done}
	t.Cleanup(func() {
		conn.Close()
		cancel()
		<-done
	})
	return s
}

func TestHealthAndReflection(t *testing.T) {
	t.Parallel()
	s := start(t)
	ctx := context.Background()
	for _, svc := range []string{"", "wick.test.Probe"} {
		resp, err := healthpb.NewHealthClient(s.conn).Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatalf("health %q: %v", svc, err)
		}
		if resp.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health %q = %v, want SERVING", svc, resp.Status)
		}
	}
	stream, err := reflectionpb.NewServerReflectionClient(s.conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range resp.GetListServicesResponse().GetService() {
		got[s.Name] = true
	}
	for _, want := range []string{"wick.test.Probe", "grpc.health.v1.Health"} {
		if !got[want] {
			t.Errorf("reflection lists %v, missing %s", got, want)
		}
	}
}

func TestPanicBecomesInternal(t *testing.T) {
	t.Parallel()
	s := start(t)
	err := s.conn.Invoke(context.Background(), "/wick.test.Probe/Panic", &emptypb.Empty{}, &emptypb.Empty{})
	if status.Code(err) != codes.Internal {
		t.Fatalf("err = %v, want Internal", err)
	}
	// The server survived the panic.
	var out wrapperspb.StringValue
	err = s.conn.Invoke(identity.WithUser(context.Background(), "alice"), "/wick.test.Probe/WhoAmI", &emptypb.Empty{}, &out)
	if err != nil || out.Value != "alice" {
		t.Fatalf("after panic: %q, %v", out.Value, err)
	}
}

func TestIdentity(t *testing.T) {
	t.Parallel()
	s := start(t)
	forger, err := dial.New(s.conn.Target(), dial.WithIdentity(identity.RandomKey()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forger.Close() })
	anonymous, err := dial.New(s.conn.Target())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { anonymous.Close() })

	alice := identity.WithUser(context.Background(), "alice")
	tests := []struct {
		name string
		conn *grpc.ClientConn
		ctx  context.Context
		want codes.Code
	}{
		{"signed", s.conn, alice, codes.OK},
		{"no user", s.conn, context.Background(), codes.Unauthenticated},
		{"wrong key", forger, alice, codes.Unauthenticated},
		{"unsigned client", anonymous, alice, codes.Unauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out wrapperspb.StringValue
			err := tt.conn.Invoke(tt.ctx, "/wick.test.Probe/WhoAmI", &emptypb.Empty{}, &out)
			if status.Code(err) != tt.want {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestShutdownDrainsThenStops(t *testing.T) {
	t.Parallel()
	s := start(t, WithShutdownTimeout(5*time.Second))
	watch, err := healthpb.NewHealthClient(s.conn).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := watch.Recv()
	if err != nil || first.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first watch status = %v, %v", first.GetStatus(), err)
	}
	s.cancel()
	// A watcher sees NOT_SERVING before the server goes away.
	sawNotServing := false
	for {
		resp, err := watch.Recv()
		if err != nil {
			break
		}
		if resp.Status == healthpb.HealthCheckResponse_NOT_SERVING {
			sawNotServing = true
		}
	}
	if !sawNotServing {
		t.Error("health never reported NOT_SERVING during shutdown")
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("Serve returned %v", err)
		}
		s.done <- nil // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after shutdown")
	}
}

// TestMetricsOnlyForServedMethods: a call to a method nobody serves gets no
// metric series of its own (otelgrpc labels calls with the name sent).
func TestMetricsOnlyForServedMethods(t *testing.T) {
	t.Parallel()
	s := start(t)
	for method, want := range map[string]bool{
		"/grpc.health.v1.Health/Check":                 true,
		"/wick.test.Probe/WhoAmI":                      true,
		"/wick.test.Probe/Nope":                        false,
		"/made.up.Service/" + strings.Repeat("x", 100): false,
	} {
		if got := s.srv.registered(&stats.RPCTagInfo{FullMethodName: method}); got != want {
			t.Errorf("registered(%q) = %v, want %v", method, got, want)
		}
	}
}
