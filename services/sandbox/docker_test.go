package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
)

func TestHardening(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tests := []struct {
		name string
		spec *sandboxv1.SandboxSpec
		mem  int64
		cpus int64
		pids int64
		net  string
	}{
		{"defaults", nil, DefaultMemory, DefaultNanoCPUs, DefaultPids, "none"},
		{"from spec", &sandboxv1.SandboxSpec{MemoryBytes: 96 << 20, NanoCpus: 500_000_000, PidsLimit: 64, ReadOnlyRootfs: true}, 96 << 20, 500_000_000, 64, "none"},
		{"bridge", &sandboxv1.SandboxSpec{Network: "bridge"}, DefaultMemory, DefaultNanoCPUs, DefaultPids, "bridge"},
		{"root", &sandboxv1.SandboxSpec{User: "root"}, DefaultMemory, DefaultNanoCPUs, DefaultPids, "none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
			defer cancel()
			agent := "hard-" + strings.ReplaceAll(tc.name, " ", "-")
			sb := h.ensure(ctx, agent, tc.spec)
			in, err := h.inspect(sb.GetContainerName())
			if err != nil {
				t.Fatal(err)
			}
			hc := in.HostConfig
			if string(hc.NetworkMode) != tc.net || sb.GetNetwork() != tc.net {
				t.Errorf("network %q, want %q", hc.NetworkMode, tc.net)
			}
			if len(hc.CapDrop) != 1 || hc.CapDrop[0] != "ALL" || len(hc.CapAdd) != 0 {
				t.Errorf("caps: drop %v add %v", hc.CapDrop, hc.CapAdd)
			}
			if len(hc.SecurityOpt) != 1 || hc.SecurityOpt[0] != "no-new-privileges" {
				t.Errorf("security opts %v", hc.SecurityOpt)
			}
			if hc.Memory != tc.mem || hc.NanoCPUs != tc.cpus || hc.PidsLimit == nil || *hc.PidsLimit != tc.pids {
				t.Errorf("limits: mem %d cpus %d pids %v", hc.Memory, hc.NanoCPUs, hc.PidsLimit)
			}
			wantUser, wantID := "1000:1000", "1000\n"
			if tc.spec.GetUser() == "root" {
				wantUser, wantID = "0:0", "0\n"
			}
			if in.Config.User != wantUser {
				t.Errorf("user %q, want %q", in.Config.User, wantUser)
			}
			if hc.Privileged {
				t.Error("privileged")
			}
			if hc.ReadonlyRootfs != (tc.spec != nil && tc.spec.GetReadOnlyRootfs()) {
				t.Errorf("read-only rootfs %v", hc.ReadonlyRootfs)
			}
			nets := h.mustExec(ctx, agent, "ls /sys/class/net | sort | tr '\\n' ' '")
			if tc.net == "none" && nets != "lo " {
				t.Errorf("interfaces inside: %q, want only lo", nets)
			}
			if tc.net == "bridge" && !strings.Contains(nets, "eth0") {
				t.Errorf("interfaces inside: %q, want eth0", nets)
			}
			if out := h.mustExec(ctx, agent, "id -u; grep CapEff /proc/self/status; grep NoNewPrivs /proc/self/status"); !strings.HasPrefix(out, wantID) ||
				!strings.Contains(out, "0000000000000000") || !strings.Contains(out, "NoNewPrivs:\t1") {
				t.Errorf("inside: %q", out)
			}
			// The socket directory is the host's: nothing may be stored there.
			if r, err := h.exec(ctx, agent, "touch /run/wick/x || chmod 777 /run/wick"); err != nil || r.exit.GetExitCode() == 0 {
				t.Errorf("socket dir writable from the sandbox: %+v %v", r, err)
			}
			h.mustExec(ctx, agent, "echo ok > /workspace/written")
			if tc.spec.GetReadOnlyRootfs() {
				r, err := h.exec(ctx, agent, "touch /etc/x")
				if err != nil || r.exit.GetExitCode() == 0 {
					t.Errorf("write to read-only root: %+v %v", r, err)
				}
				h.mustExec(ctx, agent, "echo ok > /workspace/ok && echo ok > /tmp/ok")
			}
		})
	}
}

// killDaemon kills wick-daemon inside a sandbox, behind the service's back.
func (h *harness) killDaemon(ctx context.Context, containerID string) {
	h.t.Helper()
	res, err := dockerbox.Run(ctx, h.docker, containerID, dockerbox.RunOptions{User: "1000:1000",
		Cmd: []string{"sh", "-c", "kill -9 $(pidof wick-daemon)"}, MaxOutput: 4096})
	if err != nil || res.ExitCode != 0 {
		h.t.Fatalf("kill daemon: %v %+v", err, res)
	}
}

func TestDaemonFallbackAndReinjection(t *testing.T) {
	t.Parallel()
	m := testenv.NewMeters(t)
	h := newHarnessWith(t, []Option{WithMeterProvider(m)})
	var fallbacks atomic.Int32
	h.svc.onFallback = func(string) { fallbacks.Add(1) }
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()
	sb := h.ensure(ctx, "a", nil)
	if _, err := writeFile(ctx, h.cli, "a", "/workspace/data.txt", []byte("before\n")); err != nil {
		t.Fatal(err)
	}

	ops := []struct {
		name string
		run  func() error
	}{
		{"exec", func() error {
			out := h.mustExec(ctx, "a", "echo via-$((40+2)); pwd")
			if out != "via-42\n/workspace\n" {
				t.Errorf("exec output %q", out)
			}
			return nil
		}},
		{"read", func() error {
			var b bytes.Buffer
			if err := readFile(ctx, h.cli, "a", "/workspace/data.txt", &b); err != nil {
				return err
			}
			if !strings.HasPrefix(b.String(), "before\n") {
				t.Errorf("read %q", b.String())
			}
			return nil
		}},
		{"write", func() error {
			_, err := writeFile(ctx, h.cli, "a", "/workspace/new.txt", []byte("fallback write\n"))
			return err
		}},
		{"ls", func() error {
			_, err := h.cli.Ls(ctx, &sandboxv1.LsRequest{AgentId: "a", Path: "/workspace"})
			return err
		}},
		{"edit", func() error {
			_, err := h.cli.EditFile(ctx, &sandboxv1.EditFileRequest{AgentId: "a", Path: "/workspace/data.txt", OldText: "before", NewText: "before\nafter"})
			return err
		}},
		{"grep", func() error {
			r, err := h.cli.Grep(ctx, &sandboxv1.GrepRequest{AgentId: "a", Pattern: "fallback"})
			if err == nil && len(r.GetMatches()) != 1 {
				t.Errorf("grep %v", r)
			}
			return err
		}},
		{"glob", func() error {
			_, err := h.cli.Glob(ctx, &sandboxv1.GlobRequest{AgentId: "a", Pattern: "*.txt"})
			return err
		}},
	}
	for _, op := range ops {
		// Each op meets a dead daemon: the call must still succeed, through
		// Docker exec, and the daemon must come back on its own.
		h.svc.mu.Lock()
		b := h.svc.boxes[sandboxKey(h.manager, "alice", "a")]
		h.svc.mu.Unlock()
		testenv.Eventually(t, 30*time.Second, func() bool {
			v := b.view()
			b.mu.Lock()
			re := b.reinjecting
			b.mu.Unlock()
			return v.transport == transportDaemon && !re
		}, "daemon transport")
		before := fallbacks.Load()
		h.killDaemon(ctx, sb.GetContainerId())
		if err := op.run(); err != nil {
			t.Fatalf("%s with a dead daemon: %v", op.name, err)
		}
		if fallbacks.Load() == before {
			t.Fatalf("%s did not take the fallback", op.name)
		}
		// Every fallback is counted, under the method that took it.
		if got := m.Value("wick.sandbox.exec_fallbacks"); got != float64(fallbacks.Load()) {
			t.Fatalf("after %s: exec_fallbacks = %v, fallbacks taken %d", op.name, got, fallbacks.Load())
		}
	}
	testenv.Eventually(t, 30*time.Second, func() bool {
		g, err := h.cli.GetSandbox(ctx, &sandboxv1.GetSandboxRequest{AgentId: "a"})
		return err == nil && g.GetSandbox().GetTransport() == transportDaemon
	}, "daemon back")
	if out := h.mustExec(ctx, "a", "cat data.txt new.txt"); out != "before\nafter\nfallback write\n" {
		t.Fatalf("files after fallback: %q", out)
	}
}

func TestConcurrentEnsure(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()
	// A second instance sharing the manager id and state dir, as replicas do.
	other := serveAnother(t, h)
	clients := []sandboxv1.SandboxServiceClient{h.cli, other, h.cli, other, h.cli, other}
	ids := make([]string, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			r, err := c.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "same"})
			if err != nil {
				t.Errorf("ensure %d: %v", i, err)
				return
			}
			ids[i] = r.GetSandbox().GetContainerId()
		})
	}
	wg.Wait()
	f := filters.NewArgs(filters.Arg("label", dockerbox.LabelManager+"="+h.manager))
	cs, err := h.docker.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 {
		t.Fatalf("%d containers for one sandbox", len(cs))
	}
	for i, id := range ids {
		if id != cs[0].ID {
			t.Errorf("ensure %d returned %s, the container is %s", i, id, cs[0].ID)
		}
	}
	for _, c := range []sandboxv1.SandboxServiceClient{h.cli, other} {
		if r, err := execOn(ctx, c, &sandboxv1.ExecRequest{AgentId: "same", Command: "true"}); err != nil || r.exit.GetExitCode() != 0 {
			t.Fatalf("exec after concurrent ensure: %+v %v", r, err)
		}
	}
}

// serveAnother starts a second service instance on the harness's config.
func serveAnother(t *testing.T, h *harness) sandboxv1.SandboxServiceClient {
	svc, err := New(h.cfg, WithLogger(h.svc.log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	return serve(t, svc)
}

func TestIdleReapingAndTTL(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	h := newHarness(t, func(c *Config) { c.IdleTimeout = 30 * time.Minute })
	h.start(WithClock(clock))
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()

	idle := h.ensure(ctx, "idle", nil)
	ttl := h.ensure(ctx, "ttl", &sandboxv1.SandboxSpec{Ttl: durationpb.New(10 * time.Minute)})
	if ttl.GetExpiresAt() == nil {
		t.Fatal("no expires_at with a ttl")
	}
	advance(11 * time.Minute)
	h.mustExec(ctx, "idle", "true") // keeps "idle" in use; "ttl" expires regardless
	if n := h.svc.reapOnce(ctx); n != 1 {
		t.Fatalf("reaped %d, want the expired one", n)
	}
	if _, err := h.inspect(ttl.GetContainerName()); !dockerbox.IsNotFound(err) {
		t.Fatalf("expired container still there: %v", err)
	}
	advance(29 * time.Minute)
	if n := h.svc.reapOnce(ctx); n != 0 {
		t.Fatalf("reaped %d before the idle timeout", n)
	}
	advance(2 * time.Minute)
	if n := h.svc.reapOnce(ctx); n != 1 {
		t.Fatalf("reaped %d, want the idle one", n)
	}
	g, err := h.cli.GetSandbox(ctx, &sandboxv1.GetSandboxRequest{AgentId: "idle"})
	if err != nil || g.GetSandbox().GetState() != stateStopped {
		t.Fatalf("idle sandbox after reaping: %v %v", g, err)
	}
	if _, err := h.inspect(idle.GetContainerName()); !dockerbox.IsNotFound(err) {
		t.Fatalf("idle container still there: %v", err)
	}
}

func TestReaperLoop(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.IdleTimeout = time.Millisecond; c.ReapInterval = 20 * time.Millisecond })
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()
	sb := h.ensure(ctx, "idle", nil)
	testenv.Eventually(t, 30*time.Second, func() bool {
		_, err := h.inspect(sb.GetContainerName())
		return dockerbox.IsNotFound(err)
	}, "idle sandbox stopped by the reaper")
}

func TestOrphanAdoption(t *testing.T) {
	t.Parallel()
	// Adoption waits this long for the daemon of a container that started
	// moments ago (another instance may be starting it); keep that short here.
	h := newHarness(t, func(c *Config) { c.DaemonStartTimeout = 4 * time.Second })
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()
	alive := h.ensure(ctx, "alive", nil)
	dead := h.ensure(ctx, "dead", nil)
	if _, err := writeFile(ctx, h.cli, "alive", "/workspace/keep.txt", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	h.killDaemon(ctx, dead.GetContainerId())
	// The service goes away (as in a crash, its containers keep running) and
	// a new instance starts on the same manager id and state dir.
	if err := h.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	h.start()

	g, err := h.cli.GetSandbox(ctx, &sandboxv1.GetSandboxRequest{AgentId: "alive"})
	if err != nil || g.GetSandbox().GetContainerId() != alive.GetContainerId() || g.GetSandbox().GetTransport() != transportDaemon {
		t.Fatalf("adopted sandbox: %v %v", g, err)
	}
	if out := h.mustExec(ctx, "alive", "cat keep.txt"); out != "kept" {
		t.Fatalf("adopted workspace: %q", out)
	}
	if _, err := h.inspect(dead.GetContainerName()); !dockerbox.IsNotFound(err) {
		t.Fatalf("orphan container not removed: %v", err)
	}
	// Its workspace outlived it: the sandbox is known as stopped, and a call starts it.
	g, err = h.cli.GetSandbox(ctx, &sandboxv1.GetSandboxRequest{AgentId: "dead"})
	if err != nil || g.GetSandbox().GetState() != stateStopped {
		t.Fatalf("sandbox of a removed orphan: %v %v", g, err)
	}
	h.mustExec(ctx, "dead", "true")

	// A container removed behind the service's back is replaced by Ensure.
	if err := h.docker.ContainerRemove(ctx, alive.GetContainerId(), container.RemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	again := h.ensure(ctx, "alive", nil)
	if again.GetContainerId() == alive.GetContainerId() || again.GetTransport() != transportDaemon {
		t.Fatalf("ensure after removal: %+v", again)
	}
	if out := h.mustExec(ctx, "alive", "cat keep.txt"); out != "kept" {
		t.Fatalf("workspace after removal: %q", out)
	}
}

func TestCrossUserIsolation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	actx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()
	bctx, bcancel := context.WithTimeout(as("bob"), 2*time.Minute)
	defer bcancel()
	a := h.ensure(actx, "shared-name", nil)
	if _, err := writeFile(actx, h.cli, "shared-name", "/workspace/secret", []byte("alice's")); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"get": func() error {
			_, err := h.cli.GetSandbox(bctx, &sandboxv1.GetSandboxRequest{AgentId: "shared-name"})
			return err
		},
		"exec": func() error { _, err := h.exec(bctx, "shared-name", "cat secret"); return err },
		"read": func() error { return readFile(bctx, h.cli, "shared-name", "/workspace/secret", io.Discard) },
		"ls": func() error {
			_, err := h.cli.Ls(bctx, &sandboxv1.LsRequest{AgentId: "shared-name"})
			return err
		},
		"write": func() error { _, err := writeFile(bctx, h.cli, "shared-name", "/workspace/x", []byte("x")); return err },
		"stop": func() error {
			_, err := h.cli.StopSandbox(bctx, &sandboxv1.StopSandboxRequest{AgentId: "shared-name"})
			return err
		},
		"delete": func() error {
			_, err := h.cli.DeleteSandbox(bctx, &sandboxv1.DeleteSandboxRequest{AgentId: "shared-name"})
			return err
		},
	}
	for name, call := range calls {
		if err := call(); status.Code(err) != codes.NotFound {
			t.Errorf("bob %s on alice's sandbox: %v, want NotFound", name, err)
		}
	}
	if l, err := h.cli.ListSandboxes(bctx, &sandboxv1.ListSandboxesRequest{}); err != nil || len(l.GetSandboxes()) != 0 {
		t.Fatalf("bob's list: %v %v", l, err)
	}
	b := h.ensure(bctx, "shared-name", nil)
	if b.GetContainerId() == a.GetContainerId() {
		t.Fatal("bob got alice's container")
	}
	if r, err := h.exec(bctx, "shared-name", "cat secret"); err != nil || r.exit.GetExitCode() == 0 {
		t.Fatalf("bob read alice's file: %+v %v", r, err)
	}
	if _, err := h.cli.GetSandbox(context.Background(), &sandboxv1.GetSandboxRequest{AgentId: "shared-name"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("no identity: %v", err)
	}
}

func TestLargeFile(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(as("alice"), 3*time.Minute)
	defer cancel()
	h.ensure(ctx, "big", &sandboxv1.SandboxSpec{MemoryBytes: 256 << 20})
	data := make([]byte, 100<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	w, err := writeFile(ctx, h.cli, "big", "/workspace/blob.bin", data)
	if err != nil || w.GetBytesWritten() != int64(len(data)) {
		t.Fatalf("write: %v %v", w, err)
	}
	hash := sha256.New()
	if err := readFile(ctx, h.cli, "big", "/workspace/blob.bin", hash); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(hash.Sum(nil), want[:]) {
		t.Fatal("100 MB file changed on the round trip")
	}
	if out := h.mustExec(ctx, "big", "wc -c < blob.bin"); strings.TrimSpace(out) != "104857600" {
		t.Fatalf("size inside: %q", out)
	}
}

func TestTerminal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()
	sb := h.ensure(ctx, "term", nil)
	for _, path := range []string{transportDaemon, transportExec} {
		t.Run(path, func(t *testing.T) {
			if path == transportExec {
				h.killDaemon(ctx, sb.GetContainerId())
			}
			terminalRoundTrip(ctx, t, h.cli, "term")
		})
	}
}

func TestRemoteEngine(t *testing.T) {
	t.Parallel()
	// The local engine named by address stands in for a remote one: the
	// service cannot bind-mount from it, so the binaries are copied in and
	// every call takes Docker exec.
	const host = "unix:///var/run/docker.sock"
	h := newHarness(t, func(c *Config) { c.AllowedDockerHosts = []string{host} })
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()
	sb := h.ensure(ctx, "remote", &sandboxv1.SandboxSpec{DockerHost: host})
	if sb.GetTransport() != transportExec || sb.GetDockerHost() != host {
		t.Fatalf("remote sandbox: %+v", sb)
	}
	if out := h.mustExec(ctx, "remote", "echo remote; id -u"); out != "remote\n1000\n" {
		t.Fatalf("exec: %q", out)
	}
	r, err := execOn(ctx, h.cli, &sandboxv1.ExecRequest{AgentId: "remote", Command: "cat; sleep 5", Stdin: []byte("in"), Timeout: durationpb.New(300 * time.Millisecond)})
	if err != nil || r.stdout != "in" || !r.exit.GetTimedOut() {
		t.Fatalf("exec with stdin and a timeout: %+v %v", r, err)
	}
	r, err = execOn(ctx, h.cli, &sandboxv1.ExecRequest{AgentId: "remote", Command: "sleep 5", Timeout: durationpb.New(300 * time.Millisecond)})
	if err != nil || !r.exit.GetTimedOut() {
		t.Fatalf("exec with a timeout: %+v %v", r, err)
	}
	bin := []byte{0, 1, 2, 255, 254, '\n'}
	if _, err := writeFile(ctx, h.cli, "remote", "/workspace/b.bin", bin); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := readFile(ctx, h.cli, "remote", "/workspace/b.bin", &got); err != nil || !bytes.Equal(got.Bytes(), bin) {
		t.Fatalf("binary round trip: %v %v", got.Bytes(), err)
	}
	if _, err := h.cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "x", Spec: &sandboxv1.SandboxSpec{DockerHost: "tcp://10.1.2.3:2376"}}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("engine not allowed: %v", err)
	}
}

func TestExecLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()
	h.ensure(ctx, "lim", &sandboxv1.SandboxSpec{ExecTimeout: durationpb.New(300 * time.Millisecond), MaxOutputBytes: 10,
		Env: map[string]string{"FROM_SPEC": "spec-env"}})
	tests := []struct {
		name      string
		req       *sandboxv1.ExecRequest
		stdout    string
		timedOut  bool
		truncated bool
	}{
		{"spec timeout", &sandboxv1.ExecRequest{Command: "sleep 5"}, "", true, false},
		{"spec output cap", &sandboxv1.ExecRequest{Command: "echo 0123456789abcdef"}, "0123456789", false, true},
		{"request overrides", &sandboxv1.ExecRequest{Command: "sleep 0.5; echo 0123456789abcdef", Timeout: durationpb.New(10 * time.Second), MaxOutputBytes: 100}, "0123456789abcdef\n", false, false},
		{"env, stdin and workdir", &sandboxv1.ExecRequest{Command: "mkdir -p d && cd d && cat && echo $FROM_SPEC $X", Env: map[string]string{"X": "x"}, Stdin: []byte("in "), MaxOutputBytes: 100}, "in spec-env x\n", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.AgentId = "lim"
			r, err := execOn(ctx, h.cli, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if r.stdout != tc.stdout || r.exit.GetTimedOut() != tc.timedOut || r.exit.GetTruncated() != tc.truncated {
				t.Fatalf("got stdout %q exit %v", r.stdout, r.exit)
			}
		})
	}
	if _, err := execOn(ctx, h.cli, &sandboxv1.ExecRequest{AgentId: "lim", Command: "true", Timeout: durationpb.New(2 * time.Hour)}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("timeout over the limit: %v", err)
	}
	if _, err := execOn(ctx, h.cli, &sandboxv1.ExecRequest{AgentId: "lim", Command: "pwd", Workdir: "/etc"}); status.Code(err) == codes.OK {
		t.Fatal("workdir outside the workspace accepted")
	}
}

func TestResolveUser(t *testing.T) {
	t.Parallel()
	docker, image := dockerEnv(t)
	users := dockerbox.NewUsers()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tests := []struct {
		want     string
		name     string
		uid, gid int
		err      bool
	}{
		{"", "1000:1000", 1000, 1000, false},
		{"wick", "1000:1000", 1000, 1000, false},
		{"root", "0:0", 0, 0, false},
		{"1000:2000", "1000:2000", 1000, 2000, false},
		{"4242", "4242:4242", 4242, 4242, false},
		{"nobody", "65534:65534", 65534, 65534, false},
		{"ghost", "", 0, 0, true},
		{"wick:staff", "", 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			u, err := users.Resolve(ctx, docker, image, tc.want)
			if (err != nil) != tc.err {
				t.Fatalf("err %v", err)
			}
			if !tc.err && (u.Name != tc.name || u.UID != tc.uid || u.GID != tc.gid) {
				t.Fatalf("got %+v", u)
			}
		})
	}
}

func TestContainerDied(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()
	sb := h.ensure(ctx, "dies", nil)
	h.mustExec(ctx, "dies", "echo survives > kept")
	if err := h.docker.ContainerKill(ctx, sb.GetContainerId(), "KILL"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() bool {
		in, err := h.inspect(sb.GetContainerName())
		return err == nil && in.State != nil && !in.State.Running
	}, "container exit")
	// The call that meets the dead container fails as Unavailable, and the
	// sandbox is marked stopped; the next call starts a fresh container.
	if _, err := h.exec(ctx, "dies", "true"); status.Code(err) != codes.Unavailable {
		t.Fatalf("exec in a dead container: %v", err)
	}
	testenv.Eventually(t, 30*time.Second, func() bool {
		g, err := h.cli.GetSandbox(ctx, &sandboxv1.GetSandboxRequest{AgentId: "dies"})
		return err == nil && g.GetSandbox().GetState() == stateStopped
	}, "sandbox marked stopped")
	if out := h.mustExec(ctx, "dies", "cat kept"); out != "survives\n" {
		t.Fatalf("workspace after the container died: %q", out)
	}
}
