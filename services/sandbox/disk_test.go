package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/sandbox/internal/diskimage"
)

// smallWorkspace keeps the bound tests fast: filling it takes a moment,
// and bigFile is well past it.
const (
	smallWorkspace = 16 << 20
	bigFile        = 32_000_000
	fillCommand    = "head -c 32000000 /dev/zero > big.bin"
)

// needDiskImages skips (fails, in CI) a test of bounded workspaces where
// this host cannot loop-mount an image.
func needDiskImages(t *testing.T) {
	t.Helper()
	if err := diskimage.Probe(context.Background(), os.TempDir()); err != nil {
		testenv.Missing(t, "loop-mounted workspace images (root, loop devices, mkfs.ext4): %v", err)
	}
}

// checkBound fills agent's workspace past its size and checks that the
// command fails with ENOSPC, that the files API's upload of a too-large file
// is ResourceExhausted, and that a small file still fits once the big one
// is gone.
func checkBound(ctx context.Context, t *testing.T, cli sandboxv1.SandboxServiceClient, agent, workdir string) {
	t.Helper()
	r, err := execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: agent, Command: fillCommand + "; echo $?; wc -c < big.bin"})
	if err != nil {
		t.Fatal(err)
	}
	// busybox's head says "I/O error" where GNU's names ENOSPC; its cat
	// below names it.
	f := strings.Fields(r.stdout)
	if len(f) != 2 {
		t.Fatalf("%q: stdout %q, stderr %q; want the exit status and the bytes written", fillCommand, r.stdout, r.stderr)
	}
	if n, err := strconv.Atoi(f[1]); f[0] == "0" || err != nil || n >= smallWorkspace {
		t.Fatalf("%q: stdout %q (exit status, bytes written), stderr %q; want a failure before %d bytes", fillCommand, r.stdout, r.stderr, smallWorkspace)
	}
	r, err = execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: agent, Command: "cat /dev/zero > big.bin"})
	if err != nil {
		t.Fatal(err)
	}
	if r.exit.GetExitCode() == 0 || !strings.Contains(r.stderr, "No space left on device") {
		t.Fatalf("cat /dev/zero > big.bin: exit %d, stderr %q; want a failure saying no space is left", r.exit.GetExitCode(), r.stderr)
	}
	if _, err := execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: agent, Command: "rm -f big.bin"}); err != nil {
		t.Fatal(err)
	}
	_, err = writeFile(ctx, cli, agent, workdir+"/upload.bin", make([]byte, bigFile))
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "no space left on device") {
		t.Fatalf("WriteFile of %d bytes into a %d-byte workspace = %v %q, want ResourceExhausted saying no space is left", bigFile, smallWorkspace, st.Code(), st.Message())
	}
	if _, err := writeFile(ctx, cli, agent, workdir+"/small.txt", []byte("fits\n")); err != nil {
		t.Fatalf("a small file after the failed writes: %v", err)
	}
}

// fileIs checks a workspace file's content.
func fileIs(ctx context.Context, t *testing.T, cli sandboxv1.SandboxServiceClient, agent, path, want string) {
	t.Helper()
	var b bytes.Buffer
	if err := readFile(ctx, cli, agent, path, &b); err != nil || b.String() != want {
		t.Fatalf("%s = %q %v, want %q", path, b.String(), err, want)
	}
}

func TestWorkspaceBoundDocker(t *testing.T) {
	needDiskImages(t)
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(as("alice"), 3*time.Minute)
	defer cancel()
	small := &sandboxv1.SandboxSpec{WorkspaceBytes: smallWorkspace}
	h.ensure(ctx, "small", small)
	checkBound(ctx, t, h.cli, "small", DefaultWorkdir)
	if got := h.mustExec(ctx, "small", "ls -A"); strings.Contains(got, "lost+found") {
		t.Errorf("the workspace shows the filesystem's lost+found: %q", got)
	}

	t.Run("another user's sandbox goes on", func(t *testing.T) {
		bctx := as("bob")
		h.ensure(bctx, "other", nil)
		if got := h.mustExec(bctx, "other", "head -c 1000000 /dev/zero > one.bin && wc -c < one.bin"); strings.TrimSpace(got) != "1000000" {
			t.Fatalf("the other sandbox wrote %q bytes", got)
		}
	})

	t.Run("the engine restarts the container on its own", func(t *testing.T) {
		// The engine binds the workspace's directory at every start, not
		// only at the service's: a restart by anyone keeps files and bound.
		sb := h.ensure(ctx, "small", small)
		timeout := 5
		if err := h.docker.ContainerRestart(ctx, sb.GetContainerId(), container.StopOptions{Timeout: &timeout}); err != nil {
			t.Fatal(err)
		}
		fileIs(ctx, t, h.cli, "small", DefaultWorkdir+"/small.txt", "fits\n")
		checkBound(ctx, t, h.cli, "small", DefaultWorkdir)
	})

	// A restart of the service adopts the running container; a stop and a
	// start of the sandbox make a new container on the same image.
	h.svc.Close(context.Background())
	h.start()
	fileIs(ctx, t, h.cli, "small", DefaultWorkdir+"/small.txt", "fits\n")
	checkBound(ctx, t, h.cli, "small", DefaultWorkdir)
	if _, err := h.cli.StopSandbox(ctx, &sandboxv1.StopSandboxRequest{AgentId: "small"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.cli.StopSandbox(as("bob"), &sandboxv1.StopSandboxRequest{AgentId: "other"}); err != nil {
		t.Fatal(err)
	}
	// A stopped sandbox holds no mount and no loop device.
	ents, err := os.ReadDir(filepath.Join(h.cfg.StateDir, "workspaces"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if mounted, _ := diskimage.Mounted(filepath.Join(h.cfg.StateDir, "workspaces", e.Name())); mounted {
			t.Errorf("%s is still mounted after the stop", e.Name())
		}
	}
	h.svc.Close(context.Background())
	h.start()
	// A bigger size asked for later does not reformat the workspace.
	h.ensure(ctx, "small", &sandboxv1.SandboxSpec{WorkspaceBytes: 2 * smallWorkspace})
	fileIs(ctx, t, h.cli, "small", DefaultWorkdir+"/small.txt", "fits\n")
	checkBound(ctx, t, h.cli, "small", DefaultWorkdir)

	if _, err := h.cli.DeleteSandbox(ctx, &sandboxv1.DeleteSandboxRequest{AgentId: "small"}); err != nil {
		t.Fatal(err)
	}
	imgs, _ := filepath.Glob(filepath.Join(h.cfg.StateDir, "workspaces", "*.img"))
	if len(imgs) != 1 { // bob's
		t.Fatalf("images after the deletion: %v, want only the other sandbox's", imgs)
	}
}

func TestWorkspaceBoundLocal(t *testing.T) {
	needDiskImages(t)
	svc, cli := newLocal(t, Config{AllowLocal: true, DefaultType: backend.Local})
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()
	spec := &sandboxv1.SandboxSpec{Type: backend.Local, WorkspaceBytes: smallWorkspace}
	if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "small", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	checkBound(ctx, t, cli, "small", DefaultWorkdir)
	// The temp dir is where else the sandbox's commands may write.
	r, err := execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: "small", Command: `head -c 32000000 /dev/zero > "$TMPDIR/big.bin"`})
	if err != nil || r.exit.GetExitCode() == 0 || !strings.Contains(r.stderr, "No space left on device") {
		t.Fatalf("filling $TMPDIR: exit %d stderr %q %v; want no space left", r.exit.GetExitCode(), r.stderr, err)
	}
	if _, err := execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: "small", Command: `rm -f "$TMPDIR/big.bin"`}); err != nil {
		t.Fatal(err)
	}
	bctx := as("bob")
	if _, err := cli.EnsureSandbox(bctx, &sandboxv1.EnsureSandboxRequest{AgentId: "other", Spec: &sandboxv1.SandboxSpec{Type: backend.Local}}); err != nil {
		t.Fatal(err)
	}
	if r, err := execOn(bctx, cli, &sandboxv1.ExecRequest{AgentId: "other", Command: "echo fine"}); err != nil || r.stdout != "fine\n" {
		t.Fatalf("the other sandbox: %q %v", r.stdout, err)
	}

	// A new service on the same state dir mounts the same image again.
	cfg := svc.cfg
	svc.Close(context.Background())
	svc2, err := New(cfg, WithEngineDialer(noDocker), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc2.Close(context.Background()) })
	cli = serve(t, svc2)
	if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "small", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	fileIs(ctx, t, cli, "small", DefaultWorkdir+"/small.txt", "fits\n")
	checkBound(ctx, t, cli, "small", DefaultWorkdir)

	if _, err := cli.DeleteSandbox(ctx, &sandboxv1.DeleteSandboxRequest{AgentId: "small"}); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(cfg.StateDir, "local", sandboxKey(cfg.ManagerID, "alice", "small")+".img")
	if _, err := os.Stat(img); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the image after the deletion: %v, want it gone", err)
	}
}

func TestWorkspaceSizeLimits(t *testing.T) {
	t.Parallel()
	_, cli := newLocal(t, Config{AllowLocal: true, MaxWorkspaceBytes: 64 << 20, WorkspaceBytes: 32 << 20})
	ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
	defer cancel()
	for _, size := range []int64{64<<20 + 1, 1 << 20, -1} {
		_, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "a", Spec: &sandboxv1.SandboxSpec{Type: backend.Local, WorkspaceBytes: size}})
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "workspace_bytes") {
			t.Errorf("workspace_bytes %d: %v %q, want InvalidArgument naming workspace_bytes", size, st.Code(), st.Message())
		}
	}
	if _, err := New(Config{StateDir: t.TempDir(), WorkspaceBytes: 2 << 30, MaxWorkspaceBytes: 1 << 30}, WithEngineDialer(noDocker)); err == nil {
		t.Error("a default workspace size above the maximum was accepted")
	}
}

func TestWorkspaceBoundFallback(t *testing.T) {
	t.Parallel()
	cannot := withDiskProbe(func(context.Context, string) error { return errors.New("mount: permission denied") })
	t.Run("unbounded with a warning", func(t *testing.T) {
		var log testenv.LogBuffer
		_, cli := newLocal(t, Config{AllowLocal: true}, cannot, WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		if !strings.Contains(log.String(), "workspaces are UNBOUNDED") {
			t.Fatalf("start-up log %q does not warn that workspaces are unbounded", log.String())
		}
		ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
		defer cancel()
		if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "a", Spec: &sandboxv1.SandboxSpec{Type: backend.Local}}); err != nil {
			t.Fatal(err)
		}
		if _, err := writeFile(ctx, cli, "a", "/workspace/f.txt", []byte("x")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("refused when required", func(t *testing.T) {
		_, err := New(Config{StateDir: t.TempDir(), AllowLocal: true, RequireWorkspaceBound: true}, cannot, WithEngineDialer(noDocker),
			WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err == nil || !strings.Contains(err.Error(), "require-workspace-bound") {
			t.Fatalf("New = %v, want a refusal naming -require-workspace-bound", err)
		}
	})
}
