package sandbox

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/testenv"
)

// requireCgroup skips where the host gives the service no cgroup to hold
// local sandboxes' processes in, except in CI, which must test it.
func requireCgroup(t *testing.T, svc *Service, limited bool) {
	t.Helper()
	if svc.cgroup != nil && (!limited || svc.cgroup.Limited()) {
		return
	}
	testenv.Missing(t, "a cgroup for local sandboxes' processes (with the pids controller: %v)", limited)
}

// detach is a command that starts a process which leaves its command's
// process group and session (setsid) and its parent (the subshell exits),
// holds none of the command's pipes, and writes its pid to file; the
// command goes on once the pid is written, so that whatever ends the command
// next cannot catch the process before it detached.
func detach(file string) string {
	return "(setsid sh -c 'echo $$ > " + file + "; exec sleep 71' </dev/null >/dev/null 2>&1 &); " +
		"while [ ! -s " + file + " ]; do sleep 0.01; done"
}

// detachedPid reads the pid a detached process wrote to the workspace.
func detachedPid(ctx context.Context, t *testing.T, cli sandboxv1.SandboxServiceClient, agent, file string) int {
	t.Helper()
	var b bytes.Buffer
	testenv.Eventually(t, 10*time.Second, func() bool {
		b.Reset()
		return readFile(ctx, cli, agent, "/workspace/"+file, &b) == nil && strings.HasSuffix(b.String(), "\n")
	}, "%s", "the detached process's pid in "+file)
	return pidOf(t, b.String())
}

// runningPid is detachedPid for a process that must still run.
func runningPid(ctx context.Context, t *testing.T, cli sandboxv1.SandboxServiceClient, agent, file string) int {
	t.Helper()
	pid := detachedPid(ctx, t, cli, agent, file)
	if hostPidGone(pid) {
		t.Fatalf("detached process %d is not running", pid)
	}
	return pid
}

// TestLocalDetachedProcessesEnd starts, on the local backend, processes that
// leave their process group and session the way a model's command can, and
// checks that each ends with what must end it: its command's timeout (and no
// other command's process with it), the sandbox's stop, its deletion
// (what DELETE /agents/{id} calls) and the end of its terminal session.
func TestLocalDetachedProcessesEnd(t *testing.T) {
	t.Parallel()
	svc, cli := newLocal(t, Config{AllowLocal: true})
	requireCgroup(t, svc, false)
	ensure := func(ctx context.Context, t *testing.T, agent string) {
		t.Helper()
		if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: agent, Spec: &sandboxv1.SandboxSpec{Type: backend.Local}}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(ctx context.Context, t *testing.T, req *sandboxv1.ExecRequest) execResult {
		t.Helper()
		r, err := execOn(ctx, cli, req)
		if err != nil {
			t.Fatalf("exec %q: %v", req.GetCommand(), err)
		}
		return r
	}
	tests := []struct {
		name string
		// end starts a detached process, returns its pid, and does what must
		// end it.
		end func(ctx context.Context, t *testing.T, agent string) int
	}{
		{"command timeout", func(ctx context.Context, t *testing.T, agent string) int {
			// A background process of a command that ended on its own is
			// that command's business: another command's timeout spares it.
			run(ctx, t, &sandboxv1.ExecRequest{AgentId: agent, Command: detach("bystander.pid")})
			bystander := runningPid(ctx, t, cli, agent, "bystander.pid")
			r := run(ctx, t, &sandboxv1.ExecRequest{AgentId: agent, Command: detach("detached.pid") + "; sleep 60",
				Timeout: durationpb.New(2 * time.Second)})
			if !r.exit.GetTimedOut() {
				t.Fatalf("the command did not time out: %+v", r)
			}
			pid := detachedPid(ctx, t, cli, agent, "detached.pid")
			t.Cleanup(func() {
				if hostPidGone(bystander) {
					t.Errorf("another command's timeout killed this one's process %d", bystander)
				}
			})
			return pid
		}},
		{"sandbox stop", func(ctx context.Context, t *testing.T, agent string) int {
			run(ctx, t, &sandboxv1.ExecRequest{AgentId: agent, Command: detach("detached.pid")})
			pid := runningPid(ctx, t, cli, agent, "detached.pid")
			if _, err := cli.StopSandbox(ctx, &sandboxv1.StopSandboxRequest{AgentId: agent}); err != nil {
				t.Fatal(err)
			}
			return pid
		}},
		{"sandbox deletion", func(ctx context.Context, t *testing.T, agent string) int {
			run(ctx, t, &sandboxv1.ExecRequest{AgentId: agent, Command: detach("detached.pid")})
			pid := runningPid(ctx, t, cli, agent, "detached.pid")
			if _, err := cli.DeleteSandbox(ctx, &sandboxv1.DeleteSandboxRequest{AgentId: agent}); err != nil {
				t.Fatal(err)
			}
			return pid
		}},
		{"process API, sandbox stop", func(ctx context.Context, t *testing.T, agent string) int {
			p := procs{t: t, ctx: ctx, cli: cli, agent: agent}
			if out := p.run(nil, "sh", "-c", detach("detached.pid")); out.exit.GetExitCode() != 0 {
				t.Fatalf("process: exit %d, stderr %q", out.exit.GetExitCode(), out.stderr.String())
			}
			pid := runningPid(ctx, t, cli, agent, "detached.pid")
			if _, err := cli.StopSandbox(ctx, &sandboxv1.StopSandboxRequest{AgentId: agent}); err != nil {
				t.Fatal(err)
			}
			return pid
		}},
		{"terminal session end", func(ctx context.Context, t *testing.T, agent string) int {
			terminalSession(ctx, t, cli, "alice", agent, detach("detached.pid")+"; exit\n")
			return detachedPid(ctx, t, cli, agent, "detached.pid")
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
			defer cancel()
			agent := "detach-" + string(rune('a'+i))
			ensure(ctx, t, agent)
			pid := tc.end(ctx, t, agent)
			testenv.Eventually(t, 10*time.Second, func() bool { return hostPidGone(pid) }, "the detached process to end")
		})
	}
}

// TestLocalProcessLimit runs a fork loop in one user's local sandbox: it
// stops at the sandbox's process limit, and another user's command still
// answers at once meanwhile.
func TestLocalProcessLimit(t *testing.T) {
	t.Parallel()
	const limit = 16
	svc, cli := newLocal(t, Config{AllowLocal: true, LocalMaxProcs: limit})
	requireCgroup(t, svc, true)
	for _, user := range []string{"alice", "bob"} {
		if _, err := cli.EnsureSandbox(as(user), &sandboxv1.EnsureSandboxRequest{AgentId: "dev", Spec: &sandboxv1.SandboxSpec{Type: backend.Local}}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
	defer cancel()
	r, err := execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: "dev",
		Command: "i=0; while [ $i -lt 1000 ]; do sleep 30 >/dev/null 2>&1 & i=$((i+1)); done; echo all $i started"})
	if err != nil {
		t.Fatal(err)
	}
	if r.exit.GetExitCode() == 0 || strings.Contains(r.stdout, "all 1000 started") || !strings.Contains(strings.ToLower(r.stderr), "fork") {
		t.Fatalf("the fork loop was not stopped: exit %d, stdout %q, stderr %q", r.exit.GetExitCode(), r.stdout, r.stderr)
	}
	b, err := svc.lookup("alice", "dev")
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	cg := b.cgroup
	b.mu.Unlock()
	if n, err := cg.Procs(); err != nil || n > limit || n < limit/2 {
		t.Fatalf("alice's sandbox holds %d processes (%v), limit %d", n, err, limit)
	}
	// The loop's processes still fill alice's sandbox; bob's command runs.
	bctx, bcancel := context.WithTimeout(as("bob"), 10*time.Second)
	defer bcancel()
	if r, err := execOn(bctx, cli, &sandboxv1.ExecRequest{AgentId: "dev", Command: "sleep 0 && echo ok"}); err != nil || r.stdout != "ok\n" {
		t.Fatalf("bob's command beside alice's fork loop: %+v %v", r, err)
	}
	if _, err := cli.StopSandbox(ctx, &sandboxv1.StopSandboxRequest{AgentId: "dev"}); err != nil {
		t.Fatal(err)
	}
	if n, err := cg.Procs(); err != nil || n != 0 {
		t.Fatalf("alice's stopped sandbox holds %d processes (%v)", n, err)
	}
}
