package placement_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/placement"
)

// engine is a sandbox service on loopback that answers every call with
// its own address, so a test sees where a call landed. It can be stopped
// and started again on the same address, as a crashed service restarts.
type engine struct {
	sandboxv1.UnimplementedSandboxServiceServer
	t    *testing.T
	key  *identity.Key
	addr string
	mu   sync.Mutex
	srv  *grpc.Server
}

func (e *engine) who(ctx context.Context, agent string) string {
	user, _ := identity.User(ctx)
	return e.addr + "|" + user + "|" + agent
}

func (e *engine) GetSandbox(ctx context.Context, req *sandboxv1.GetSandboxRequest) (*sandboxv1.GetSandboxResponse, error) {
	return &sandboxv1.GetSandboxResponse{Sandbox: &sandboxv1.Sandbox{State: e.who(ctx, req.GetAgentId())}}, nil
}

func (e *engine) ListSandboxes(ctx context.Context, _ *sandboxv1.ListSandboxesRequest) (*sandboxv1.ListSandboxesResponse, error) {
	return &sandboxv1.ListSandboxesResponse{Sandboxes: []*sandboxv1.Sandbox{{State: e.addr}}}, nil
}

func (e *engine) ReadFile(req *sandboxv1.ReadFileRequest, stream sandboxv1.SandboxService_ReadFileServer) error {
	return stream.Send(&sandboxv1.ReadFileResponse{Data: []byte(e.who(stream.Context(), req.GetAgentId()))})
}

func (e *engine) WriteFile(stream sandboxv1.SandboxService_WriteFileServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
	}
	return stream.SendAndClose(&sandboxv1.WriteFileResponse{Path: e.who(stream.Context(), first.GetHeader().GetAgentId())})
}

func (e *engine) Terminal(stream sandboxv1.SandboxService_TerminalServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	return stream.Send(&sandboxv1.TerminalResponse{Msg: &sandboxv1.TerminalResponse_Output{Output: []byte(e.who(stream.Context(), first.GetStart().GetAgentId()))}})
}

// startEngine serves on addr ("127.0.0.1:0" picks a port).
func startEngine(t *testing.T, key *identity.Key, addr string) *engine {
	t.Helper()
	e := &engine{t: t, key: key, addr: addr}
	e.start()
	t.Cleanup(e.stop)
	return e
}

func (e *engine) start() {
	e.t.Helper()
	lis, err := net.Listen("tcp", e.addr)
	if err != nil {
		e.t.Fatal(err)
	}
	e.addr = lis.Addr().String()
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(e.key.UnaryServerInterceptor()), grpc.ChainStreamInterceptor(e.key.StreamServerInterceptor()))
	sandboxv1.RegisterSandboxServiceServer(srv, e)
	go func() { _ = srv.Serve(lis) }()
	e.mu.Lock()
	e.srv = srv
	e.mu.Unlock()
}

func (e *engine) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != nil {
		e.srv.Stop()
		e.srv = nil
	}
}

func dialer(key *identity.Key) placement.Dialer {
	return func(target string, opts ...dial.Option) (*grpc.ClientConn, error) {
		return dial.New(target, append([]dial.Option{dial.WithIdentity(key)}, opts...)...)
	}
}

func newClient(t *testing.T, target string, key *identity.Key, opts ...placement.Option) *placement.Client {
	t.Helper()
	c, err := placement.New(target, dialer(key), append([]placement.Option{placement.WithReconnectMax(200 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxFor(t *testing.T, user string) context.Context {
	ctx, cancel := context.WithTimeout(identity.WithUser(context.Background(), user), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// calls are the ways the agent reaches a sandbox: unary, server stream,
// client stream and bidi stream. Each returns the answering engine's
// who() string.
var calls = map[string]func(context.Context, sandboxv1.SandboxServiceClient, string) (string, error){
	"unary": func(ctx context.Context, c sandboxv1.SandboxServiceClient, agent string) (string, error) {
		resp, err := c.GetSandbox(ctx, &sandboxv1.GetSandboxRequest{AgentId: agent})
		return resp.GetSandbox().GetState(), err
	},
	"server stream": func(ctx context.Context, c sandboxv1.SandboxServiceClient, agent string) (string, error) {
		s, err := c.ReadFile(ctx, &sandboxv1.ReadFileRequest{AgentId: agent})
		if err != nil {
			return "", err
		}
		m, err := s.Recv()
		return string(m.GetData()), err
	},
	"client stream": func(ctx context.Context, c sandboxv1.SandboxServiceClient, agent string) (string, error) {
		s, err := c.WriteFile(ctx)
		if err != nil {
			return "", err
		}
		if err := s.Send(&sandboxv1.WriteFileRequest{Msg: &sandboxv1.WriteFileRequest_Header{Header: &sandboxv1.WriteFileHeader{AgentId: agent}}}); err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		_ = s.Send(&sandboxv1.WriteFileRequest{Msg: &sandboxv1.WriteFileRequest_Data{Data: []byte("x")}})
		resp, err := s.CloseAndRecv()
		return resp.GetPath(), err
	},
	"bidi stream": func(ctx context.Context, c sandboxv1.SandboxServiceClient, agent string) (string, error) {
		s, err := c.Terminal(ctx)
		if err != nil {
			return "", err
		}
		if err := s.Send(&sandboxv1.TerminalRequest{Msg: &sandboxv1.TerminalRequest_Start{Start: &sandboxv1.TerminalStart{AgentId: agent}}}); err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		m, err := s.Recv()
		_ = s.CloseSend()
		return string(m.GetOutput()), err
	},
}

// TestRoutes: every kind of call for (user, agent) reaches the endpoint
// Pick names, with the user's identity.
func TestRoutes(t *testing.T) {
	idKey := identity.RandomKey()
	engines := []*engine{startEngine(t, idKey, "127.0.0.1:0"), startEngine(t, idKey, "127.0.0.1:0"), startEngine(t, idKey, "127.0.0.1:0")}
	target := engines[0].addr + "," + engines[1].addr + "," + engines[2].addr
	c := newClient(t, target, idKey)
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			seen := map[string]bool{}
			for _, k := range keys(30) {
				got, err := call(ctxFor(t, k.user), c, k.agent)
				if err != nil {
					t.Fatalf("%v: %v", k, err)
				}
				want := c.Endpoint(k.user, k.agent) + "|" + k.user + "|" + k.agent
				if got != want {
					t.Fatalf("%v answered by %q, want %q", k, got, want)
				}
				seen[c.Endpoint(k.user, k.agent)] = true
			}
			if len(seen) != 3 {
				t.Fatalf("30 sandboxes landed on %d endpoints, want 3", len(seen))
			}
		})
	}
	t.Run("list", func(t *testing.T) {
		resp, err := c.ListSandboxes(ctxFor(t, "u"), &sandboxv1.ListSandboxesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range resp.GetSandboxes() {
			got = append(got, s.GetState())
		}
		if len(got) != 3 {
			t.Fatalf("ListSandboxes merged %v, want one from each of 3 endpoints", got)
		}
	})
}

// TestDeadEndpoint: a stopped sandbox service fails its own sandboxes'
// calls Unavailable with a message naming it — they are not moved to
// another engine — while the others keep working; once it is back on its
// address, its sandboxes are served again.
func TestDeadEndpoint(t *testing.T) {
	idKey := identity.RandomKey()
	engines := []*engine{startEngine(t, idKey, "127.0.0.1:0"), startEngine(t, idKey, "127.0.0.1:0"), startEngine(t, idKey, "127.0.0.1:0")}
	c := newClient(t, engines[0].addr+","+engines[1].addr+","+engines[2].addr, idKey)
	dead := engines[1]
	ks := keys(60)
	for _, k := range ks { // every connection is up before the kill
		if _, err := calls["unary"](ctxFor(t, k.user), c, k.agent); err != nil {
			t.Fatal(err)
		}
	}
	dead.stop()
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			for _, k := range ks {
				got, err := call(ctxFor(t, k.user), c, k.agent)
				if c.Endpoint(k.user, k.agent) != dead.addr {
					if err != nil {
						t.Fatalf("%v on a live endpoint: %v", k, err)
					}
					continue
				}
				if status.Code(err) != codes.Unavailable {
					t.Fatalf("%v on the stopped endpoint: got %q, %v; want Unavailable", k, got, err)
				}
				msg := status.Convert(err).Message()
				for _, want := range []string{"sandbox service " + dead.addr, "served again when the service returns"} {
					if !strings.Contains(msg, want) {
						t.Fatalf("error %q does not say %q", msg, want)
					}
				}
			}
		})
	}
	dead.start()
	ctx := ctxFor(t, "")
	for _, k := range ks {
		if c.Endpoint(k.user, k.agent) != dead.addr {
			continue
		}
		for {
			_, err := calls["unary"](ctxFor(t, k.user), c, k.agent)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%v not served after its endpoint returned: %v", k, err)
			}
			time.Sleep(50 * time.Millisecond) // reconnection backoff: no event to wait on
		}
	}
}

// fakeResolver answers LookupHost from a list a test changes.
type fakeResolver struct {
	mu   sync.Mutex
	ips  []string
	err  error
	host string
}

func (r *fakeResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.host = host
	return append([]string(nil), r.ips...), r.err
}

func (r *fakeResolver) set(ips []string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ips, r.err = ips, err
}

// sharedPortEngines starts engines on 127.0.0.1, .2 and .3 with one port,
// as pods behind a headless Service.
func sharedPortEngines(t *testing.T, key *identity.Key) (port string, engines []*engine) {
	for attempt := 0; attempt < 20; attempt++ {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ = net.SplitHostPort(lis.Addr().String())
		lis.Close()
		var ls []net.Listener
		for _, ip := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"} {
			l, err := net.Listen("tcp", net.JoinHostPort(ip, port))
			if err != nil {
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if len(ls) == 3 {
			for _, ip := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"} {
				engines = append(engines, startEngine(t, key, net.JoinHostPort(ip, port)))
			}
			return port, engines
		}
	}
	t.Skip("no port free on 127.0.0.1, .2 and .3")
	return "", nil
}

// TestDNS: a name's addresses are the endpoints; a refresh that finds a new
// one moves only the sandboxes it wins, and a failed or empty answer keeps
// the last set.
func TestDNS(t *testing.T) {
	idKey := identity.RandomKey()
	port, engines := sharedPortEngines(t, idKey)
	r := &fakeResolver{ips: []string{"127.0.0.2", "127.0.0.1"}}
	c := newClient(t, "dns:///sandbox.wick.svc:"+port, idKey, placement.WithResolver(r), placement.WithRefresh(0))
	if r.host != "sandbox.wick.svc" {
		t.Fatalf("resolved %q, want sandbox.wick.svc", r.host)
	}
	two := []string{engines[0].addr, engines[1].addr}
	if got := c.Endpoints(); !equal(got, two) {
		t.Fatalf("endpoints %v, want %v", got, two)
	}
	ks := keys(300)
	before := map[key]string{}
	for _, k := range ks {
		before[k] = c.Endpoint(k.user, k.agent)
	}
	got, err := calls["unary"](ctxFor(t, ks[0].user), c, ks[0].agent)
	if err != nil || !strings.HasPrefix(got, before[ks[0]]+"|") {
		t.Fatalf("call answered by %q, %v; want %s", got, err, before[ks[0]])
	}

	for _, tc := range []struct {
		name string
		ips  []string
		err  error
	}{
		{"error", nil, errors.New("SERVFAIL")},
		{"empty", nil, nil},
	} {
		r.set(tc.ips, tc.err)
		if err := c.Refresh(context.Background()); err == nil {
			t.Fatalf("%s: Refresh succeeded", tc.name)
		}
		if got := c.Endpoints(); !equal(got, two) {
			t.Fatalf("%s: endpoints %v, want the last set %v", tc.name, got, two)
		}
	}

	r.set([]string{"127.0.0.3", "127.0.0.1", "127.0.0.2"}, nil)
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	moved := 0
	for _, k := range ks {
		e := c.Endpoint(k.user, k.agent)
		if e != before[k] {
			if e != engines[2].addr {
				t.Fatalf("%v moved from %s to %s, not to the new endpoint", k, before[k], e)
			}
			moved++
		}
	}
	// The endpoints' ports are the kernel's choice here, so this bound is
	// loose (over 5 standard deviations); TestSpread holds ±20 % on fixed
	// addresses.
	if moved < 55 || moved > 145 {
		t.Errorf("a third endpoint took %d of 300 sandboxes, want about 100", moved)
	}
	for _, k := range ks {
		if c.Endpoint(k.user, k.agent) != engines[2].addr {
			continue
		}
		got, err := calls["unary"](ctxFor(t, k.user), c, k.agent)
		if err != nil || !strings.HasPrefix(got, engines[2].addr+"|") {
			t.Fatalf("call answered by %q, %v; want %s", got, err, engines[2].addr)
		}
		break
	}
}

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

func TestBadTarget(t *testing.T) {
	for _, tc := range []struct{ target, want string }{
		{"", "empty"},
		{"a:1,,b:2", "element 2 is empty"},
		{"dns://8.8.8.8/sandbox:7002", "no DNS server authority"},
		{"http://sandbox:7002", "want host:port"},
		{"sandbox", "want host:port"},
		{":7002", "want host:port"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			c, err := placement.New(tc.target, dialer(identity.RandomKey()), placement.WithResolver(&fakeResolver{}))
			if err == nil {
				c.Close()
				t.Fatalf("New(%q) succeeded", tc.target)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestNotResolvedYet: a name with no address yet is not fatal; calls fail
// Unavailable, saying so, and the first call after the name has an address
// goes through, without waiting for the next refresh.
func TestNotResolvedYet(t *testing.T) {
	idKey := identity.RandomKey()
	port, engines := sharedPortEngines(t, idKey)
	r := &fakeResolver{}
	c := newClient(t, "sandbox.wick.svc:"+port, idKey, placement.WithResolver(r), placement.WithRefresh(0))
	_, err := c.GetSandbox(ctxFor(t, "u"), &sandboxv1.GetSandboxRequest{AgentId: "a"})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "no sandbox service is known yet") {
		t.Fatalf("got %v, want Unavailable saying no sandbox service is known", err)
	}
	r.set([]string{"127.0.0.1"}, nil)
	got, err := calls["unary"](ctxFor(t, "u"), c, "a")
	if err != nil || !strings.HasPrefix(got, engines[0].addr+"|") {
		t.Fatalf("the call after the name resolved: %q, %v; want it answered by %s", got, err, engines[0].addr)
	}
}
