package gateway_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/server"
	"github.com/wick-agent/wick/platform/tlsconf/tlstest"
	"github.com/wick-agent/wick/services/gateway"
)

// agentCall is what the agent service saw of one call.
type agentCall struct {
	md       metadata.MD
	user     string
	deadline time.Time
}

// recorder is an interceptor pair on the fake agent service: it records
// each call's metadata, user and deadline, and answers with a header and a
// trailer of its own, one of them an x-wick-* key the edge must not pass on.
type recorder struct {
	mu    sync.Mutex
	calls map[string]agentCall // method → its last call
}

var (
	agentHeader  = metadata.Pairs("x-agent-header", "h1", "x-wick-internal", "secret")
	agentTrailer = metadata.Pairs("x-agent-trailer", "t1")
)

func (r *recorder) record(ctx context.Context, method string) {
	md, _ := metadata.FromIncomingContext(ctx)
	user, _ := identity.User(ctx)
	dl, _ := ctx.Deadline()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[method] = agentCall{md: md.Copy(), user: user, deadline: dl}
}

func (r *recorder) last(t *testing.T, method string) agentCall {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	call, ok := r.calls["/wick.agent.v1.AgentService/"+method]
	if !ok {
		t.Fatalf("the agent service saw no %s call", method)
	}
	return call
}

func (r *recorder) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	r.record(ctx, info.FullMethod)
	_ = grpc.SetHeader(ctx, agentHeader)
	_ = grpc.SetTrailer(ctx, agentTrailer)
	return h(ctx, req)
}

func (r *recorder) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	r.record(ss.Context(), info.FullMethod)
	_ = ss.SetHeader(agentHeader)
	ss.SetTrailer(agentTrailer)
	return h(srv, ss)
}

// edgeEnv is the fake agent service on a loopback gRPC server, the gateway
// in front of it, and the gateway's gRPC edge on its own loopback server.
type edgeEnv struct {
	fake *fakeAgent
	rec  *recorder
	// direct calls the agent service as the suite's processes do: signed.
	direct agentv1.AgentServiceClient
	addr   string // the edge
}

type edgeOption func(*edgeSetup)

type edgeSetup struct {
	cfg gateway.Config
	// judged is the address the edge is told it listens on; nil: the real one.
	judged net.Addr
}

// withJudgedAddr makes the edge decide its rules as if it listened on addr.
func withJudgedAddr(addr net.Addr) edgeOption { return func(s *edgeSetup) { s.judged = addr } }

func withConfig(f func(*gateway.Config)) edgeOption { return func(s *edgeSetup) { f(&s.cfg) } }

func startEdge(t testing.TB, opts ...edgeOption) *edgeEnv {
	t.Helper()
	setup := edgeSetup{cfg: gateway.Config{Tokens: map[string]string{aliceToken: "alice", bobToken: "bob"}}}
	for _, o := range opts {
		o(&setup)
	}
	key := identity.RandomKey()
	fake := newFakeAgent()
	rec := &recorder{calls: map[string]agentCall{}}
	agentSrv := server.New("agent", discardLogger(), server.WithIdentity(key), server.WithDrainDelay(0), server.WithShutdownTimeout(time.Second),
		server.WithUnaryInterceptor(rec.unary), server.WithStreamInterceptor(rec.stream))
	agentv1.RegisterAgentServiceServer(agentSrv.GRPC(), fake)
	agentLis := listenLoopback(t)
	serveLis(t, agentSrv, agentLis)

	conn, err := dial.New(agentLis.Addr().String(), dial.WithIdentity(key))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	gw, err := gateway.New(setup.cfg, conn, gateway.WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	lis := listenLoopback(t)
	judged := setup.judged
	if judged == nil {
		judged = lis.Addr()
	}
	edge, err := gw.GRPCEdge(judged)
	if err != nil {
		t.Fatal(err)
	}
	sopts := []server.Option{server.WithIdentity(key), server.WithDrainDelay(0), server.WithShutdownTimeout(time.Second)}
	for _, o := range edge.ServerOptions() {
		sopts = append(sopts, server.WithGRPCOption(o))
	}
	edgeSrv := server.New("gateway", discardLogger(), sopts...)
	edge.Register(edgeSrv.GRPC())
	serveLis(t, edgeSrv, lis)
	return &edgeEnv{fake: fake, rec: rec, direct: agentv1.NewAgentServiceClient(conn), addr: lis.Addr().String()}
}

func listenLoopback(t testing.TB) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return lis
}

func serveLis(t testing.TB, srv *server.Server, lis net.Listener) {
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() { cancel(); <-served })
}

// client is an external client of the edge, in plaintext.
func (e *edgeEnv) client(t testing.TB) agentv1.AgentServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return agentv1.NewAgentServiceClient(conn)
}

// bearer returns ctx with the metadata of a call made with token and the
// given extra key, value pairs.
func bearer(ctx context.Context, token string, kv ...string) context.Context {
	if token != "" {
		kv = append([]string{"authorization", "Bearer " + token}, kv...)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

func wantCode(t *testing.T, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("code %v (%v), want %v", got, err, want)
	}
}

// createAgents gives alice and bob an agent each, through the edge.
func createAgents(t *testing.T, c agentv1.AgentServiceClient) {
	t.Helper()
	for tok, id := range map[string]string{aliceToken: "a1-alice", bobToken: "a1-bob"} {
		if _, err := c.CreateAgent(bearer(t.Context(), tok), &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: id, Name: "A"}}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEdgeAuthentication(t *testing.T) {
	t.Parallel()
	env := startEdge(t)
	c := env.client(t)
	createAgents(t, c)
	tests := []struct {
		name string
		ctx  context.Context
		want codes.Code
	}{
		{"no token", t.Context(), codes.Unauthenticated},
		{"wrong token", bearer(t.Context(), "nope"), codes.Unauthenticated},
		{"not a bearer token", metadata.AppendToOutgoingContext(t.Context(), "authorization", "Basic "+aliceToken), codes.Unauthenticated},
		{"two tokens", metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+aliceToken, "authorization", "Bearer "+bobToken), codes.Unauthenticated},
		{"forged identity without a token", metadata.AppendToOutgoingContext(t.Context(), identity.UserKey, "alice"), codes.Unauthenticated},
		{"forged signed identity without a token", metadata.AppendToOutgoingContext(t.Context(),
			identity.UserKey, "alice", identity.TimestampKey, "1", identity.SignatureKey, "00"), codes.Unauthenticated},
		{"forged identity with bob's token", bearer(t.Context(), bobToken, identity.UserKey, "alice"), codes.Unauthenticated},
		{"the token's user", bearer(t.Context(), aliceToken), codes.OK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.GetAgent(tc.ctx, &agentv1.GetAgentRequest{AgentId: "a1-alice"})
			wantCode(t, err, tc.want)
			st, err := c.Stream(tc.ctx, &agentv1.StreamRequest{AgentId: "a1-alice", Messages: []*agentv1.Message{{Role: "user", Content: "tokens 1"}}})
			if err == nil {
				_, err = st.Recv()
			}
			wantCode(t, err, tc.want)
		})
	}
	t.Run("a signature alone names no one and is not passed on", func(t *testing.T) {
		ctx := bearer(t.Context(), bobToken, identity.SignatureKey, "00", "x-wick-anything", "x")
		if _, err := c.GetAgent(ctx, &agentv1.GetAgentRequest{AgentId: "a1-bob"}); err != nil {
			t.Fatal(err)
		}
		call := env.rec.last(t, "GetAgent")
		if call.user != "bob" {
			t.Fatalf("the agent service saw user %q, want bob", call.user)
		}
		if sig := call.md.Get(identity.SignatureKey); len(sig) != 1 || sig[0] == "00" {
			t.Fatalf("signatures the agent service saw: %q", sig)
		}
		if v := call.md.Get("x-wick-anything"); len(v) != 0 {
			t.Fatalf("x-wick-anything reached the agent service: %q", v)
		}
	})
}

func TestEdgeScopesByUser(t *testing.T) {
	t.Parallel()
	env := startEdge(t)
	c := env.client(t)
	createAgents(t, c)
	alice, bob := bearer(t.Context(), aliceToken), bearer(t.Context(), bobToken)
	_, err := c.GetAgent(bob, &agentv1.GetAgentRequest{AgentId: "a1-alice"})
	wantCode(t, err, codes.NotFound)
	list, err := c.ListAgents(alice, &agentv1.ListAgentsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.GetAgents()) != 1 || list.GetAgents()[0].GetAgentId() != "a1-alice" {
		t.Fatalf("alice lists %v", list.GetAgents())
	}
	st, err := c.Stream(alice, &agentv1.StreamRequest{AgentId: "a1-alice", Messages: []*agentv1.Message{{Role: "user", Content: "tokens 2"}}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := st.Recv(); err != nil {
			break
		}
	}
	js, err := c.JoinRun(bob, &agentv1.JoinRunRequest{RunId: first.GetEvent().GetRunId()})
	if err == nil {
		_, err = js.Recv()
	}
	wantCode(t, err, codes.NotFound)
}

func TestEdgeForwardsCalls(t *testing.T) {
	t.Parallel()
	env := startEdge(t)
	c := env.client(t)
	createAgents(t, c)

	t.Run("metadata, deadline, header and trailer", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		ctx = bearer(ctx, aliceToken, "x-request-id", "r-1")
		var header, trailer metadata.MD
		if _, err := c.GetAgent(ctx, &agentv1.GetAgentRequest{AgentId: "a1-alice"}, grpc.Header(&header), grpc.Trailer(&trailer)); err != nil {
			t.Fatal(err)
		}
		call := env.rec.last(t, "GetAgent")
		if v := call.md.Get("x-request-id"); len(v) != 1 || v[0] != "r-1" {
			t.Errorf("x-request-id at the agent service: %q", v)
		}
		if v := call.md.Get("authorization"); len(v) != 0 {
			t.Errorf("the bearer token reached the agent service: %q", v)
		}
		if call.user != "alice" {
			t.Errorf("user %q, want alice", call.user)
		}
		// grpc-timeout carries the time left, so the deadline the service
		// computes drifts from the client's by the time in transit.
		dl, _ := ctx.Deadline()
		if call.deadline.IsZero() || call.deadline.After(dl.Add(time.Second)) {
			t.Errorf("deadline at the agent service %v, the client's %v", call.deadline, dl)
		}
		checkAgentMetadata(t, header, trailer)
	})

	t.Run("a stream's events are the service's, with header and trailer", func(t *testing.T) {
		req := &agentv1.StreamRequest{AgentId: "a1-alice", Messages: []*agentv1.Message{{Role: "user", Content: "tokens 20"}}}
		st, err := c.Stream(bearer(t.Context(), aliceToken), req)
		if err != nil {
			t.Fatal(err)
		}
		var got []*agentv1.StreamEvent
		for {
			m, err := st.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, m.GetEvent())
		}
		header, _ := st.Header()
		checkAgentMetadata(t, header, st.Trailer())
		// The same run straight from the service's log.
		js, err := env.direct.JoinRun(identity.WithUser(t.Context(), "alice"), &agentv1.JoinRunRequest{RunId: got[0].GetRunId()})
		if err != nil {
			t.Fatal(err)
		}
		var want []*agentv1.StreamEvent
		for {
			m, err := js.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, m.GetEvent())
		}
		if len(got) != 22 || len(got) != len(want) {
			t.Fatalf("%d events through the edge, %d from the service, want 22", len(got), len(want))
		}
		for i := range want {
			if !protoEqual(got[i], want[i]) {
				t.Fatalf("event %d: %v, want %v", i, got[i], want[i])
			}
		}
	})

	t.Run("status codes and messages", func(t *testing.T) {
		_, err := c.Invoke(bearer(t.Context(), aliceToken), &agentv1.InvokeRequest{AgentId: "a1-alice", Messages: []*agentv1.Message{{Role: "user", Content: "status 9 thread is busy"}}})
		wantCode(t, err, codes.FailedPrecondition)
		if msg := status.Convert(err).Message(); msg != "thread is busy" {
			t.Errorf("message %q", msg)
		}
		st, err := c.Stream(bearer(t.Context(), aliceToken), &agentv1.StreamRequest{AgentId: "a1-alice", Messages: []*agentv1.Message{{Role: "user", Content: "fail"}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			t.Fatalf("first event: %v", err)
		}
		_, err = st.Recv()
		wantCode(t, err, codes.Internal)
	})

	t.Run("the client's cancellation reaches the service", func(t *testing.T) {
		ctx, cancel := context.WithCancel(bearer(t.Context(), aliceToken))
		defer cancel()
		st, err := c.Stream(ctx, &agentv1.StreamRequest{AgentId: "a1-alice", Messages: []*agentv1.Message{{Role: "user", Content: "block"}}})
		if err != nil {
			t.Fatal(err)
		}
		first, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		select {
		case run := <-env.fake.cancelled:
			if run != first.GetEvent().GetRunId() {
				t.Fatalf("run %s cancelled, want %s", run, first.GetEvent().GetRunId())
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the service's stream was not cancelled")
		}
	})

	t.Run("upload and download", func(t *testing.T) {
		ctx := bearer(t.Context(), aliceToken)
		data := make([]byte, 300<<10)
		_, _ = rand.Read(data)
		up, err := c.UploadFile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := up.Send(&agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Header{Header: &agentv1.UploadFileHeader{AgentId: "a1-alice", Path: "/workspace/b.bin"}}}); err != nil {
			t.Fatal(err)
		}
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 64<<10)
			if err := up.Send(&agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Data{Data: rest[:n]}}); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		res, err := up.CloseAndRecv()
		if err != nil {
			t.Fatal(err)
		}
		if res.GetBytesWritten() != int64(len(data)) {
			t.Fatalf("bytes written %d, want %d", res.GetBytesWritten(), len(data))
		}
		down, err := c.DownloadFile(ctx, &agentv1.DownloadFileRequest{AgentId: "a1-alice", Path: "/workspace/b.bin"})
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		for {
			m, err := down.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got.Write(m.GetData())
		}
		if !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("downloaded %d bytes that differ from the %d uploaded", got.Len(), len(data))
		}
		// Bob's upload to alice's agent fails at the header, while he sends.
		up, err = c.UploadFile(bearer(t.Context(), bobToken))
		if err != nil {
			t.Fatal(err)
		}
		_ = up.Send(&agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Header{Header: &agentv1.UploadFileHeader{AgentId: "a1-alice", Path: "/workspace/x"}}})
		_, err = up.CloseAndRecv()
		wantCode(t, err, codes.NotFound)
	})

	t.Run("terminal", func(t *testing.T) {
		term, err := c.Terminal(bearer(t.Context(), aliceToken))
		if err != nil {
			t.Fatal(err)
		}
		send := func(m *agentv1.TerminalRequest) {
			if err := term.Send(m); err != nil {
				t.Fatal(err)
			}
		}
		send(&agentv1.TerminalRequest{Msg: &agentv1.TerminalRequest_Start{Start: &agentv1.TerminalStart{AgentId: "a1-alice", Size: &agentv1.TerminalSize{Rows: 24, Cols: 80}}}})
		if size := <-env.fake.resizes; size.GetCols() != 80 {
			t.Fatalf("start size %v", size)
		}
		send(&agentv1.TerminalRequest{Msg: &agentv1.TerminalRequest_Input{Input: []byte("ls")}})
		out, err := term.Recv()
		if err != nil || string(out.GetOutput()) != "echo:ls" {
			t.Fatalf("output %v, %v", out, err)
		}
		send(&agentv1.TerminalRequest{Msg: &agentv1.TerminalRequest_Input{Input: []byte("exit")}})
		out, err = term.Recv()
		if err != nil || out.GetExitCode() != 3 {
			t.Fatalf("exit %v, %v", out, err)
		}
		if _, err := term.Recv(); !errors.Is(err, io.EOF) {
			t.Fatalf("after exit: %v, want EOF", err)
		}
	})

	t.Run("only the agent service's methods", func(t *testing.T) {
		conn, err := grpc.NewClient(env.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, m := range []string{"/wick.agent.v1.AgentService/Nope", "/wick.sandbox.v1.SandboxService/GetSandbox"} {
			err := conn.Invoke(bearer(t.Context(), aliceToken), m, &emptypb.Empty{}, &emptypb.Empty{})
			wantCode(t, err, codes.Unimplemented)
		}
		// Health and the agent service's status are served beside it.
		res, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{Service: "wick.agent.v1.AgentService"})
		if err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health %v, %v", res, err)
		}
	})
}

func checkAgentMetadata(t *testing.T, header, trailer metadata.MD) {
	t.Helper()
	if v := header.Get("x-agent-header"); len(v) != 1 || v[0] != "h1" {
		t.Errorf("header %v lacks the service's x-agent-header", header)
	}
	if v := header.Get("x-wick-internal"); len(v) != 0 {
		t.Errorf("the service's x-wick-internal header reached the client")
	}
	if v := trailer.Get("x-agent-trailer"); len(v) != 1 || v[0] != "t1" {
		t.Errorf("trailer %v lacks the service's x-agent-trailer", trailer)
	}
}

func TestEdgeMessageBound(t *testing.T) {
	t.Parallel()
	env := startEdge(t, withConfig(func(c *gateway.Config) { c.GRPC.MaxMsgBytes = 4 << 10 }))
	c := env.client(t)
	createAgents(t, c)
	ctx := bearer(t.Context(), aliceToken)
	_, err := c.WriteFile(ctx, &agentv1.WriteFileRequest{AgentId: "a1-alice", Path: "/workspace/big", Content: strings.Repeat("x", 8<<10)})
	wantCode(t, err, codes.ResourceExhausted)
	// An answer over the bound is refused too: the file is written directly.
	up, err := env.direct.UploadFile(identity.WithUser(t.Context(), "alice"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, up.Send(&agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Header{Header: &agentv1.UploadFileHeader{AgentId: "a1-alice", Path: "/workspace/big"}}}))
	must(t, up.Send(&agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Data{Data: make([]byte, 8<<10)}}))
	if _, err := up.CloseAndRecv(); err != nil {
		t.Fatal(err)
	}
	down, err := c.DownloadFile(ctx, &agentv1.DownloadFileRequest{AgentId: "a1-alice", Path: "/workspace/big"})
	if err == nil {
		_, err = down.Recv()
	}
	wantCode(t, err, codes.ResourceExhausted)
	st, err := c.Stream(ctx, &agentv1.StreamRequest{AgentId: "a1-alice", Messages: []*agentv1.Message{{Role: "user", Content: "tokens 1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatalf("a small event: %v", err)
	}
}

func TestEdgeAnonymous(t *testing.T) {
	t.Parallel()
	noTokens := withConfig(func(c *gateway.Config) { c.Tokens = map[string]string{} })
	t.Run("on loopback every call is the local user", func(t *testing.T) {
		env := startEdge(t, noTokens)
		c := env.client(t)
		if _, err := c.CreateAgent(t.Context(), &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "mine"}}); err != nil {
			t.Fatal(err)
		}
		if call := env.rec.last(t, "CreateAgent"); call.user != gateway.LocalUser {
			t.Fatalf("user %q, want %q", call.user, gateway.LocalUser)
		}
	})
	t.Run("elsewhere every call is refused", func(t *testing.T) {
		env := startEdge(t, noTokens, withJudgedAddr(&net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 7000}),
			withConfig(func(c *gateway.Config) { c.GRPC.AllowPlaintext = true }))
		_, err := env.client(t).ListAgents(t.Context(), &agentv1.ListAgentsRequest{})
		wantCode(t, err, codes.Unauthenticated)
	})
}

func TestEdgeVerifierDown(t *testing.T) {
	t.Parallel()
	lis := listenLoopback(t)
	url := "http://" + lis.Addr().String() + "/verify"
	lis.Close() // nothing answers there
	env := startEdge(t, withConfig(func(c *gateway.Config) { c.Tokens = nil; c.VerifierURL = url }))
	_, err := env.client(t).ListAgents(bearer(t.Context(), "some-token"), &agentv1.ListAgentsRequest{})
	wantCode(t, err, codes.Unavailable)
}

func TestEdgeTransportRules(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "wick test CA")
	files := tlstest.Write(t, t.TempDir(), ca.Issue(t, "127.0.0.1"), nil)
	cert, key := files.CertFile, files.KeyFile
	public := &net.TCPAddr{IP: net.IPv4zero, Port: 7000}
	tests := []struct {
		name    string
		grpc    gateway.GRPCConfig
		addr    net.Addr
		wantErr error
		wantTLS bool
	}{
		{"plaintext on loopback", gateway.GRPCConfig{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil, false},
		{"plaintext on IPv6 loopback", gateway.GRPCConfig{}, &net.TCPAddr{IP: net.IPv6loopback}, nil, false},
		{"plaintext on a Unix socket", gateway.GRPCConfig{}, &net.UnixAddr{Name: "/tmp/x.sock", Net: "unix"}, nil, false},
		{"plaintext on every interface is refused", gateway.GRPCConfig{}, public, gateway.ErrPlaintext, false},
		{"plaintext on every interface when allowed", gateway.GRPCConfig{AllowPlaintext: true}, public, nil, false},
		{"TLS on every interface", gateway.GRPCConfig{CertFile: cert, KeyFile: key}, public, nil, true},
		{"a certificate without a key", gateway.GRPCConfig{CertFile: cert}, public, errAny, false},
		{"an unreadable certificate", gateway.GRPCConfig{CertFile: cert + ".missing", KeyFile: key}, public, errAny, false},
	}
	conn, err := dial.New("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gw, err := gateway.New(gateway.Config{Tokens: map[string]string{aliceToken: "alice"}, GRPC: tc.grpc}, conn, gateway.WithLogger(discardLogger()))
			if err != nil {
				t.Fatal(err)
			}
			edge, err := gw.GRPCEdge(tc.addr)
			switch {
			case tc.wantErr == errAny && err == nil, tc.wantErr != errAny && !errors.Is(err, tc.wantErr):
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			case err == nil && edge.TLS() != tc.wantTLS:
				t.Fatalf("TLS %v, want %v", edge.TLS(), tc.wantTLS)
			}
		})
	}

	t.Run("a TLS edge serves TLS clients only", func(t *testing.T) {
		env := startEdge(t, withConfig(func(c *gateway.Config) { c.GRPC = gateway.GRPCConfig{CertFile: cert, KeyFile: key} }))
		conn, err := grpc.NewClient(env.addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ca.Pool()})))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		c := agentv1.NewAgentServiceClient(conn)
		if _, err := c.ListAgents(bearer(t.Context(), aliceToken), &agentv1.ListAgentsRequest{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		_, err = env.client(t).ListAgents(bearer(ctx, aliceToken), &agentv1.ListAgentsRequest{})
		wantCode(t, err, codes.Unavailable)
	})
}

var errAny = errors.New("any error")
