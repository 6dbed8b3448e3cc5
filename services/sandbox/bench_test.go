package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/prometheus/client_golang/prometheus/testutil"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/wickfs/confine"
)

// percentiles reports p50 and p99 of samples in the given unit.
func percentiles(b *testing.B, samples []time.Duration, unit time.Duration, name string) time.Duration {
	b.Helper()
	if len(samples) == 0 {
		return 0
	}
	slices.Sort(samples)
	p := func(q float64) time.Duration { return samples[min(len(samples)-1, int(q*float64(len(samples))))] }
	suffix := map[time.Duration]string{time.Microsecond: "µs", time.Millisecond: "ms"}[unit]
	b.ReportMetric(float64(p(0.50))/float64(unit), name+"p50-"+suffix)
	b.ReportMetric(float64(p(0.99))/float64(unit), name+"p99-"+suffix)
	return p(0.50)
}

// BenchmarkEnsure measures EnsureSandbox of a new sandbox until its daemon
// answers (target p50 ≤ 500 ms). Deleting it is not timed.
func BenchmarkEnsure(b *testing.B) {
	percentiles(b, ensureNew(b, newHarness(b), nil), time.Millisecond, "")
}

// ensureNew times b.N EnsureSandbox calls of new sandboxes on h until their
// daemon answers; after each, untimed, it deletes the sandbox and runs
// between (nil: nothing).
func ensureNew(b *testing.B, h *harness, between func()) []time.Duration {
	ctx := as("bench")
	var samples []time.Duration
	b.ResetTimer()
	for i := range b.N {
		agent := fmt.Sprintf("ensure-%d", i)
		start := time.Now()
		sb := h.ensure(ctx, agent, nil)
		samples = append(samples, time.Since(start))
		b.StopTimer()
		if sb.GetTransport() != transportDaemon {
			b.Fatalf("transport %q", sb.GetTransport())
		}
		if _, err := h.cli.DeleteSandbox(ctx, &sandboxv1.DeleteSandboxRequest{AgentId: agent}); err != nil {
			b.Fatal(err)
		}
		if between != nil {
			between()
		}
		b.StartTimer()
	}
	b.StopTimer()
	return samples
}

// BenchmarkExecTrue measures the round trip of `true` through the service,
// via the daemon and via Docker exec, in the same run (target: daemon p50 ≤
// 2 ms and ≥ 20× faster). The Docker-exec path is a sandbox on an engine
// named by address, which the service reaches only through Docker exec.
func BenchmarkExecTrue(b *testing.B) {
	const host = "unix:///var/run/docker.sock"
	h := newHarness(b, func(c *Config) { c.AllowedDockerHosts = []string{host} })
	ctx, cancel := context.WithTimeout(as("bench"), 10*time.Minute)
	defer cancel()
	h.ensure(ctx, "daemon", nil)
	h.ensure(ctx, "exec", &sandboxv1.SandboxSpec{DockerHost: host})
	var daemonP50 time.Duration
	run := func(agent string) func(b *testing.B) {
		return func(b *testing.B) {
			h.mustExec(ctx, agent, "true") // warm the connection
			samples := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				r, err := h.exec(ctx, agent, "true")
				samples = append(samples, time.Since(start))
				if err != nil || r.exit.GetExitCode() != 0 {
					b.Fatalf("exec: %+v %v", r, err)
				}
			}
			b.StopTimer()
			p50 := percentiles(b, samples, time.Microsecond, "")
			if agent == "daemon" {
				daemonP50 = p50
			} else if daemonP50 > 0 {
				b.ReportMetric(float64(p50)/float64(daemonP50), "x-slower-than-daemon")
			}
		}
	}
	b.Run("daemon", run("daemon"))
	b.Run("docker-exec", run("exec"))
}

// BenchmarkLocalExecTrue measures `true` through the service on the local
// backend, confined (Landlock: the launcher is this binary started again,
// up to the confine package's init) and with the environment scrubbed only
// (a kernel without Landlock, for one user).
func BenchmarkLocalExecTrue(b *testing.B) {
	for _, bc := range []struct {
		name string
		abi  func() int
	}{
		{"landlock", confine.ABI},
		{"env-only", func() int { return 0 }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.abi() < confine.MinABI && bc.name == "landlock" {
				b.Skip("no Landlock")
			}
			svc, err := New(Config{AllowLocal: true, StateDir: b.TempDir(), ManagerID: "wick-bench-" + randomID()},
				WithEngineDialer(noDocker), WithLogger(slog.New(slog.DiscardHandler)), withLandlockProbe(bc.abi))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = svc.Close(context.Background()) })
			cli := serve(b, svc)
			ctx := as("bench")
			if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "dev", Spec: &sandboxv1.SandboxSpec{Type: backend.Local}}); err != nil {
				b.Fatal(err)
			}
			samples := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				r, err := execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: "dev", Command: "true"})
				samples = append(samples, time.Since(start))
				if err != nil || r.exit.GetExitCode() != 0 {
					b.Fatalf("exec: %+v %v", r, err)
				}
			}
			b.StopTimer()
			percentiles(b, samples, time.Microsecond, "")
		})
	}
}

// BenchmarkEnsureWarmPool measures EnsureSandbox of a new sandbox until its
// daemon answers, with a warm pool and, as the baseline in the same run,
// without one (target warm: p50 ≤ 50 ms, p99 ≤ 150 ms). Waiting for the
// pool to refill and deleting the sandbox are not timed. It also reports
// the memory an idle warm container holds (its cgroup's usage, as docker
// stats reads it).
func BenchmarkEnsureWarmPool(b *testing.B) {
	for _, size := range []int{1, 0} {
		name := "warm"
		if size == 0 {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			h := newHarness(b, func(c *Config) { c.WarmPool = size })
			ctx := as("bench")
			var warmMiB float64
			var refill func()
			if size > 0 {
				refill = func() { h.waitWarm(size) }
				w := h.waitWarm(size)
				st, err := h.docker.ContainerStatsOneShot(ctx, w.id)
				if err != nil {
					b.Fatal(err)
				}
				var stats container.StatsResponse
				err = json.NewDecoder(st.Body).Decode(&stats)
				st.Body.Close()
				if err != nil {
					b.Fatal(err)
				}
				warmMiB = float64(stats.MemoryStats.Usage) / (1 << 20)
			}
			samples := ensureNew(b, h, refill)
			percentiles(b, samples, time.Millisecond, "")
			if size > 0 {
				b.ReportMetric(testutil.ToFloat64(h.svc.warm.claims.WithLabelValues("hit")), "hits")
				b.ReportMetric(testutil.ToFloat64(h.svc.warm.claims.WithLabelValues("miss")), "misses")
				b.ReportMetric(warmMiB, "warm-container-MiB")
			}
		})
	}
}

// BenchmarkEnsureImage times a new sandbox until its daemon answers, on the
// busybox image and on the Debian runtime image, with no warm pool (cold)
// and with a warm container of the image ready (warm); the image's size is
// reported beside.
func BenchmarkEnsureImage(b *testing.B) {
	for _, img := range []struct{ name, ref string }{{"busybox", ""}, {"runtime", backend.DefaultImage}} {
		for _, size := range []int{0, 1} {
			name := img.name + "/cold"
			if size > 0 {
				name = img.name + "/warm"
			}
			b.Run(name, func(b *testing.B) {
				cli, ref := dockerEnv(b)
				if img.ref != "" {
					ref = img.ref
				}
				ii, err := cli.ImageInspect(context.Background(), ref)
				if err != nil {
					testenv.Missing(b, "sandbox image %s (make image-runtime builds it)", ref)
				}
				h := newHarness(b, func(c *Config) { c.DefaultImage, c.WarmPool = ref, size })
				h.image = ref // the image waitWarm counts
				var refill func()
				if size > 0 {
					refill = func() { h.waitWarm(size) }
					h.waitWarm(size)
				}
				percentiles(b, ensureNew(b, h, refill), time.Millisecond, "")
				b.ReportMetric(float64(ii.Size)/1e6, "image-MB")
			})
		}
	}
}
