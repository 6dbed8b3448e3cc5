package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/testenv"
)

// The process tests run on sandboxes with these limits, small so the limit
// and the buffer are reached quickly.
const (
	testMaxProcesses = 3
	testProcessBuf   = 64 << 10
)

// procs drives the process RPCs of one sandbox through the generated client.
type procs struct {
	t     *testing.T
	ctx   context.Context
	cli   sandboxv1.SandboxServiceClient
	agent string
	// gone reports whether pid no longer runs in the sandbox.
	gone func(pid int) bool
}

// procOut is what one attachment received.
type procOut struct {
	stdout, stderr bytes.Buffer
	dropped        int64
	exit           *sandboxv1.ExitStatus
	offset         int64
	events         int
	started        *sandboxv1.ProcessInfo
}

func (p procs) start(tag string, argv ...string) *sandboxv1.ProcessInfo {
	p.t.Helper()
	r, err := p.cli.StartProcess(p.ctx, &sandboxv1.StartProcessRequest{AgentId: p.agent, Argv: argv, Tag: tag})
	if err != nil {
		p.t.Fatalf("start %q: %v", argv, err)
	}
	return r.GetProcess()
}

// attach attaches from offset, sends stdin (then closes it when closeStdin),
// and collects events until the exit, or until stop says so (then the
// stream is cut as a dropped connection would be).
func (p procs) attach(id string, offset int64, stdin []string, closeStdin bool, stop func(*procOut) bool) (*procOut, error) {
	return p.stream(&sandboxv1.AttachProcessRequest{Msg: &sandboxv1.AttachProcessRequest_Attach{
		Attach: &sandboxv1.ProcessAttach{AgentId: p.agent, Id: id, Offset: offset}}}, offset, stdin, closeStdin, stop)
}

// stream is an attachment opened with first (attach or start).
func (p procs) stream(first *sandboxv1.AttachProcessRequest, offset int64, stdin []string, closeStdin bool, stop func(*procOut) bool) (*procOut, error) {
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	st, err := p.cli.AttachProcess(ctx)
	if err != nil {
		return nil, err
	}
	msgs := []*sandboxv1.AttachProcessRequest{first}
	for _, s := range stdin {
		msgs = append(msgs, &sandboxv1.AttachProcessRequest{Msg: &sandboxv1.AttachProcessRequest_Stdin{Stdin: []byte(s)}})
	}
	if closeStdin {
		msgs = append(msgs, &sandboxv1.AttachProcessRequest{Msg: &sandboxv1.AttachProcessRequest_CloseStdin{CloseStdin: true}})
	}
	for _, m := range msgs {
		if err := st.Send(m); err != nil {
			break // the status comes from Recv
		}
	}
	out := &procOut{offset: offset}
	for {
		m, err := st.Recv()
		if err != nil {
			return out, err
		}
		out.events++
		if m.GetStarted() != nil {
			out.started = m.GetStarted()
			continue
		}
		out.offset = m.GetOffset()
		out.stdout.Write(m.GetStdout())
		out.stderr.Write(m.GetStderr())
		out.dropped += m.GetDropped()
		if m.GetExit() != nil {
			out.exit = m.GetExit()
			return out, nil
		}
		if stop != nil && stop(out) {
			return out, nil
		}
	}
}

// run starts argv and collects everything it writes.
func (p procs) run(stdin []string, argv ...string) *procOut {
	p.t.Helper()
	info := p.start("", argv...)
	out, err := p.attach(info.GetId(), 0, stdin, true, nil)
	if err != nil {
		p.t.Fatalf("attach %q: %v", argv, err)
	}
	return out
}

// waitExited waits through ListProcesses until the process has exited.
func (p procs) waitExited(id string) *sandboxv1.ProcessInfo {
	p.t.Helper()
	var info *sandboxv1.ProcessInfo
	testenv.Eventually(p.t, 30*time.Second, func() bool {
		r, err := p.cli.ListProcesses(p.ctx, &sandboxv1.ListProcessesRequest{AgentId: p.agent, Id: id})
		if err != nil || len(r.GetProcesses()) != 1 {
			p.t.Fatalf("list %s: %v %v", id, r, err)
		}
		info = r.GetProcesses()[0]
		return !info.GetRunning()
	}, "process exit")
	return info
}

func (p procs) signal(id string, sig sandboxv1.ProcessSignal) error {
	_, err := p.cli.SignalProcess(p.ctx, &sandboxv1.SignalProcessRequest{AgentId: p.agent, Id: id, Signal: sig})
	return err
}

// pidOf parses the pid a process printed.
func pidOf(t *testing.T, s string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || pid <= 0 {
		t.Fatalf("not a pid: %q", s)
	}
	return pid
}

// pattern is the first n bytes of `yes 0123456789`.
func pattern(n int) string { return strings.Repeat("0123456789\n", n/11+1)[:n] }

// processSuite runs the process API through the service on a sandbox made
// with testMaxProcesses and testProcessBuf; it leaves no process running.
func processSuite(t *testing.T, p procs) {
	t.Run("io", func(t *testing.T) {
		p := p
		p.t = t
		if out := p.run([]string{"hello ", "pipe\n"}, "cat"); out.stdout.String() != "hello pipe\n" || out.exit.GetExitCode() != 0 || out.offset != 11 {
			t.Fatalf("cat: %q %v offset %d", out.stdout.String(), out.exit, out.offset)
		}
		out := p.run(nil, "sh", "-c", "echo out; echo err >&2; exit 3")
		if out.stdout.String() != "out\n" || out.stderr.String() != "err\n" || out.exit.GetExitCode() != 3 {
			t.Fatalf("sh: %q %q %v", out.stdout.String(), out.stderr.String(), out.exit)
		}
		if out := p.run(nil, "echo", "$HOME", "a;b"); out.stdout.String() != "$HOME a;b\n" {
			t.Fatalf("argv went through a shell: %q", out.stdout.String())
		}
	})
	t.Run("signal and group", func(t *testing.T) {
		p := p
		p.t = t
		info := p.start("", "sh", "-c", "sleep 1000 & echo $!; wait")
		out, err := p.attach(info.GetId(), 0, nil, false, func(o *procOut) bool { return strings.HasSuffix(o.stdout.String(), "\n") })
		if err != nil {
			t.Fatal(err)
		}
		child := pidOf(t, out.stdout.String())
		if err := p.signal(info.GetId(), sandboxv1.ProcessSignal_PROCESS_SIGNAL_SIGTERM); err != nil {
			t.Fatal(err)
		}
		if end := p.waitExited(info.GetId()); end.GetExit().GetExitCode() != -1 {
			t.Fatalf("after SIGTERM: %v", end)
		}
		testenv.Eventually(t, 10*time.Second, func() bool { return p.gone(child) }, "the group's sleep gone")
		// What the leader leaves behind in its group dies when it exits.
		out = p.run(nil, "sh", "-c", "sleep 1000 & echo $!")
		child = pidOf(t, out.stdout.String())
		testenv.Eventually(t, 10*time.Second, func() bool { return p.gone(child) }, "the leftover sleep gone")
	})
	t.Run("tags and limit", func(t *testing.T) {
		p := p
		p.t = t
		var ids []string
		for _, tag := range []string{"mcp", "mcp", "acp"}[:testMaxProcesses] {
			ids = append(ids, p.start(tag, "sleep", "1000").GetId())
		}
		if _, err := p.cli.StartProcess(p.ctx, &sandboxv1.StartProcessRequest{AgentId: p.agent, Argv: []string{"true"}}); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("one process past the limit: %v", err)
		}
		for _, tc := range []struct {
			id, tag string
			want    []string
		}{{"", "mcp", ids[:2]}, {"", "acp", ids[2:]}, {ids[1], "", ids[1:2]}, {"nope", "", nil}} {
			r, err := p.cli.ListProcesses(p.ctx, &sandboxv1.ListProcessesRequest{AgentId: p.agent, Id: tc.id, Tag: tc.tag})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, info := range r.GetProcesses() {
				if info.GetRunning() {
					got = append(got, info.GetId())
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("list id %q tag %q: %v, want %v", tc.id, tc.tag, got, tc.want)
			}
		}
		for _, id := range ids {
			if err := p.signal(id, sandboxv1.ProcessSignal_PROCESS_SIGNAL_SIGKILL); err != nil {
				t.Fatal(err)
			}
			p.waitExited(id)
		}
		p.run(nil, "true") // a slot is free again
	})
	t.Run("re-attach", func(t *testing.T) {
		p := p
		p.t = t
		const lines = 3000 // below the buffer: nothing is dropped while detached
		info := p.start("", "sh", "-c", fmt.Sprintf("i=0; while [ $i -lt %d ]; do echo line-$i; i=$((i+1)); done", lines))
		var got bytes.Buffer
		offset := int64(0)
		for {
			// Every attachment but the last is cut after two events.
			out, err := p.attach(info.GetId(), offset, nil, false, func(o *procOut) bool { return o.events == 2 })
			if err != nil {
				t.Fatal(err)
			}
			if out.dropped > 0 {
				t.Fatalf("%d bytes dropped", out.dropped)
			}
			got.Write(out.stdout.Bytes())
			offset = out.offset
			if out.exit != nil {
				break
			}
		}
		var want strings.Builder
		for i := range lines {
			fmt.Fprintf(&want, "line-%d\n", i)
		}
		if got.String() != want.String() {
			t.Fatalf("got %d bytes, want %d", got.Len(), want.Len())
		}
	})
	t.Run("dropped", func(t *testing.T) {
		p := p
		p.t = t
		const total = 300_000
		info := p.start("", "sh", "-c", fmt.Sprintf("yes 0123456789 | head -c %d", total))
		p.waitExited(info.GetId())
		out, err := p.attach(info.GetId(), 0, nil, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		// At least the buffer's worth is kept (more when the pipe still held
		// output at the exit, which the attachment then stops dropping).
		kept := out.stdout.Len()
		if out.dropped <= 0 || out.dropped+int64(kept) != total || kept < testProcessBuf ||
			out.stdout.String() != pattern(total)[total-kept:] || out.offset != total {
			t.Fatalf("dropped %d, kept %d, offset %d", out.dropped, kept, out.offset)
		}
	})
	t.Run("5 MB through the buffer", func(t *testing.T) {
		p := p
		p.t = t
		const total = 5_000_000
		out := p.run([]string{"go\n"}, "sh", "-c", fmt.Sprintf("read go; yes 0123456789 | head -c %d", total))
		if out.dropped != 0 || out.stdout.Len() != total || out.stdout.String() != pattern(total) || out.exit.GetExitCode() != 0 {
			t.Fatalf("dropped %d, got %d bytes, exit %v", out.dropped, out.stdout.Len(), out.exit)
		}
	})
	t.Run("start attached", func(t *testing.T) {
		p := p
		p.t = t
		// Far more than the buffer at once: started through the stream,
		// the caller is attached before the first byte, so none is dropped.
		const total = 300_000
		out, err := p.stream(&sandboxv1.AttachProcessRequest{Msg: &sandboxv1.AttachProcessRequest_Start{Start: &sandboxv1.StartProcessRequest{
			AgentId: p.agent, Argv: []string{"sh", "-c", fmt.Sprintf("yes 0123456789 | head -c %d", total)}, Tag: "attached"}}},
			0, nil, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out.started.GetId() == "" || out.started.GetTag() != "attached" || out.dropped != 0 || out.stdout.String() != pattern(total) || out.exit.GetExitCode() != 0 {
			t.Fatalf("started %v, dropped %d, got %d bytes, exit %v", out.started, out.dropped, out.stdout.Len(), out.exit)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		attach := func(agent, id string, off int64) error {
			q := p
			q.t, q.agent = t, agent
			_, err := q.attach(id, off, nil, false, nil)
			return err
		}
		for _, tc := range []struct {
			name string
			call func() error
			code codes.Code
		}{
			{"empty argv", func() error {
				_, err := p.cli.StartProcess(p.ctx, &sandboxv1.StartProcessRequest{AgentId: p.agent})
				return err
			}, codes.InvalidArgument},
			{"unknown program", func() error {
				_, err := p.cli.StartProcess(p.ctx, &sandboxv1.StartProcessRequest{AgentId: p.agent, Argv: []string{"no-such-program-wick"}})
				return err
			}, codes.InvalidArgument},
			{"no agent", func() error {
				_, err := p.cli.StartProcess(p.ctx, &sandboxv1.StartProcessRequest{Argv: []string{"true"}})
				return err
			}, codes.InvalidArgument},
			{"another user's sandbox", func() error {
				_, err := p.cli.ListProcesses(as("mallory"), &sandboxv1.ListProcessesRequest{AgentId: p.agent})
				return err
			}, codes.NotFound},
			{"unknown id to signal", func() error { return p.signal("nope", sandboxv1.ProcessSignal_PROCESS_SIGNAL_SIGTERM) }, codes.NotFound},
			{"unspecified signal", func() error { return p.signal("nope", sandboxv1.ProcessSignal_PROCESS_SIGNAL_UNSPECIFIED) }, codes.InvalidArgument},
			{"attach unknown id", func() error { return attach(p.agent, "nope", 0) }, codes.NotFound},
			{"attach without agent", func() error { return attach("", "nope", 0) }, codes.InvalidArgument},
			{"start attached with empty argv", func() error {
				_, err := p.stream(&sandboxv1.AttachProcessRequest{Msg: &sandboxv1.AttachProcessRequest_Start{Start: &sandboxv1.StartProcessRequest{AgentId: p.agent}}}, 0, nil, false, nil)
				return err
			}, codes.InvalidArgument},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := tc.call(); status.Code(err) != tc.code {
					t.Fatalf("got %v, want %s", err, tc.code)
				}
			})
		}
	})
}

func TestProcessesLocal(t *testing.T) {
	t.Parallel()
	svc, cli := newLocal(t, Config{AllowLocal: true, MaxProcesses: testMaxProcesses, ProcessBufferBytes: testProcessBuf})
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()
	if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "dev", Spec: &sandboxv1.SandboxSpec{
		Type: backend.Local, Env: map[string]string{"SPEC_VAR": "1"}}}); err != nil {
		t.Fatal(err)
	}
	p := procs{t: t, ctx: ctx, cli: cli, agent: "dev", gone: hostPidGone}
	processSuite(t, p)

	// A process gets the sandbox's scrubbed environment, as its commands do.
	out := p.run(nil, "env")
	for _, kv := range strings.Split(strings.TrimSpace(out.stdout.String()), "\n") {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ", "SPEC_VAR":
		default:
			t.Fatalf("a local process sees %q of the service's environment", kv)
		}
	}

	// Where the kernel has Landlock, a process is confined as commands are:
	// the workspace is writable, the host's files outside it are not.
	if svc.confined {
		if out := p.run(nil, "sh", "-c", "touch mine && ls /root /etc/shadow"); out.exit.GetExitCode() == 0 {
			t.Fatalf("a confined process read outside its sandbox: %q", out.stdout.String())
		}
		if out := p.run(nil, "ls", "mine"); out.exit.GetExitCode() != 0 {
			t.Fatalf("a confined process could not write its workspace: %q", out.stderr.String())
		}
	}

	// Processes are killed with their sandbox.
	info := p.start("", "sleep", "1000")
	if _, err := cli.StopSandbox(ctx, &sandboxv1.StopSandboxRequest{AgentId: "dev"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() bool { return hostPidGone(int(info.GetPid())) }, "the process killed with its sandbox")
}

// hostPidGone reports whether pid is gone or a zombie on this host.
func hostPidGone(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err != nil || strings.Contains(string(stat), ") Z ")
}

func TestProcessesDocker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.MaxProcesses, c.ProcessBufferBytes = testMaxProcesses, testProcessBuf })
	ctx, cancel := context.WithTimeout(as("alice"), 3*time.Minute)
	defer cancel()
	sb := h.ensure(ctx, "a", nil)
	p := procs{t: t, ctx: ctx, cli: h.cli, agent: "a", gone: func(pid int) bool {
		// Orphans go to the container's init, which reaps them.
		r, err := h.exec(ctx, "a", fmt.Sprintf("test -e /proc/%d", pid))
		return err == nil && r.exit.GetExitCode() != 0
	}}
	processSuite(t, p)

	// While the daemon is down there are no processes: Unavailable, then
	// the re-injected daemon serves them again.
	h.killDaemon(ctx, sb.GetContainerId())
	_, err := h.cli.StartProcess(ctx, &sandboxv1.StartProcessRequest{AgentId: "a", Argv: []string{"true"}})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("start with the daemon down: %v", err)
	}
	testenv.Eventually(t, 30*time.Second, func() bool {
		g, err := h.cli.GetSandbox(ctx, &sandboxv1.GetSandboxRequest{AgentId: "a"})
		return err == nil && g.GetSandbox().GetTransport() == transportDaemon
	}, "daemon back")
	info := p.start("agent", "sleep", "1000")

	// Processes are killed with their sandbox; a restarted one has none.
	if _, err := h.cli.RestartSandbox(ctx, &sandboxv1.RestartSandboxRequest{AgentId: "a"}); err != nil {
		t.Fatal(err)
	}
	r, err := h.cli.ListProcesses(ctx, &sandboxv1.ListProcessesRequest{AgentId: "a"})
	if err != nil || len(r.GetProcesses()) != 0 {
		t.Fatalf("processes after restart: %v %v", r, err)
	}
	if err := p.signal(info.GetId(), sandboxv1.ProcessSignal_PROCESS_SIGNAL_SIGTERM); status.Code(err) != codes.NotFound {
		t.Fatalf("a process of the old container: %v", err)
	}
}
