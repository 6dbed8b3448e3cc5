package sandbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
)

// waitWarm polls, with a deadline, until the pool holds n ready
// containers of the default image, and returns the first: the refill runs
// in the background and tells no one.
func (h *harness) waitWarm(n int) *warmContainer {
	h.t.Helper()
	var ws readyWarm
	testenv.Eventually(h.t, time.Minute, func() bool {
		h.svc.warm.mu.Lock()
		ws = h.svc.warm.ready[h.image]
		h.svc.warm.mu.Unlock()
		return len(ws) == n
	}, "warm pool holds %v containers, want %d", &ws, n)
	if n == 0 {
		return nil
	}
	return ws[0]
}

// readyWarm is the pool's ready list as waitWarm saw it last; it formats
// as its length.
type readyWarm []*warmContainer

func (r *readyWarm) String() string { return strconv.Itoa(len(*r)) }

// unclaimedWarm lists the manager's warm containers that are still named
// as warm.
func (h *harness) unclaimedWarm(ctx context.Context) []string {
	h.t.Helper()
	f := filters.NewArgs(filters.Arg("label", dockerbox.LabelManager+"="+h.manager), filters.Arg("label", dockerbox.LabelWarm))
	cs, err := h.docker.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		if len(c.Names) > 0 && strings.HasPrefix(c.Names[0], "/"+warmPrefix) {
			out = append(out, c.Names[0])
		}
	}
	return out
}

// TestWarmPoolClaim: a new sandbox takes a warm container, with its
// owner's limits and name, and the pool refills; a returning user keeps
// the workspace (no warm container); a restarted service adopts the
// claimed container; deleting the sandbox removes both volumes; Close
// reaps the ready containers.
func TestWarmPoolClaim(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h := newHarness(t, func(c *Config) { c.WarmPool = 1 })
	// The harness's service has no registry; this one replaces it.
	ctx, cancel := context.WithTimeout(as("alice"), 3*time.Minute)
	defer cancel()
	if err := h.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	h.start(WithMetrics(reg))
	warm := h.waitWarm(1)

	sb := h.ensure(ctx, "a1", &sandboxv1.SandboxSpec{MemoryBytes: 96 << 20, NanoCpus: 500_000_000, PidsLimit: 64})
	if sb.GetContainerId() != warm.id || sb.GetTransport() != transportDaemon {
		t.Fatalf("sandbox %+v did not take warm container %s", sb, warm.id)
	}
	in, err := h.inspect(sb.GetContainerName())
	if err != nil {
		t.Fatal(err)
	}
	hc := in.HostConfig
	if in.Name != "/"+sandboxPrefix+sandboxKey(h.manager, "alice", "a1") || hc.Memory != 96<<20 || hc.NanoCPUs != 500_000_000 || *hc.PidsLimit != 64 || hc.MemorySwap != 96<<20 {
		t.Fatalf("claimed container: name %s memory %d cpus %d pids %d", in.Name, hc.Memory, hc.NanoCPUs, *hc.PidsLimit)
	}
	if got := testutil.ToFloat64(h.svc.warm.claims.WithLabelValues("hit")); got != 1 {
		t.Fatalf("hits = %v", got)
	}
	if n, err := testutil.GatherAndCount(reg, "wick_sandbox_warm_pool_claims_total", "wick_sandbox_warm_pool_ready"); err != nil || n != 2 {
		t.Fatalf("registered warm pool metrics: %d, %v", n, err)
	}
	if _, err := writeFile(ctx, h.cli, "a1", "/workspace/keep.txt", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	h.waitWarm(1)

	// A returning user: stopped, then started again on the same workspace,
	// never on a warm container.
	if _, err := h.cli.StopSandbox(ctx, &sandboxv1.StopSandboxRequest{AgentId: "a1"}); err != nil {
		t.Fatal(err)
	}
	again := h.ensure(ctx, "a1", nil)
	if ain, err := h.inspect(again.GetContainerName()); err != nil || ain.Config.Labels[dockerbox.LabelWarm] != "" || ain.ID == warm.id {
		t.Fatalf("a returning user's container: %v, labels %v", err, ain.Config.Labels)
	}
	if out := h.mustExec(ctx, "a1", "cat keep.txt"); out != "kept" {
		t.Fatalf("workspace after restart: %q", out)
	}
	if got := testutil.ToFloat64(h.svc.warm.claims.WithLabelValues("hit")); got != 1 {
		t.Fatalf("hits after a returning user = %v", got)
	}

	// A new sandbox claims again; the service restarts and adopts it.
	b2 := h.ensure(ctx, "a2", nil)
	if _, err := writeFile(ctx, h.cli, "a2", "/workspace/two.txt", []byte("two")); err != nil {
		t.Fatal(err)
	}
	if err := h.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if left := h.unclaimedWarm(ctx); len(left) != 0 {
		t.Fatalf("warm containers left after Close: %v", left)
	}
	h.start()
	g, err := h.cli.GetSandbox(ctx, &sandboxv1.GetSandboxRequest{AgentId: "a2"})
	if err != nil || g.GetSandbox().GetContainerId() != b2.GetContainerId() || g.GetSandbox().GetTransport() != transportDaemon {
		t.Fatalf("claimed sandbox after a restart: %v %v", g, err)
	}
	if out := h.mustExec(ctx, "a2", "cat two.txt"); out != "two" {
		t.Fatalf("adopted workspace: %q", out)
	}

	// Deleting removes the sandbox's volume and the workspace it came with.
	vol := in.Mounts[0].Name
	for _, m := range in.Mounts {
		if m.Destination == DefaultWorkdir {
			vol = m.Name
		}
	}
	if _, err := h.cli.DeleteSandbox(ctx, &sandboxv1.DeleteSandboxRequest{AgentId: "a1"}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{vol, volumePrefix + sandboxKey(h.manager, "alice", "a1")} {
		if _, err := h.docker.VolumeInspect(ctx, v); !dockerbox.IsNotFound(err) {
			t.Fatalf("volume %s after delete: %v", v, err)
		}
	}
}

// TestWarmPoolBurst: more new sandboxes at once than the pool holds all
// start, the ones that found no warm container cold, without an error.
func TestWarmPoolBurst(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.WarmPool = 1 })
	h.waitWarm(1)
	ctx, cancel := context.WithTimeout(as("bob"), 3*time.Minute)
	defer cancel()
	const n = 3
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agent := fmt.Sprintf("burst-%d", i)
			r, err := h.cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: agent})
			if err == nil && r.GetSandbox().GetTransport() != transportDaemon {
				err = fmt.Errorf("%s: transport %q", agent, r.GetSandbox().GetTransport())
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	hits := testutil.ToFloat64(h.svc.warm.claims.WithLabelValues("hit"))
	misses := testutil.ToFloat64(h.svc.warm.claims.WithLabelValues("miss"))
	if hits+misses != n || hits > 1 {
		t.Fatalf("hits %v, misses %v; want %d claims, at most one hit", hits, misses, n)
	}
	for i := range n {
		h.mustExec(ctx, fmt.Sprintf("burst-%d", i), "true")
	}
}

// TestWarmPoolReapedAtStart: an instance that starts removes the warm
// containers nobody claimed, which a crashed instance left behind.
func TestWarmPoolReapedAtStart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.WarmPool = 2 })
	h.waitWarm(2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if left := h.unclaimedWarm(ctx); len(left) != 2 {
		t.Fatalf("warm containers on the engine: %v", left)
	}
	// A second instance on the same manager id, as after a crash.
	h.cfg.WarmPool = 0
	h.start()
	if left := h.unclaimedWarm(ctx); len(left) != 0 {
		t.Fatalf("warm containers left by another instance: %v", left)
	}
}

func TestWarmPoolBounds(t *testing.T) {
	t.Parallel()
	for _, n := range []int{-1, MaxWarmPool + 1} {
		_, err := New(Config{StateDir: t.TempDir(), WarmPool: n}, WithEngineDialer(noDocker))
		if err == nil || !strings.Contains(err.Error(), "warm pool") {
			t.Fatalf("WarmPool %d: %v", n, err)
		}
	}
}

// TestWarmPoolSkipsExistingWorkspace: a sandbox the service does not know
// whose workspace volume exists (a returning user, seen by another
// instance) starts on that workspace, not on a warm container.
func TestWarmPoolSkipsExistingWorkspace(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.WarmPool = 1 })
	h.waitWarm(1)
	ctx, cancel := context.WithTimeout(as("carol"), 2*time.Minute)
	defer cancel()
	own := volumePrefix + sandboxKey(h.manager, "carol", "back")
	if _, err := h.docker.VolumeCreate(ctx, volume.CreateOptions{Name: own, Labels: map[string]string{dockerbox.LabelManager: h.manager, testLabel: "1"}}); err != nil {
		t.Fatal(err)
	}
	sb := h.ensure(ctx, "back", nil)
	in, err := h.inspect(sb.GetContainerName())
	if err != nil || in.Config.Labels[dockerbox.LabelWarm] != "" {
		t.Fatalf("sandbox on an existing workspace: %v, labels %v", err, in.Config.Labels)
	}
	for _, m := range in.Mounts {
		if m.Destination == DefaultWorkdir && m.Name != own {
			t.Fatalf("workspace mounted from %s, want %s", m.Name, own)
		}
	}
	if got := testutil.ToFloat64(h.svc.warm.claims.WithLabelValues("hit")) + testutil.ToFloat64(h.svc.warm.claims.WithLabelValues("miss")); got != 0 {
		t.Fatalf("claims counted: %v", got)
	}
}
