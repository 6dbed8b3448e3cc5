package sandbox

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/grpc/codes"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/testenv"
)

// sandboxKeys are the only attribute keys the sandbox instruments may
// carry: each takes a bounded set of values, never a user or an agent.
var sandboxKeys = []string{"type", "state", "result", "warm", "method", "code"}

// TestDockerMetrics: a sandbox brought up and used moves the create time
// (ok, cold), the table's gauge and the daemon call time; one whose image
// is not on the engine moves the create time with result=error and leaves
// no sandbox behind.
func TestDockerMetrics(t *testing.T) {
	t.Parallel()
	m := testenv.NewMeters(t)
	h := newHarnessWith(t, []Option{WithMeterProvider(m)})
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()
	h.ensure(ctx, "a", nil)
	if out := h.mustExec(ctx, "a", "echo hi"); out != "hi\n" {
		t.Fatalf("exec output %q", out)
	}
	_, err := h.cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "b", Spec: &sandboxv1.SandboxSpec{Type: "docker", Image: "wick-test-no-such-image:never"}})
	if err == nil {
		t.Fatal("a sandbox of an image that is not on the engine was created")
	}
	docker := attribute.String("type", "docker")
	cold := attribute.String("warm", "false")
	for _, w := range []struct {
		name string
		kv   []attribute.KeyValue
		want float64
	}{
		{"wick.sandbox.create.duration", []attribute.KeyValue{docker, attribute.String("result", "ok"), cold}, 1},
		{"wick.sandbox.create.duration", []attribute.KeyValue{docker, attribute.String("result", "error"), cold}, 1},
		// The failed one never ran, so it leaves no sandbox in the table.
		{"wick.sandbox.sandboxes", []attribute.KeyValue{docker, attribute.String("state", "running")}, 1},
		{"wick.sandbox.sandboxes", nil, 1},
	} {
		if got := m.Value(w.name, w.kv...); got != w.want {
			t.Errorf("%s%v = %v, want %v", w.name, w.kv, got, w.want)
		}
	}
	// The exec went through the daemon, as a stream that ended well.
	if got := m.Value("wick.sandbox.daemon.call.duration", attribute.String("code", "OK")); got < 1 {
		t.Errorf("daemon calls with code OK = %v, want at least 1", got)
	}
	for _, p := range m.Points() {
		if p.Name == "wick.sandbox.daemon.call.duration" {
			if v, _ := p.Attrs.Value("method"); v.AsString() == "" || v.AsString()[0] == '/' {
				t.Errorf("daemon call method label %q, want the bare method name", v.AsString())
			}
		}
	}
	m.CheckKeys("wick.", sandboxKeys...)
}

// TestLocalCreateMetric: the local backend's bring-up is measured under
// type local, and its sandbox shows in the gauge.
func TestLocalCreateMetric(t *testing.T) {
	t.Parallel()
	m := testenv.NewMeters(t)
	_, cli := newLocal(t, Config{AllowLocal: true}, WithMeterProvider(m))
	ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
	defer cancel()
	if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "a", Spec: &sandboxv1.SandboxSpec{Type: "local"}}); err != nil {
		t.Fatal(err)
	}
	local := attribute.String("type", "local")
	if got := m.Value("wick.sandbox.create.duration", local, attribute.String("result", "ok"), attribute.String("warm", "false")); got != 1 {
		t.Errorf("local creates = %v, want 1", got)
	}
	if got := m.Value("wick.sandbox.sandboxes", local, attribute.String("state", "running")); got != 1 {
		t.Errorf("local sandboxes running = %v, want 1", got)
	}
	m.CheckKeys("wick.", sandboxKeys...)
}

// TestDaemonCallMetricAllocs: timing a daemon call, which happens per file
// operation, allocates nothing once its method and code were seen.
func TestDaemonCallMetricAllocs(t *testing.T) {
	m := newMetrics(testenv.NewMeters(t))
	ctx := context.Background()
	m.daemonCall(ctx, "/wick.daemon.v1.Daemon/ReadFile", codes.OK, time.Millisecond)
	if n := testing.AllocsPerRun(100, func() { m.daemonCall(ctx, "/wick.daemon.v1.Daemon/ReadFile", codes.OK, time.Millisecond) }); n > 0 {
		t.Errorf("%v allocations per call", n)
	}
}
