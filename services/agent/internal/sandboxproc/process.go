// Package sandboxproc runs a program inside an agent's sandbox through the
// sandbox service's process API and gives its stdin and stdout as one byte
// stream: the transport of the MCP servers and ACP agents that run there.
package sandboxproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/sandboxfs"
)

// Bounds of a process.
const (
	// StderrTailBytes is how much of a process's last standard error is
	// kept to say why it stopped or why a request failed.
	StderrTailBytes = 8 << 10
	// killTimeout bounds the kill of a process when it is closed.
	killTimeout = 5 * time.Second
)

// Sandbox is the slice of the sandbox service's client that runs processes
// (sandboxv1.SandboxServiceClient implements it).
type Sandbox interface {
	EnsureSandbox(ctx context.Context, in *sandboxv1.EnsureSandboxRequest, opts ...grpc.CallOption) (*sandboxv1.EnsureSandboxResponse, error)
	AttachProcess(ctx context.Context, opts ...grpc.CallOption) (grpc.BidiStreamingClient[sandboxv1.AttachProcessRequest, sandboxv1.AttachProcessResponse], error)
	SignalProcess(ctx context.Context, in *sandboxv1.SignalProcessRequest, opts ...grpc.CallOption) (*sandboxv1.SignalProcessResponse, error)
}

// Command is what to run: Argv[0] is looked up in PATH unless it contains
// a slash; Env holds extra variables; Tag labels the process for
// ListProcesses ("mcp:<server>", "acp:<agent>"). Stderr, when set, gets
// every chunk of the process's standard error as it comes (its tail is
// kept either way).
type Command struct {
	Argv   []string
	Env    map[string]string
	Tag    string
	Stderr io.Writer
}

// Process is a program running in the sandbox, as the byte stream a
// protocol's newline-delimited JSON goes over: Write sends its stdin, Read
// returns its stdout. It is started and attached in one call (the `start`
// message of AttachProcess), so none of its output is missed.
type Process struct {
	sandbox Sandbox
	agentID string
	stream  Stream
	cancel  context.CancelFunc
	// ctx carries the user for the kill at Close.
	ctx  context.Context
	info *sandboxv1.ProcessInfo
	out  *io.PipeReader
	// hostWorkdir is the workspace's directory on the host, for a local
	// sandbox; empty for a container.
	hostWorkdir string
	// stderrTo gets the standard error as it comes; nil when unwanted.
	stderrTo io.Writer
	// exited is closed when the process has exited or its stream ended.
	exited chan struct{}

	sendMu    sync.Mutex
	closeOnce sync.Once

	errMu  sync.Mutex
	stderr []byte
}

// Start ensures the agent's sandbox, starts the command in it and attaches
// to it. ctx bounds the start; long is the context the process's stream
// lives in (the user's, until its owner closes it). A stdout line longer
// than maxLine ends the stream (see pump).
func Start(ctx, long context.Context, sb Sandbox, agentID string, backend *loop.BackendCfg, cmd Command, maxLine int) (*Process, error) {
	if sb == nil {
		return nil, errors.New("no sandbox service to run the process in")
	}
	if len(cmd.Argv) == 0 {
		return nil, errors.New("no command to run")
	}
	box, err := sb.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: agentID, Spec: sandboxfs.Spec(backend)})
	if err != nil {
		return nil, fmt.Errorf("ensure sandbox: %w", err)
	}
	start := &sandboxv1.StartProcessRequest{AgentId: agentID, Argv: cmd.Argv, Env: cmd.Env, Tag: cmd.Tag}
	stream, info, cancel, err := Attach(ctx, long, sb, start)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Argv[0], err)
	}
	pr, pw := io.Pipe()
	p := &Process{sandbox: sb, agentID: agentID, stream: stream, cancel: cancel, ctx: long, info: info, out: pr,
		hostWorkdir: box.GetSandbox().GetHostWorkdir(), stderrTo: cmd.Stderr, exited: make(chan struct{})}
	go p.pump(pw, maxLine)
	return p, nil
}

// Stream is a process's AttachProcess stream.
type Stream = grpc.BidiStreamingClient[sandboxv1.AttachProcessRequest, sandboxv1.AttachProcessResponse]

// Attach starts a process in an existing sandbox and attaches to it in one
// call (the `start` message of AttachProcess), so none of its output is
// missed. It returns once the sandbox says the process started: ctx bounds
// that wait, long is the context the stream lives in, and cancel ends the
// stream. An error is the sandbox refusing the process (no such program,
// too many processes) or the stream failing.
func Attach(ctx, long context.Context, sb Sandbox, start *sandboxv1.StartProcessRequest) (Stream, *sandboxv1.ProcessInfo, context.CancelFunc, error) {
	sctx, cancel := context.WithCancel(long)
	stream, err := sb.AttachProcess(sctx)
	if err != nil {
		cancel()
		return nil, nil, nil, fmt.Errorf("attach: %w", err)
	}
	if err := stream.Send(&sandboxv1.AttachProcessRequest{Msg: &sandboxv1.AttachProcessRequest_Start{Start: start}}); err != nil {
		cancel()
		return nil, nil, nil, err
	}
	// The first event says the process started. Recv does not watch ctx
	// (the stream lives in long), so it is waited for beside ctx.
	first := make(chan error, 1)
	var resp *sandboxv1.AttachProcessResponse
	go func() {
		var err error
		resp, err = stream.Recv()
		first <- err
	}()
	select {
	case err = <-first:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil && resp.GetStarted() == nil {
		err = fmt.Errorf("the sandbox answered %T before the process started", resp.GetEvent())
	}
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return stream, resp.GetStarted(), cancel, nil
}

// ID is the process's id in the sandbox's process table.
func (p *Process) ID() string { return p.info.GetId() }

// HostWorkdir is, for a local sandbox, the workspace's directory on the
// host, which the process sees as its working directory; empty for a
// container, whose processes see the agent-facing workspace.
func (p *Process) HostWorkdir() string { return p.hostWorkdir }

// Done is closed when the process has exited or its stream ended.
func (p *Process) Done() <-chan struct{} { return p.exited }

// pump copies the process's stdout into the pipe Read reads, keeps the
// tail of its stderr, and ends the pipe when the process exits or the
// stream breaks. A line longer than maxLine ends it too: the program is
// not speaking the protocol, and nothing would bound the buffer.
func (p *Process) pump(pw *io.PipeWriter, maxLine int) {
	defer close(p.exited)
	line := 0
	for {
		resp, err := p.stream.Recv()
		if err != nil {
			pw.CloseWithError(fmt.Errorf("the process's output stream ended: %w", err))
			return
		}
		switch ev := resp.GetEvent().(type) {
		case *sandboxv1.AttachProcessResponse_Stdout:
			b := ev.Stdout
			if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
				line = len(b) - i - 1
			} else {
				line += len(b)
			}
			if line > maxLine {
				pw.CloseWithError(fmt.Errorf("the process wrote a message longer than %d bytes", maxLine))
				return
			}
			if _, err := pw.Write(b); err != nil {
				return // the reader is closed
			}
		case *sandboxv1.AttachProcessResponse_Dropped:
			// A gap in the stream cuts a message: nothing after it parses.
			pw.CloseWithError(fmt.Errorf("the sandbox dropped %d bytes of the process's output", ev.Dropped))
			return
		case *sandboxv1.AttachProcessResponse_Stderr:
			p.keepStderr(ev.Stderr)
			if p.stderrTo != nil {
				_, _ = p.stderrTo.Write(ev.Stderr)
			}
		case *sandboxv1.AttachProcessResponse_Exit:
			pw.CloseWithError(fmt.Errorf("the process exited (%s)%s", exitText(ev.Exit), p.stderrText()))
			return
		}
	}
}

func (p *Process) keepStderr(b []byte) {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	p.stderr = append(p.stderr, b...)
	if n := len(p.stderr); n > StderrTailBytes {
		p.stderr = append(p.stderr[:0], p.stderr[n-StderrTailBytes:]...)
	}
}

// StderrTail is the end of the process's standard error so far (at most
// StderrTailBytes, from a character boundary), trimmed.
func (p *Process) StderrTail() string {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	s := bytes.TrimSpace(p.stderr)
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return string(s)
}

// StderrIntro introduces the end of a process's standard error in the
// error of a read after it exited; callers that show the standard error on
// its own cut the error there.
const StderrIntro = "; its last standard error: "

func (p *Process) stderrText() string {
	if s := p.StderrTail(); s != "" {
		return StderrIntro + s
	}
	return ""
}

func exitText(e *sandboxv1.ExitStatus) string {
	if c := e.GetExitCode(); c >= 0 {
		return fmt.Sprintf("exit code %d", c)
	}
	return "killed by a signal"
}

// Read implements io.Reader over the process's stdout.
func (p *Process) Read(b []byte) (int, error) { return p.out.Read(b) }

// Write implements io.Writer over the process's stdin.
func (p *Process) Write(b []byte) (int, error) {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	// The message owns its bytes: the caller may reuse b.
	msg := &sandboxv1.AttachProcessRequest{Msg: &sandboxv1.AttachProcessRequest_Stdin{Stdin: bytes.Clone(b)}}
	if err := p.stream.Send(msg); err != nil {
		return 0, fmt.Errorf("write to the process: %w", err)
	}
	return len(b), nil
}

// Close closes the process's stdin, kills its process group (its owners
// keep nothing in it that a new process would miss) and ends the stream.
func (p *Process) Close() error {
	p.Stop(0)
	return nil
}

// Stop ends the process gracefully: its stdin is closed (end of file asks
// a protocol server to finish), then, if it has not exited within grace,
// its process group gets SIGTERM, then after grace more SIGKILL; then the
// stream ends. A program that saves its state on the way out (a coding
// agent's session file) gets the time to. A grace of 0 kills at once.
func (p *Process) Stop(grace time.Duration) {
	p.closeOnce.Do(func() {
		p.sendMu.Lock()
		_ = p.stream.Send(&sandboxv1.AttachProcessRequest{Msg: &sandboxv1.AttachProcessRequest_CloseStdin{CloseStdin: true}})
		p.sendMu.Unlock()
		for _, sig := range []sandboxv1.ProcessSignal{sandboxv1.ProcessSignal_PROCESS_SIGNAL_SIGTERM, sandboxv1.ProcessSignal_PROCESS_SIGNAL_SIGKILL} {
			if grace > 0 && p.waitExit(grace) {
				break
			}
			if grace <= 0 && sig != sandboxv1.ProcessSignal_PROCESS_SIGNAL_SIGKILL {
				continue
			}
			ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), killTimeout)
			_, _ = p.sandbox.SignalProcess(ctx, &sandboxv1.SignalProcessRequest{AgentId: p.agentID, Id: p.info.GetId(), Signal: sig})
			cancel()
		}
		p.sendMu.Lock()
		_ = p.stream.CloseSend()
		p.sendMu.Unlock()
		p.cancel()
		_ = p.out.Close()
	})
}

// waitExit waits at most d for the process to exit.
func (p *Process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}
