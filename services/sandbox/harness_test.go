package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
	"github.com/wick-agent/wick/services/sandbox/sandboximage"
)

// testLabel marks everything tests create, so leftovers of a crashed run can
// be found: docker ps -a --filter label=wick.test.
const testLabel = "wick.test"

var (
	binOnce              sync.Once
	binDir               string
	daemonBin, wickfsBin string
	binErr               error

	imageOnce sync.Once
	imageTag  string
	imageErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binaries builds static wick-daemon and wickfs once per test binary.
func binaries(t testing.TB) (string, string) {
	t.Helper()
	root := testenv.RepoRoot(t)
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "wick-sandbox-bin-")
		if binErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		daemonBin, wickfsBin, binErr = sandboximage.Binaries(ctx, root, binDir)
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return daemonBin, wickfsBin
}

// dockerEnv returns the engine and the FROM-scratch test image.
func dockerEnv(t testing.TB) (*client.Client, string) {
	t.Helper()
	cli := testenv.Docker(t)
	if _, err := os.Stat(sandboximage.BusyboxPath); err != nil {
		testenv.Missing(t, "static busybox at %s", sandboximage.BusyboxPath)
	}
	imageOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		imageTag, imageErr = sandboximage.Build(ctx, cli, map[string]string{testLabel: "1"})
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return cli, imageTag
}

// harness is one service over real gRPC on a Unix socket, with a client.
type harness struct {
	t       testing.TB
	svc     *Service
	cli     sandboxv1.SandboxServiceClient
	docker  *client.Client
	image   string
	cfg     Config
	manager string
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// shortTemp is a temp dir with a short path: Unix socket paths are limited
// to 108 bytes.
func shortTemp(t testing.TB) string {
	dir, err := os.MkdirTemp("", "wsb")
	if err != nil {
		t.Fatal(err)
	}
	// A workspace image a test left mounted would make the removal fail
	// halfway; RemoveStateDir detaches it first.
	t.Cleanup(func() { _ = RemoveStateDir(dir) })
	return dir
}

type harnessOpt func(*Config)

// newHarness starts a service with Docker; every container and volume carrying
// its manager id is removed when the test ends.
func newHarness(t testing.TB, opts ...harnessOpt) *harness {
	t.Helper()
	return newHarnessWith(t, nil, opts...)
}

// newHarnessWith is newHarness with options of the service.
func newHarnessWith(t testing.TB, svcOpts []Option, opts ...harnessOpt) *harness {
	t.Helper()
	docker, image := dockerEnv(t)
	d, w := binaries(t)
	cfg := Config{
		ManagerID: "wick-test-" + randomID(), StateDir: filepath.Join(shortTemp(t), "s"),
		DaemonBin: d, WickfsBin: w, DefaultImage: image, Labels: map[string]string{testLabel: "1"},
		AllowBridge: true, ReapInterval: time.Hour,
	}
	for _, o := range opts {
		o(&cfg)
	}
	h := &harness{t: t, docker: docker, image: image, cfg: cfg, manager: cfg.ManagerID}
	t.Cleanup(h.purge)
	h.start(svcOpts...)
	return h
}

// start (re)starts the service on the harness's config.
func (h *harness) start(opts ...Option) {
	h.t.Helper()
	opts = append([]Option{WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	svc, err := New(h.cfg, opts...)
	if err != nil {
		h.t.Fatal(err)
	}
	h.svc = svc
	h.cli = serve(h.t, svc)
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Close(ctx)
	})
}

// serve registers svc on a gRPC server with identity interceptors and returns a client.
func serve(t testing.TB, svc *Service) sandboxv1.SandboxServiceClient {
	t.Helper()
	key := identity.RandomKey()
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(key.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(key.StreamServerInterceptor()))
	svc.Register(srv)
	sock := filepath.Join(shortTemp(t), "sb.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(key.UnaryClientInterceptor()),
		grpc.WithChainStreamInterceptor(key.StreamClientInterceptor()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(32<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return sandboxv1.NewSandboxServiceClient(conn)
}

// purge removes every container and volume of the harness's manager.
func (h *harness) purge() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := filters.NewArgs(filters.Arg("label", dockerbox.LabelManager+"="+h.manager))
	cs, _ := h.docker.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	for _, c := range cs {
		_ = h.docker.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
	}
	vs, _ := h.docker.VolumeList(ctx, volume.ListOptions{Filters: f})
	for _, v := range vs.Volumes {
		_ = h.docker.VolumeRemove(ctx, v.Name, true)
	}
}

func as(user string) context.Context {
	return identity.WithUser(context.Background(), user)
}

func (h *harness) ensure(ctx context.Context, agent string, spec *sandboxv1.SandboxSpec) *sandboxv1.Sandbox {
	h.t.Helper()
	r, err := h.cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: agent, Spec: spec})
	if err != nil {
		h.t.Fatalf("ensure %s: %v", agent, err)
	}
	return r.GetSandbox()
}

// execResult is a collected Exec stream.
type execResult struct {
	stdout, stderr string
	exit           *sandboxv1.ExitStatus
}

func (h *harness) exec(ctx context.Context, agent, cmd string) (execResult, error) {
	return execOn(ctx, h.cli, &sandboxv1.ExecRequest{AgentId: agent, Command: cmd})
}

func execOn(ctx context.Context, cli sandboxv1.SandboxServiceClient, req *sandboxv1.ExecRequest) (execResult, error) {
	st, err := cli.Exec(ctx, req)
	if err != nil {
		return execResult{}, err
	}
	var r execResult
	var out, errb bytes.Buffer
	for {
		m, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return r, err
		}
		out.Write(m.GetStdout())
		errb.Write(m.GetStderr())
		if m.GetExit() != nil {
			r.exit = m.GetExit()
		}
	}
	r.stdout, r.stderr = out.String(), errb.String()
	if r.exit == nil {
		return r, fmt.Errorf("exec stream ended without an exit status")
	}
	return r, nil
}

// mustExec runs cmd and fails the test unless it exits 0.
func (h *harness) mustExec(ctx context.Context, agent, cmd string) string {
	h.t.Helper()
	r, err := h.exec(ctx, agent, cmd)
	if err != nil {
		h.t.Fatalf("exec %q: %v", cmd, err)
	}
	if r.exit.GetExitCode() != 0 {
		h.t.Fatalf("exec %q: exit %d, stderr %q", cmd, r.exit.GetExitCode(), r.stderr)
	}
	return r.stdout
}

func writeFile(ctx context.Context, cli sandboxv1.SandboxServiceClient, agent, path string, data []byte) (*sandboxv1.WriteFileResponse, error) {
	st, err := cli.WriteFile(ctx)
	if err != nil {
		return nil, err
	}
	if err := st.Send(&sandboxv1.WriteFileRequest{Msg: &sandboxv1.WriteFileRequest_Header{Header: &sandboxv1.WriteFileHeader{AgentId: agent, Path: path}}}); err != nil {
		return nil, err
	}
	for len(data) > 0 {
		n := min(len(data), 1<<20)
		if err := st.Send(&sandboxv1.WriteFileRequest{Msg: &sandboxv1.WriteFileRequest_Data{Data: data[:n]}}); err != nil {
			break // the status comes from CloseAndRecv
		}
		data = data[n:]
	}
	return st.CloseAndRecv()
}

func readFile(ctx context.Context, cli sandboxv1.SandboxServiceClient, agent, path string, w io.Writer) error {
	st, err := cli.ReadFile(ctx, &sandboxv1.ReadFileRequest{AgentId: agent, Path: path})
	if err != nil {
		return err
	}
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := w.Write(m.GetData()); err != nil {
			return err
		}
	}
}

// containerOf returns the inspect of a sandbox's container.
func (h *harness) inspect(name string) (container.InspectResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.docker.ContainerInspect(ctx, name)
}

// terminalRoundTrip opens a 24x80 terminal on agent's sandbox, resizes it to
// 40x100, runs a line that prints and exits 3, and checks the output and the
// exit status.
func terminalRoundTrip(ctx context.Context, t *testing.T, cli sandboxv1.SandboxServiceClient, agent string) {
	t.Helper()
	st, err := cli.Terminal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*sandboxv1.TerminalRequest{
		{Msg: &sandboxv1.TerminalRequest_Start{Start: &sandboxv1.TerminalStart{AgentId: agent, Size: &sandboxv1.TerminalSize{Rows: 24, Cols: 80}}}},
		{Msg: &sandboxv1.TerminalRequest_Resize{Resize: &sandboxv1.TerminalSize{Rows: 40, Cols: 100}}},
		{Msg: &sandboxv1.TerminalRequest_Input{Input: []byte("echo tty-$((6*7)); stty size; exit 3\n")}},
	} {
		if err := st.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	var exit *sandboxv1.ExitStatus
	for exit == nil {
		m, err := st.Recv()
		if err != nil {
			t.Fatalf("terminal: %v (output %q)", err, out.String())
		}
		out.Write(m.GetOutput())
		exit = m.GetExit()
	}
	if !strings.Contains(out.String(), "tty-42") || !strings.Contains(out.String(), "40 100") || exit.GetExitCode() != 3 {
		t.Fatalf("terminal output %q exit %v", out.String(), exit)
	}
}
