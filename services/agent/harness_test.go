package agent_test

import (
	"context"
	"encoding/base64"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/server"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/wickfs"
)

// reply is one scripted answer of the fake LLM gateway.
type reply struct {
	deltas []string
	calls  []*llmv1.ToolCall
	// block waits until the call's context ends (a model that never answers).
	block bool
}

func text(s ...string) reply { return reply{deltas: s} }

func call(id, name string, args map[string]any) *llmv1.ToolCall {
	s, err := structpb.NewStruct(args)
	if err != nil {
		panic(err)
	}
	return &llmv1.ToolCall{Id: id, Name: name, Arguments: s}
}

// fakeLLM is the LLM gateway's gRPC API answering from a script. It checks
// that the caller's identity came through.
type fakeLLM struct {
	llmv1.UnimplementedLLMServiceServer
	mu       sync.Mutex
	script   func(n int, req *llmv1.StreamRequest) reply
	requests []*llmv1.StreamRequest
	users    []string
	started  chan int // receives the number of each call as it starts
}

func (f *fakeLLM) Stream(req *llmv1.StreamRequest, stream llmv1.LLMService_StreamServer) error {
	user, _ := identity.User(stream.Context())
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, req)
	f.users = append(f.users, user)
	r := f.script(n, req)
	f.mu.Unlock()
	select {
	case f.started <- n:
	default:
	}
	if r.block {
		<-stream.Context().Done()
		return stream.Context().Err()
	}
	if err := stream.Send(&llmv1.StreamResponse{Model: "fake", Provider: "script"}); err != nil {
		return err
	}
	for _, d := range r.deltas {
		if err := stream.Send(&llmv1.StreamResponse{Delta: d}); err != nil {
			return err
		}
	}
	finish := "stop"
	if len(r.calls) > 0 {
		finish = "tool_calls"
	}
	return stream.Send(&llmv1.StreamResponse{ToolCalls: r.calls, FinishReason: finish, Usage: &llmv1.Usage{InputTokens: 10, OutputTokens: 5}})
}

func (f *fakeLLM) Call(ctx context.Context, req *llmv1.CallRequest) (*llmv1.CallResponse, error) {
	return &llmv1.CallResponse{Content: "summary", FinishReason: "stop"}, nil
}

func (f *fakeLLM) request(n int) *llmv1.StreamRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[n]
}

// fakeSandbox is the sandbox service's gRPC API over wickfs.LocalFS, one
// directory per (user, agent), so tests see that the user flows through.
type fakeSandbox struct {
	sandboxv1.UnimplementedSandboxServiceServer
	dir   string
	mu    sync.Mutex
	state map[string]string
	specs map[string]*sandboxv1.SandboxSpec
	// ensures counts EnsureSandbox calls, each of which may start a container.
	ensures int
}

func newFakeSandbox(t testing.TB) *fakeSandbox {
	return &fakeSandbox{dir: t.TempDir(), state: map[string]string{}, specs: map[string]*sandboxv1.SandboxSpec{}}
}

func (f *fakeSandbox) fs(ctx context.Context, agentID string) (*wickfs.LocalFS, string, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, "", err
	}
	key := user + "/" + agentID
	f.mu.Lock()
	st := f.state[key]
	f.mu.Unlock()
	if st != "running" {
		return nil, "", status.Errorf(codes.FailedPrecondition, "sandbox %s is not running", key)
	}
	dir := filepath.Join(f.dir, user, agentID)
	fs, err := wickfs.NewLocalFS(dir)
	return fs, dir, err
}

func (f *fakeSandbox) box(ctx context.Context, agentID string) *sandboxv1.Sandbox {
	user, _ := identity.User(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	return &sandboxv1.Sandbox{AgentId: agentID, UserId: user, State: f.state[user+"/"+agentID], Type: f.specs[user+"/"+agentID].GetType()}
}

func (f *fakeSandbox) EnsureSandbox(ctx context.Context, req *sandboxv1.EnsureSandboxRequest) (*sandboxv1.EnsureSandboxResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(f.dir, user, req.GetAgentId()), 0o755); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.ensures++
	f.state[user+"/"+req.GetAgentId()] = "running"
	f.specs[user+"/"+req.GetAgentId()] = req.GetSpec()
	f.mu.Unlock()
	return &sandboxv1.EnsureSandboxResponse{Sandbox: f.box(ctx, req.GetAgentId())}, nil
}

func (f *fakeSandbox) ensureCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ensures
}

func (f *fakeSandbox) setState(ctx context.Context, agentID, state string) (*sandboxv1.Sandbox, error) {
	user, _ := identity.User(ctx)
	f.mu.Lock()
	_, ok := f.state[user+"/"+agentID]
	if ok {
		f.state[user+"/"+agentID] = state
	}
	f.mu.Unlock()
	if !ok {
		return nil, status.Error(codes.NotFound, "no sandbox")
	}
	return f.box(ctx, agentID), nil
}

func (f *fakeSandbox) GetSandbox(ctx context.Context, req *sandboxv1.GetSandboxRequest) (*sandboxv1.GetSandboxResponse, error) {
	user, _ := identity.User(ctx)
	f.mu.Lock()
	_, ok := f.state[user+"/"+req.GetAgentId()]
	f.mu.Unlock()
	if !ok {
		return nil, status.Error(codes.NotFound, "no sandbox")
	}
	return &sandboxv1.GetSandboxResponse{Sandbox: f.box(ctx, req.GetAgentId())}, nil
}

func (f *fakeSandbox) StopSandbox(ctx context.Context, req *sandboxv1.StopSandboxRequest) (*sandboxv1.StopSandboxResponse, error) {
	b, err := f.setState(ctx, req.GetAgentId(), "stopped")
	if err != nil {
		return nil, err
	}
	return &sandboxv1.StopSandboxResponse{Sandbox: b}, nil
}

func (f *fakeSandbox) RestartSandbox(ctx context.Context, req *sandboxv1.RestartSandboxRequest) (*sandboxv1.RestartSandboxResponse, error) {
	b, err := f.setState(ctx, req.GetAgentId(), "running")
	if err != nil {
		return nil, err
	}
	return &sandboxv1.RestartSandboxResponse{Sandbox: b}, nil
}

func (f *fakeSandbox) DeleteSandbox(ctx context.Context, req *sandboxv1.DeleteSandboxRequest) (*sandboxv1.DeleteSandboxResponse, error) {
	user, _ := identity.User(ctx)
	f.mu.Lock()
	delete(f.state, user+"/"+req.GetAgentId())
	f.mu.Unlock()
	return &sandboxv1.DeleteSandboxResponse{}, nil
}

func (f *fakeSandbox) Ls(ctx context.Context, req *sandboxv1.LsRequest) (*sandboxv1.LsResponse, error) {
	fs, _, err := f.fs(ctx, req.GetAgentId())
	if err != nil {
		return nil, err
	}
	entries, err := fs.Ls(ctx, req.GetPath())
	if err != nil {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	out := &sandboxv1.LsResponse{}
	for _, e := range entries {
		out.Entries = append(out.Entries, &sandboxv1.DirEntry{Name: e.Name, Type: e.Type, Size: e.Size})
	}
	return out, nil
}

func (f *fakeSandbox) ReadFile(req *sandboxv1.ReadFileRequest, stream sandboxv1.SandboxService_ReadFileServer) error {
	fs, _, err := f.fs(stream.Context(), req.GetAgentId())
	if err != nil {
		return err
	}
	content, err := fs.ReadFile(stream.Context(), req.GetPath())
	if err != nil {
		return status.Error(codes.NotFound, err.Error())
	}
	data := []byte(content)
	if b64, ok := strings.CutPrefix(content, "base64:"); ok {
		data, _ = base64.StdEncoding.DecodeString(b64)
	}
	const chunk = 64 << 10
	first := true
	for len(data) > 0 || first {
		n := min(chunk, len(data))
		msg := &sandboxv1.ReadFileResponse{Data: data[:n]}
		if first {
			msg.Size = int64(len(data))
			first = false
		}
		if err := stream.Send(msg); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func (f *fakeSandbox) WriteFile(stream sandboxv1.SandboxService_WriteFileServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	h := first.GetHeader()
	_, dir, err := f.fs(stream.Context(), h.GetAgentId())
	if err != nil {
		return err
	}
	rel := strings.TrimPrefix(h.GetPath(), "/workspace/")
	p := filepath.Join(dir, filepath.Clean("/"+rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	file, err := os.Create(p)
	if err != nil {
		return err
	}
	defer file.Close()
	var n int64
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		k, err := file.Write(msg.GetData())
		if err != nil {
			return err
		}
		n += int64(k)
	}
	return stream.SendAndClose(&sandboxv1.WriteFileResponse{Path: h.GetPath(), BytesWritten: n})
}

func (f *fakeSandbox) Glob(ctx context.Context, req *sandboxv1.GlobRequest) (*sandboxv1.GlobResponse, error) {
	fs, _, err := f.fs(ctx, req.GetAgentId())
	if err != nil {
		return nil, err
	}
	res, err := fs.Glob(ctx, req.GetPattern(), req.GetPath())
	if err != nil {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	return &sandboxv1.GlobResponse{Files: res.Files, Truncated: res.Truncated}, nil
}

func (f *fakeSandbox) Exec(req *sandboxv1.ExecRequest, stream sandboxv1.SandboxService_ExecServer) error {
	fs, _, err := f.fs(stream.Context(), req.GetAgentId())
	if err != nil {
		return err
	}
	res, err := fs.Exec(stream.Context(), req.GetCommand())
	if err != nil {
		return err
	}
	if res.Stdout != "" {
		if err := stream.Send(&sandboxv1.ExecResponse{Output: &sandboxv1.ExecResponse_Stdout{Stdout: []byte(res.Stdout)}}); err != nil {
			return err
		}
	}
	return stream.Send(&sandboxv1.ExecResponse{Output: &sandboxv1.ExecResponse_Exit{Exit: &sandboxv1.ExitStatus{ExitCode: int32(res.ExitCode)}}})
}

func (f *fakeSandbox) Terminal(stream sandboxv1.SandboxService_TerminalServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	if _, _, err := f.fs(stream.Context(), first.GetStart().GetAgentId()); err != nil {
		return err
	}
	// An echo terminal: it writes back what it reads, and exits on "exit".
	for {
		msg, err := stream.Recv()
		if err != nil {
			return nil
		}
		in := msg.GetInput()
		if string(in) == "exit\n" {
			return stream.Send(&sandboxv1.TerminalResponse{Msg: &sandboxv1.TerminalResponse_Exit{Exit: &sandboxv1.ExitStatus{ExitCode: 7}}})
		}
		if len(in) > 0 {
			if err := stream.Send(&sandboxv1.TerminalResponse{Msg: &sandboxv1.TerminalResponse_Output{Output: append([]byte("echo:"), in...)}}); err != nil {
				return err
			}
		}
	}
}

// suite is a set of services on loopback sharing one identity key.
type suite struct {
	t       testing.TB
	key     *identity.Key
	llm     *fakeLLM
	sandbox *fakeSandbox
	llmAddr string
	sbAddr  string
	// sbClient, when set, replaces a connection to sbAddr (placement over
	// several sandbox services).
	sbClient sandboxv1.SandboxServiceClient
}

func newSuite(t testing.TB, script func(n int, req *llmv1.StreamRequest) reply) *suite {
	t.Helper()
	s := &suite{t: t, key: identity.RandomKey(), llm: &fakeLLM{script: script, started: make(chan int, 64)}, sandbox: newFakeSandbox(t)}
	s.llmAddr = s.serve(func(g *grpc.Server) { llmv1.RegisterLLMServiceServer(g, s.llm) })
	s.sbAddr = s.serve(func(g *grpc.Server) { sandboxv1.RegisterSandboxServiceServer(g, s.sandbox) })
	return s
}

func (s *suite) serve(register func(*grpc.Server)) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	g := grpc.NewServer(
		grpc.ChainUnaryInterceptor(s.key.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(s.key.StreamServerInterceptor()))
	register(g)
	go g.Serve(lis)
	s.t.Cleanup(g.Stop)
	return lis.Addr().String()
}

func (s *suite) conn(addr string) *grpc.ClientConn {
	// Tests read a run event's data as JSON clients get it.
	c, err := dial.New(addr, dial.WithIdentity(s.key), dial.WithDialOption(testenv.EventData()))
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

// replica is one agent service instance on its own listener.
type replica struct {
	svc    *agent.Service
	srv    *server.Server
	client agentv1.AgentServiceClient
	rdb    redis.UniversalClient
	stop   func()
}

func (s *suite) agent(stores agent.Stores, rdb redis.UniversalClient, opts ...agent.Option) *replica {
	s.t.Helper()
	sb := s.sbClient
	if sb == nil {
		sb = sandboxv1.NewSandboxServiceClient(s.conn(s.sbAddr))
	}
	svc, err := agent.New(agent.Deps{
		LLM:     llmv1.NewLLMServiceClient(s.conn(s.llmAddr)),
		Sandbox: sb,
		Stores:  stores,
	}, opts...)
	if err != nil {
		s.t.Fatal(err)
	}
	srv := server.New("agent-test", discardLogger(), server.WithIdentity(s.key), server.WithDrainDelay(0), server.WithShutdownTimeout(time.Second))
	svc.Register(srv.GRPC())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.Serve(ctx, lis); close(served) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-served
			svc.Close()
		})
	}
	s.t.Cleanup(stop)
	return &replica{svc: svc, srv: srv, client: agentv1.NewAgentServiceClient(s.conn(lis.Addr().String())), rdb: rdb, stop: stop}
}

// redisStores returns stores on a fresh client of addr with a short lease.
func redisStores(t *testing.T, addr string, lease time.Duration) (agent.Stores, redis.UniversalClient) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	return agent.RedisStores(rdb, agent.RedisOptions{Lease: lease}), rdb
}

func as(user string) context.Context {
	return identity.WithUser(context.Background(), user)
}

func withTimeout(t *testing.T, ctx context.Context, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(ctx, d)
	t.Cleanup(cancel)
	return ctx
}

func human(s string) []*agentv1.Message { return []*agentv1.Message{{Role: "user", Content: s}} }

// collect reads a run's stream to its end.
func collect[T interface{ GetEvent() *agentv1.StreamEvent }](t *testing.T, recv func() (T, error)) []*agentv1.StreamEvent {
	t.Helper()
	var out []*agentv1.StreamEvent
	for {
		m, err := recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("stream after %d events: %v", len(out), err)
		}
		out = append(out, m.GetEvent())
	}
}

func names(evs []*agentv1.StreamEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.GetEvent())
	}
	return out
}

func code(err error) codes.Code { return status.Code(err) }

func needRedis(t *testing.T) string { return testenv.Redis(t) }
