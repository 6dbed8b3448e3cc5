package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
)

// TestInstancesShareAnEngine runs two instances on one engine, each on its
// own state directory, while a command runs in a sandbox of the first: the
// second starts (adopting what it may), serves its own sandbox or refuses
// the first's, and stops; the command completes in the untouched container,
// the first's ready warm container is still there, and a restart of the
// first on its state directory adopts its container.
func TestInstancesShareAnEngine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// id is the manager id both are given; "" lets each generate its own.
		id string
	}{
		{name: "generated ids", id: ""},
		{name: "one id given to both", id: "wick-test-" + randomID()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := func(c *Config) { c.ManagerID, c.DaemonStartTimeout, c.WarmPool = tc.id, 4*time.Second, 1 }
			first := newHarness(t, opts)
			ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
			defer cancel()
			sb := first.ensure(ctx, "dev", nil)
			first.manager = managerOf(t, first, sb.GetContainerName())
			first.waitWarm(1)
			ready := first.unclaimedWarm(ctx)

			// The command holds until the test writes "go".
			done := make(chan execResult, 1)
			failed := make(chan error, 1)
			go func() {
				r, err := first.exec(ctx, "dev", "touch started; while [ ! -f go ]; do sleep 0.05; done; echo finished")
				if err != nil {
					failed <- err
					return
				}
				done <- r
			}()
			testenv.Eventually(t, time.Minute, func() bool {
				r, err := first.exec(ctx, "dev", "test -f started")
				return err == nil && r.exit.GetExitCode() == 0
			}, "the command to start")

			second := newHarness(t, func(c *Config) { opts(c); c.WarmPool = 0 })
			other, err := second.cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "dev"})
			if tc.id == "" {
				if err != nil {
					t.Fatalf("the second instance's own sandbox: %v", err)
				}
				second.manager = managerOf(t, second, other.GetSandbox().GetContainerName())
				second.mustExec(ctx, "dev", "true")
			} else if status.Code(err) != codes.FailedPrecondition {
				// The first's container has the name and a live daemon
				// whose socket the second cannot reach.
				t.Fatalf("ensure on the second instance sharing the id: %v, want FailedPrecondition", err)
			}
			if err := second.svc.Close(ctx); err != nil {
				t.Fatal(err)
			}

			if _, err := writeFile(ctx, first.cli, "dev", "/workspace/go", nil); err != nil {
				t.Fatalf("release the command: %v", err)
			}
			select {
			case r := <-done:
				if r.stdout != "finished\n" || r.exit.GetExitCode() != 0 {
					t.Fatalf("the command ended with %q, exit %d, stderr %q", r.stdout, r.exit.GetExitCode(), r.stderr)
				}
			case err := <-failed:
				t.Fatalf("the command failed: %v", err)
			}
			in, err := first.inspect(sb.GetContainerName())
			if err != nil || in.ID != sb.GetContainerId() || !in.State.Running {
				t.Fatalf("the first instance's container after the second ran: %v", err)
			}
			if left := first.unclaimedWarm(ctx); strings.Join(left, ",") != strings.Join(ready, ",") {
				t.Fatalf("the first instance's ready warm containers were %v, now %v", ready, left)
			}
			if tc.id == "" && (second.manager == first.manager || other.GetSandbox().GetContainerName() == sb.GetContainerName()) {
				t.Fatalf("both instances use manager %q / container %q", second.manager, sb.GetContainerName())
			}

			// A restart on the same state directory finds its id and adopts.
			if err := first.svc.Close(ctx); err != nil {
				t.Fatal(err)
			}
			first.start()
			g, err := first.cli.GetSandbox(ctx, &sandboxv1.GetSandboxRequest{AgentId: "dev"})
			if err != nil || g.GetSandbox().GetContainerId() != sb.GetContainerId() || g.GetSandbox().GetTransport() != transportDaemon {
				t.Fatalf("after a restart: %v %v, want container %s adopted", g, err, sb.GetContainerId())
			}
			if out := first.mustExec(ctx, "dev", "ls go started"); out != "go\nstarted\n" {
				t.Fatalf("adopted workspace: %q", out)
			}
		})
	}
}

// managerOf reads the manager id from a container's label: a generated one
// is known only once the service made something.
func managerOf(t *testing.T, h *harness, name string) string {
	t.Helper()
	in, err := h.inspect(name)
	if err != nil {
		t.Fatal(err)
	}
	return in.Config.Labels[dockerbox.LabelManager]
}

// TestEphemeralInstanceRemovesItsSandboxes: an instance whose state
// directory dies with it leaves no container or volume behind at Close.
func TestEphemeralInstanceRemovesItsSandboxes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.ManagerID, c.Ephemeral = "", true })
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()
	sb := h.ensure(ctx, "dev", nil)
	h.manager = h.svc.ManagerID()
	if err := h.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.inspect(sb.GetContainerName()); !dockerbox.IsNotFound(err) {
		t.Fatalf("container after Close: %v", err)
	}
	vs, err := dockerbox.Volumes(ctx, h.docker, h.manager)
	if err != nil || len(vs) != 0 {
		t.Fatalf("volumes after Close: %d %v", len(vs), err)
	}
	if raw, err := os.ReadFile(filepath.Join(h.cfg.StateDir, managerIDFile)); err != nil || strings.TrimSpace(string(raw)) != h.manager {
		t.Fatalf("stored manager id %q %v, want %q", raw, err, h.manager)
	}
}

// TestStaleImageProbesRemoved: the never-started container that reads an
// image's users is removed by whoever finds it old, so a process that
// stopped mid-probe leaves nothing on the engine for good. Not parallel:
// an age of zero would take the probes of this package's other tests.
func TestStaleImageProbesRemoved(t *testing.T) {
	docker, image := dockerEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := docker.ContainerCreate(ctx, &container.Config{Image: image, Cmd: []string{"/nonexistent"}, Labels: map[string]string{dockerbox.LabelProbe: "1"}},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = docker.ContainerRemove(context.Background(), resp.ID, container.RemoveOptions{Force: true})
	})
	if err := dockerbox.RemoveStaleProbes(ctx, docker, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := docker.ContainerInspect(ctx, resp.ID); err != nil {
		t.Fatalf("a fresh probe was removed: %v", err)
	}
	if err := dockerbox.RemoveStaleProbes(ctx, docker, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := docker.ContainerInspect(ctx, resp.ID); !dockerbox.IsNotFound(err) {
		t.Fatalf("the stale probe is still there: %v", err)
	}
}
