package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/daemon/process"
	"github.com/wick-agent/wick/daemon/server"
	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/wickfs"
)

// attachment is what one attachment received.
type attachment struct {
	stdout, stderr bytes.Buffer
	dropped        int64
	exit           *wickfs.ExitStatus
	offset         int64 // the last event's offset
	events         int
}

// attach attaches through daemonfs (the generated client underneath) and
// collects events until the exit, until stop says so, or until ctx ends.
func attach(ctx context.Context, d *daemon, id string, offset int64, input func() (process.Input, error), stop func(*attachment) bool) (*attachment, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := &attachment{offset: offset}
	errStop := errors.New("stop")
	err := d.fs.AttachProcess(ctx, id, offset, input, func(ev process.Event) error {
		a.events++
		a.offset = ev.Offset
		switch {
		case ev.Exit != nil:
			a.exit = ev.Exit
		case ev.Dropped > 0:
			a.dropped += ev.Dropped
		case ev.Stream == process.Stderr:
			a.stderr.Write(ev.Data)
		default:
			a.stdout.Write(ev.Data)
		}
		if stop != nil && stop(a) {
			return errStop
		}
		return nil
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return a, err
}

// inputs feeds msgs as stdin, then reports io.EOF.
func inputs(msgs ...process.Input) func() (process.Input, error) {
	return func() (process.Input, error) {
		if len(msgs) == 0 {
			return process.Input{}, io.EOF
		}
		m := msgs[0]
		msgs = msgs[1:]
		return m, nil
	}
}

func startProc(t *testing.T, d *daemon, argv ...string) *process.Info {
	t.Helper()
	info, err := d.fs.StartProcess(context.Background(), process.Spec{Argv: argv})
	if err != nil {
		t.Fatalf("start %q: %v", argv, err)
	}
	return info
}

func TestProcessIO(t *testing.T) {
	t.Parallel()
	d := start(t, config{})
	tests := []struct {
		name           string
		argv           []string
		stdin          []process.Input
		stdout, stderr string
		code           int
	}{
		{"stdin to stdout", []string{"cat"}, []process.Input{{Data: []byte("hello ")}, {Data: []byte("pipe\n")}, {Close: true}}, "hello pipe\n", "", 0},
		{"both streams and an exit code", []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, nil, "out\n", "err\n", 3},
		{"no shell: argv is taken as is", []string{"echo", "$HOME", "a;b"}, nil, "$HOME a;b\n", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			info := startProc(t, d, tc.argv...)
			if info.PID <= 0 || info.ID == "" || info.Exit != nil {
				t.Fatalf("started: %+v", info)
			}
			a, err := attach(ctx, d, info.ID, 0, inputs(tc.stdin...), nil)
			if err != nil {
				t.Fatal(err)
			}
			if a.stdout.String() != tc.stdout || a.stderr.String() != tc.stderr || a.exit == nil || a.exit.ExitCode != tc.code {
				t.Fatalf("stdout %q stderr %q exit %+v", a.stdout.String(), a.stderr.String(), a.exit)
			}
			if want := int64(len(tc.stdout) + len(tc.stderr)); a.offset != want {
				t.Fatalf("exit offset %d, want %d", a.offset, want)
			}
		})
	}
}

func TestProcessSignalAndGroup(t *testing.T) {
	t.Parallel()
	d := start(t, config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// SIGTERM reaches the process group: the shell and the sleep it waits for.
	info := startProc(t, d, "sh", "-c", "sleep 1000 & echo $!; wait")
	a, err := attach(ctx, d, info.ID, 0, nil, func(a *attachment) bool { return strings.HasSuffix(a.stdout.String(), "\n") })
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(a.stdout.String()))
	if err := d.fs.SignalProcess(ctx, info.ID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	a, err = attach(ctx, d, info.ID, a.offset, nil, nil)
	if err != nil || a.exit == nil || a.exit.ExitCode != -1 {
		t.Fatalf("after SIGTERM: %+v %v", a.exit, err)
	}
	waitGone(t, child)
	if err := d.fs.SignalProcess(ctx, info.ID, syscall.SIGTERM); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("signal after exit: %v", err)
	}

	// What a process leaves in its group is killed when it exits.
	info = startProc(t, d, "sh", "-c", "sleep 1000 & echo $!")
	a, err = attach(ctx, d, info.ID, 0, nil, nil)
	if err != nil || a.exit == nil || a.exit.ExitCode != 0 {
		t.Fatalf("leader: %+v %v", a.exit, err)
	}
	child, _ = strconv.Atoi(strings.TrimSpace(a.stdout.String()))
	waitGone(t, child)
}

// waitGone waits until pid is no live process (gone or a zombie); a process
// killed by another has no event to wait on here.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("bad pid %d", pid)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs: %s", pid, stat)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProcessListByTag(t *testing.T) {
	t.Parallel()
	d := start(t, config{})
	ctx := context.Background()
	var ids []string
	for _, tag := range []string{"mcp", "mcp", "acp"} {
		info, err := d.fs.StartProcess(ctx, process.Spec{Argv: []string{"sleep", "1000"}, Tag: tag})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	for _, tc := range []struct {
		id, tag string
		want    []string
	}{
		{"", "mcp", ids[:2]},
		{"", "acp", ids[2:]},
		{ids[1], "", ids[1:2]},
		{ids[1], "acp", nil},
		{"", "", ids},
		{"nope", "", nil},
	} {
		got, err := d.fs.ListProcesses(ctx, tc.id, tc.tag)
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []string
		for _, p := range got {
			gotIDs = append(gotIDs, p.ID)
			if p.Exit != nil || p.Argv[0] != "sleep" {
				t.Fatalf("listed %+v", p)
			}
		}
		if strings.Join(gotIDs, ",") != strings.Join(tc.want, ",") {
			t.Fatalf("list id %q tag %q: %v, want %v", tc.id, tc.tag, gotIDs, tc.want)
		}
	}
}

// TestProcessReattach drops the connection in the middle of a long output
// and attaches again from the last offset seen: no byte is lost or repeated.
func TestProcessReattach(t *testing.T) {
	t.Parallel()
	d := start(t, config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const lines = 50000
	info := startProc(t, d, "sh", "-c", fmt.Sprintf("i=0; while [ $i -lt %d ]; do echo line-$i; i=$((i+1)); done", lines))
	var out bytes.Buffer
	offset := int64(0)
	for round := 0; ; round++ {
		// Every attachment but the last breaks off after a few events, as a
		// dropped connection would.
		a, err := attach(ctx, d, info.ID, offset, nil, func(a *attachment) bool { return a.events == 3 })
		if err != nil {
			t.Fatal(err)
		}
		if a.dropped > 0 {
			t.Fatalf("round %d: %d bytes dropped", round, a.dropped)
		}
		out.Write(a.stdout.Bytes())
		offset = a.offset
		if a.exit != nil {
			break
		}
	}
	var want strings.Builder
	for i := range lines {
		fmt.Fprintf(&want, "line-%d\n", i)
	}
	if out.String() != want.String() {
		t.Fatalf("got %d bytes, want %d", out.Len(), want.Len())
	}
}

// TestProcessDropped lets a process write more than the buffer with nobody
// attached: an attachment from 0 gets a dropped event, then the kept tail.
func TestProcessDropped(t *testing.T) {
	t.Parallel()
	const buf, total = 64 << 10, 300_000
	d := start(t, config{server: []server.Option{server.WithProcessOptions(process.WithBufferBytes(buf))}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info := startProc(t, d, "sh", "-c", fmt.Sprintf("yes 0123456789 | head -c %d", total))
	waitExited(t, d, info.ID)
	a, err := attach(ctx, d, info.ID, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// At least the buffer's worth is kept: exactly that once the output was
	// read to its end before the attachment, more when the pipe still held
	// some at the exit (the attachment then stops the dropping).
	kept := int64(a.stdout.Len())
	if a.dropped <= 0 || a.dropped+kept != total || kept < buf || a.exit == nil || a.offset != total {
		t.Fatalf("dropped %d, kept %d, offset %d, exit %+v", a.dropped, kept, a.offset, a.exit)
	}
	if want := strings.Repeat("0123456789\n", total/11+1)[total-kept : total]; a.stdout.String() != want {
		t.Fatal("the kept tail is not the output's last bytes")
	}
}

// waitExited waits for a process's exit through List.
func waitExited(t *testing.T, d *daemon, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ps, err := d.fs.ListProcesses(context.Background(), id, "")
		if err != nil || len(ps) != 1 {
			t.Fatalf("list %s: %v %v", id, ps, err)
		}
		if ps[0].Exit != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s did not exit", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProcessBackPressure moves 5 MB through a 64 KiB buffer to an attached
// caller: the process waits for the caller, and nothing is dropped.
func TestProcessBackPressure(t *testing.T) {
	t.Parallel()
	const total = 5_000_000
	d := start(t, config{server: []server.Option{server.WithProcessOptions(process.WithBufferBytes(64 << 10))}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The process writes only once the caller is attached and says go.
	info := startProc(t, d, "sh", "-c", fmt.Sprintf("read go; yes 0123456789 | head -c %d", total))
	a, err := attach(ctx, d, info.ID, 0, inputs(process.Input{Data: []byte("go\n")}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.dropped != 0 || a.stdout.Len() != total || a.exit == nil || a.exit.ExitCode != 0 {
		t.Fatalf("dropped %d, got %d bytes, exit %+v", a.dropped, a.stdout.Len(), a.exit)
	}
	if want := strings.Repeat("0123456789\n", total/11+1)[:total]; a.stdout.String() != want {
		t.Fatal("the output differs from what the process wrote")
	}
}

// TestProcessStartAttached starts a process through the attachment: the
// caller is attached before the first byte, so a burst far above the buffer
// loses nothing, and the first event names the process.
func TestProcessStartAttached(t *testing.T) {
	t.Parallel()
	const total = 2_000_000
	d := start(t, config{server: []server.Option{server.WithProcessOptions(process.WithBufferBytes(64 << 10))}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var started *process.Info
	var out bytes.Buffer
	var exit *wickfs.ExitStatus
	err := d.fs.StartAttachedProcess(ctx, process.Spec{Argv: []string{"sh", "-c", fmt.Sprintf("yes 0123456789 | head -c %d", total)}, Tag: "t"}, nil,
		func(ev process.Event) error {
			switch {
			case ev.Started != nil:
				started = ev.Started
			case started == nil:
				return errors.New("an event before started")
			case ev.Dropped > 0:
				return fmt.Errorf("%d bytes dropped", ev.Dropped)
			case ev.Exit != nil:
				exit = ev.Exit
			default:
				out.Write(ev.Data)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if started.ID == "" || started.Tag != "t" || exit == nil || out.String() != strings.Repeat("0123456789\n", total/11+1)[:total] {
		t.Fatalf("started %+v, %d bytes, exit %+v", started, out.Len(), exit)
	}
}

func TestProcessLimit(t *testing.T) {
	t.Parallel()
	d := start(t, config{server: []server.Option{server.WithProcessOptions(process.WithMaxRunning(2))}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := startProc(t, d, "sleep", "1000")
	startProc(t, d, "sleep", "1000")
	if _, err := d.fs.StartProcess(ctx, process.Spec{Argv: []string{"true"}}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("third process: %v", err)
	}
	if err := d.fs.SignalProcess(ctx, first.ID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExited(t, d, first.ID)
	startProc(t, d, "true")
}

// TestProcessClose: closing the server (the daemon's exit) kills its processes.
func TestProcessClose(t *testing.T) {
	t.Parallel()
	d := start(t, config{})
	info := startProc(t, d, "sleep", "1000")
	d.srv.Close()
	waitExited(t, d, info.ID)
	if _, err := d.fs.StartProcess(context.Background(), process.Spec{Argv: []string{"true"}}); status.Code(err) != codes.Unavailable {
		t.Fatalf("start after close: %v", err)
	}
}

func TestProcessBadInput(t *testing.T) {
	t.Parallel()
	d := start(t, config{files: map[string]string{"f": "x"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	running := startProc(t, d, "sleep", "1000")
	attachRaw := func(msgs ...*daemonv1.AttachProcessRequest) error {
		st, err := d.client.AttachProcess(ctx)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if err := st.Send(m); err != nil {
				break
			}
		}
		_ = st.CloseSend()
		for {
			if _, err := st.Recv(); err != nil {
				return err
			}
		}
	}
	attachMsg := func(id string, off int64) *daemonv1.AttachProcessRequest {
		return &daemonv1.AttachProcessRequest{Msg: &daemonv1.AttachProcessRequest_Attach{Attach: &daemonv1.ProcessAttach{Id: id, Offset: off}}}
	}
	for _, tc := range []struct {
		name string
		call func() error
		code codes.Code
	}{
		{"empty argv", func() error {
			_, err := d.client.StartProcess(ctx, &daemonv1.StartProcessRequest{})
			return err
		}, codes.InvalidArgument},
		{"unknown program", func() error {
			_, err := d.client.StartProcess(ctx, &daemonv1.StartProcessRequest{Argv: []string{"no-such-program-wick"}})
			return err
		}, codes.InvalidArgument},
		{"long tag", func() error {
			_, err := d.client.StartProcess(ctx, &daemonv1.StartProcessRequest{Argv: []string{"true"}, Tag: strings.Repeat("t", 257)})
			return err
		}, codes.InvalidArgument},
		{"cwd outside", func() error {
			_, err := d.client.StartProcess(ctx, &daemonv1.StartProcessRequest{Argv: []string{"true"}, Cwd: "/etc"})
			return err
		}, codes.PermissionDenied},
		{"cwd a file", func() error {
			_, err := d.client.StartProcess(ctx, &daemonv1.StartProcessRequest{Argv: []string{"true"}, Cwd: "f"})
			return err
		}, codes.InvalidArgument},
		{"bad env", func() error {
			_, err := d.client.StartProcess(ctx, &daemonv1.StartProcessRequest{Argv: []string{"true"}, Env: map[string]string{"A=B": "c"}})
			return err
		}, codes.InvalidArgument},
		{"unknown id to signal", func() error {
			_, err := d.client.SignalProcess(ctx, &daemonv1.SignalProcessRequest{Id: "nope", Signal: daemonv1.ProcessSignal_PROCESS_SIGNAL_SIGTERM})
			return err
		}, codes.NotFound},
		{"unspecified signal", func() error {
			_, err := d.client.SignalProcess(ctx, &daemonv1.SignalProcessRequest{Id: running.ID})
			return err
		}, codes.InvalidArgument},
		{"signal out of the list", func() error {
			_, err := d.client.SignalProcess(ctx, &daemonv1.SignalProcessRequest{Id: running.ID, Signal: 31})
			return err
		}, codes.InvalidArgument},
		{"attach unknown id", func() error { return attachRaw(attachMsg("nope", 0)) }, codes.NotFound},
		{"attach past the end", func() error { return attachRaw(attachMsg(running.ID, 5)) }, codes.InvalidArgument},
		{"attach negative offset", func() error { return attachRaw(attachMsg(running.ID, -1)) }, codes.InvalidArgument},
		{"attach without attach first", func() error {
			return attachRaw(&daemonv1.AttachProcessRequest{Msg: &daemonv1.AttachProcessRequest_Stdin{Stdin: []byte("x")}})
		}, codes.InvalidArgument},
		{"attach with nothing", func() error { return attachRaw() }, codes.InvalidArgument},
		{"start with empty argv", func() error {
			return attachRaw(&daemonv1.AttachProcessRequest{Msg: &daemonv1.AttachProcessRequest_Start{Start: &daemonv1.StartProcessRequest{}}})
		}, codes.InvalidArgument},
		{"a second attach message", func() error { return attachRaw(attachMsg(running.ID, 0), attachMsg(running.ID, 0)) }, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); status.Code(err) != tc.code {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
		})
	}
}

// TestProcessKeepExited: only the last exited processes are remembered, with
// their output and exit status.
func TestProcessKeepExited(t *testing.T) {
	t.Parallel()
	d := start(t, config{server: []server.Option{server.WithProcessOptions(process.WithKeepExited(2))}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ids []string
	for i := range 4 {
		info := startProc(t, d, "sh", "-c", fmt.Sprintf("echo %d; exit %d", i, i))
		waitExited(t, d, info.ID)
		ids = append(ids, info.ID)
	}
	ps, err := d.fs.ListProcesses(ctx, "", "")
	if err != nil || len(ps) != 2 || ps[0].ID != ids[2] || ps[1].ID != ids[3] {
		t.Fatalf("kept %+v %v, want the last two of %v", ps, err, ids)
	}
	a, err := attach(ctx, d, ids[3], 0, nil, nil)
	if err != nil || a.stdout.String() != "3\n" || a.exit.ExitCode != 3 {
		t.Fatalf("attach to an exited process: %q %+v %v", a.stdout.String(), a.exit, err)
	}
	if _, err := attach(ctx, d, ids[0], 0, nil, nil); status.Code(err) != codes.NotFound {
		t.Fatalf("a forgotten process: %v", err)
	}
}

// BenchmarkProcessTrue is `true` started, attached to and ended through the
// process API over a Unix socket: StartProcess, AttachProcess to the exit.
func BenchmarkProcessTrue(b *testing.B) {
	d := start(b, config{})
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		info, err := d.fs.StartProcess(ctx, process.Spec{Argv: []string{"true"}})
		if err != nil {
			b.Fatal(err)
		}
		a, err := attach(ctx, d, info.ID, 0, nil, nil)
		lat = append(lat, time.Since(t0))
		if err != nil || a.exit == nil || a.exit.ExitCode != 0 {
			b.Fatalf("attach: %+v %v", a, err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkProcessOutput moves 64 MiB of a process's output to a caller
// attached from its start, through the default 1 MiB buffer.
func BenchmarkProcessOutput(b *testing.B) {
	const total = 64 << 20
	d := start(b, config{})
	ctx := context.Background()
	b.SetBytes(total)
	for b.Loop() {
		var n int64
		err := d.fs.StartAttachedProcess(ctx, process.Spec{Argv: []string{"head", "-c", strconv.Itoa(total), "/dev/zero"}}, nil, func(ev process.Event) error {
			n += int64(len(ev.Data))
			return nil
		})
		if err != nil || n != total {
			b.Fatalf("got %d bytes: %v", n, err)
		}
	}
}
