package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
)

// noDocker is an engine dialer for a machine without Docker.
func noDocker(string) (dockerbox.Engine, error) {
	return nil, errors.New("dial unix /nonexistent/docker.sock: connect: no such file or directory")
}

// newLocal starts a service without Docker.
func newLocal(t *testing.T, cfg Config, opts ...Option) (*Service, sandboxv1.SandboxServiceClient) {
	t.Helper()
	cfg.StateDir = filepath.Join(shortTemp(t), "s")
	cfg.ManagerID = "wick-test-" + randomID()
	opts = append([]Option{WithEngineDialer(noDocker), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	svc, err := New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	return svc, serve(t, svc)
}

func TestLocalBackend(t *testing.T) {
	t.Parallel()
	svc, cli := newLocal(t, Config{AllowLocal: true})
	ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
	defer cancel()
	r, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "dev", Spec: &sandboxv1.SandboxSpec{Type: backend.Local}})
	if err != nil {
		t.Fatal(err)
	}
	if sb := r.GetSandbox(); sb.GetType() != backend.Local || sb.GetTransport() != transportLocal || sb.GetState() != stateRunning {
		t.Fatalf("local sandbox: %+v", sb)
	}
	if _, err := writeFile(ctx, cli, "dev", "/workspace/a/b.txt", []byte("local\n")); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := readFile(ctx, cli, "dev", "/workspace/a/b.txt", &b); err != nil || b.String() != "local\n" {
		t.Fatalf("read %q %v", b.String(), err)
	}
	res, err := execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: "dev", Command: "cat a/b.txt; pwd"})
	if err != nil || !strings.HasPrefix(res.stdout, "local\n") || res.exit.GetExitCode() != 0 {
		t.Fatalf("exec %+v %v", res, err)
	}
	if _, err := cli.Ls(ctx, &sandboxv1.LsRequest{AgentId: "dev", Path: "/workspace/../../etc"}); status.Code(err) != codes.PermissionDenied && status.Code(err) != codes.InvalidArgument {
		t.Fatalf("escape: %v", err)
	}
	// Restart keeps the workdir; delete removes it.
	if _, err := cli.RestartSandbox(ctx, &sandboxv1.RestartSandboxRequest{AgentId: "dev"}); err != nil {
		t.Fatal(err)
	}
	if err := readFile(ctx, cli, "dev", "/workspace/a/b.txt", io.Discard); err != nil {
		t.Fatalf("read after restart: %v", err)
	}
	dir := filepath.Join(svc.cfg.StateDir, "local", sandboxKey(svc.cfg.ManagerID, "alice", "dev"))
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.DeleteSandbox(ctx, &sandboxv1.DeleteSandboxRequest{AgentId: "dev"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("workdir after delete: %v", err)
	}
}

func TestDockerUnavailable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
	defer cancel()
	_, cli := newLocal(t, Config{})
	_, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "x"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "Docker is unavailable") {
		t.Fatalf("docker sandbox without docker: %v", err)
	}
	_, cli = newLocal(t, Config{LocalFallback: true})
	r, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "x"})
	if err != nil || r.GetSandbox().GetType() != backend.Local {
		t.Fatalf("local fallback: %v %v", r, err)
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	_, cli := newLocal(t, Config{AllowLocal: true})
	tests := []struct {
		name  string
		agent string
		spec  *sandboxv1.SandboxSpec
		code  codes.Code
	}{
		{"no agent", "", nil, codes.InvalidArgument},
		{"control chars", "a\nb", nil, codes.InvalidArgument},
		{"bad type", "a", &sandboxv1.SandboxSpec{Type: "vm"}, codes.InvalidArgument},
		{"bad network", "a", &sandboxv1.SandboxSpec{Network: "host"}, codes.InvalidArgument},
		{"too much memory", "a", &sandboxv1.SandboxSpec{MemoryBytes: 1 << 40}, codes.InvalidArgument},
		{"too few pids", "a", &sandboxv1.SandboxSpec{PidsLimit: 1}, codes.InvalidArgument},
		{"relative workdir", "a", &sandboxv1.SandboxSpec{Workdir: "ws"}, codes.InvalidArgument},
		{"workdir on service paths", "a", &sandboxv1.SandboxSpec{Workdir: "/run/wick/x"}, codes.InvalidArgument},
		{"bad env", "a", &sandboxv1.SandboxSpec{Env: map[string]string{"A=B": "c"}}, codes.InvalidArgument},
		{"bad docker host", "a", &sandboxv1.SandboxSpec{DockerHost: "http://x"}, codes.InvalidArgument},
		{"docker host not allowed", "a", &sandboxv1.SandboxSpec{DockerHost: "tcp://10.0.0.5:2376"}, codes.PermissionDenied},
		{"bridge not allowed", "a", &sandboxv1.SandboxSpec{Network: "bridge"}, codes.PermissionDenied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := cli.EnsureSandbox(as("alice"), &sandboxv1.EnsureSandboxRequest{AgentId: tc.agent, Spec: tc.spec})
			if status.Code(err) != tc.code {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
		})
	}
	ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
	defer cancel()
	if _, err := cli.EnsureSandbox(context.Background(), &sandboxv1.EnsureSandboxRequest{AgentId: "a"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("no identity: %v", err)
	}
	if _, err := cli.GetSandbox(ctx, &sandboxv1.GetSandboxRequest{AgentId: "nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("unknown sandbox: %v", err)
	}
	_, svcCli := newLocal(t, Config{})
	if _, err := svcCli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "a", Spec: &sandboxv1.SandboxSpec{Type: backend.Local}}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("local disabled: %v", err)
	}
}

// TestLocalTerminal runs a terminal on the local backend, which has no daemon
// to host it: the PTY comes from the confined local file system itself.
func TestLocalTerminal(t *testing.T) {
	t.Parallel()
	_, cli := newLocal(t, Config{AllowLocal: true})
	ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
	defer cancel()
	if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "dev", Spec: &sandboxv1.SandboxSpec{Type: backend.Local}}); err != nil {
		t.Fatal(err)
	}
	terminalRoundTrip(ctx, t, cli, "dev")
}

// A request that waited on a box whose first start failed must not start
// that box: it has left the map, so the sandbox would run where no later
// request finds it (Ls answered NotFound right after a successful Ensure).
func TestEnsureAfterFailedFirstStart(t *testing.T) {
	t.Parallel()
	svc, cli := newLocal(t, Config{AllowLocal: true})
	ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
	defer cancel()
	failed, err := svc.boxFor("alice", "dev")
	if err != nil {
		t.Fatal(err)
	}
	// A second request found the box and queues on its life lock while
	// the first start holds it.
	failed.life.Lock()
	current := make(chan bool, 1)
	go func() { current <- svc.lockCurrent(failed) }()
	// What ensure does when a first start fails.
	failed.mu.Lock()
	failed.state = stateFailed
	failed.mu.Unlock()
	svc.mu.Lock()
	delete(svc.boxes, failed.key)
	svc.mu.Unlock()
	failed.life.Unlock()
	if <-current {
		t.Fatal("a box that left the map was taken as current")
	}
	if !failed.life.TryLock() {
		t.Fatal("the life lock of a box that left the map is still held")
	}

	if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "dev", Spec: &sandboxv1.SandboxSpec{Type: backend.Local}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Ls(ctx, &sandboxv1.LsRequest{AgentId: "dev", Path: "/workspace"}); err != nil {
		t.Fatalf("ls right after ensure: %v", err)
	}
	if failed.state != stateFailed {
		t.Fatalf("the box that left the map was started again: %s", failed.state)
	}
}
