package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/sandboxfs"
)

// Bounds of a stdio server's process.
const (
	// stderrTail is how much of a server's last standard error is kept to
	// say why it stopped.
	stderrTail = 2 << 10
	// killTimeout bounds the kill of a server's process when it is closed.
	killTimeout = 5 * time.Second
	// processTagPrefix tags the servers' processes, so ListProcesses shows
	// which are MCP servers.
	processTagPrefix = "mcp:"
)

// process is a stdio server running in the sandbox, as the byte stream the
// protocol's newline-delimited JSON goes over: Write sends its stdin, Read
// returns its stdout. It is started and attached in one call (the `start`
// message of AttachProcess), so none of its output is missed.
type process struct {
	sandbox Sandbox
	agentID string
	stream  grpc.BidiStreamingClient[sandboxv1.AttachProcessRequest, sandboxv1.AttachProcessResponse]
	cancel  context.CancelFunc
	// ctx carries the user for the kill at Close.
	ctx  context.Context
	info *sandboxv1.ProcessInfo
	out  *io.PipeReader

	sendMu    sync.Mutex
	closeOnce sync.Once

	errMu  sync.Mutex
	stderr []byte
}

// startProcess ensures the agent's sandbox, starts the server's command in
// it and attaches to it. ctx bounds the start; long is the context the
// process's stream lives in (the user's, until the pool closes).
func startProcess(ctx, long context.Context, sb Sandbox, agentID string, backend *loop.BackendCfg, cfg loop.MCPServerCfg, maxMessage int) (*process, error) {
	if sb == nil {
		return nil, errors.New("no sandbox service to run the server in")
	}
	if _, err := sb.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: agentID, Spec: sandboxfs.Spec(backend)}); err != nil {
		return nil, fmt.Errorf("ensure sandbox: %w", err)
	}
	sctx, cancel := context.WithCancel(long)
	stream, err := sb.AttachProcess(sctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("attach: %w", err)
	}
	start := &sandboxv1.StartProcessRequest{
		AgentId: agentID, Argv: append([]string{cfg.Command}, cfg.Args...), Env: cfg.Env, Tag: processTagPrefix + cfg.Name,
	}
	if err := stream.Send(&sandboxv1.AttachProcessRequest{Msg: &sandboxv1.AttachProcessRequest_Start{Start: start}}); err != nil {
		cancel()
		return nil, fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	// The first event says the process started; an error here is the
	// sandbox refusing it (no such program, too many processes).
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
		return nil, fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	pr, pw := io.Pipe()
	p := &process{sandbox: sb, agentID: agentID, stream: stream, cancel: cancel, ctx: long, info: resp.GetStarted(), out: pr}
	go p.pump(pw, maxMessage)
	return p, nil
}

// pump copies the process's stdout into the pipe Read reads, keeps the
// tail of its stderr, and ends the pipe when the process exits or the
// stream breaks. A line longer than maxMessage ends it too: the server
// is not speaking the protocol, and nothing would bound the buffer.
func (p *process) pump(pw *io.PipeWriter, maxMessage int) {
	line := 0
	for {
		resp, err := p.stream.Recv()
		if err != nil {
			pw.CloseWithError(fmt.Errorf("the server's output stream ended: %w", err))
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
			if line > maxMessage {
				pw.CloseWithError(fmt.Errorf("the server wrote a message longer than %d bytes", maxMessage))
				return
			}
			if _, err := pw.Write(b); err != nil {
				return // the reader is closed
			}
		case *sandboxv1.AttachProcessResponse_Dropped:
			// A gap in the stream cuts a message: nothing after it parses.
			pw.CloseWithError(fmt.Errorf("the sandbox dropped %d bytes of the server's output", ev.Dropped))
			return
		case *sandboxv1.AttachProcessResponse_Stderr:
			p.keepStderr(ev.Stderr)
		case *sandboxv1.AttachProcessResponse_Exit:
			pw.CloseWithError(fmt.Errorf("the server exited (%s)%s", exitText(ev.Exit), p.stderrText()))
			return
		}
	}
}

func (p *process) keepStderr(b []byte) {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	p.stderr = append(p.stderr, b...)
	if n := len(p.stderr); n > stderrTail {
		p.stderr = append(p.stderr[:0], p.stderr[n-stderrTail:]...)
	}
}

func (p *process) stderrText() string {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	if s := bytes.TrimSpace(p.stderr); len(s) > 0 {
		return "; its last standard error: " + string(s)
	}
	return ""
}

func exitText(e *sandboxv1.ExitStatus) string {
	if c := e.GetExitCode(); c >= 0 {
		return fmt.Sprintf("exit code %d", c)
	}
	return "killed by a signal"
}

// Read implements io.Reader over the server's stdout.
func (p *process) Read(b []byte) (int, error) { return p.out.Read(b) }

// Write implements io.Writer over the server's stdin.
func (p *process) Write(b []byte) (int, error) {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	// The message owns its bytes: the caller may reuse b.
	msg := &sandboxv1.AttachProcessRequest{Msg: &sandboxv1.AttachProcessRequest_Stdin{Stdin: bytes.Clone(b)}}
	if err := p.stream.Send(msg); err != nil {
		return 0, fmt.Errorf("write to the server: %w", err)
	}
	return len(b), nil
}

// Close closes the server's stdin, kills its process group (a server is
// stateless between sessions, so nothing is lost) and ends the stream.
func (p *process) Close() error {
	p.closeOnce.Do(func() {
		p.sendMu.Lock()
		_ = p.stream.Send(&sandboxv1.AttachProcessRequest{Msg: &sandboxv1.AttachProcessRequest_CloseStdin{CloseStdin: true}})
		_ = p.stream.CloseSend()
		p.sendMu.Unlock()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), killTimeout)
		defer cancel()
		_, _ = p.sandbox.SignalProcess(ctx, &sandboxv1.SignalProcessRequest{
			AgentId: p.agentID, Id: p.info.GetId(), Signal: sandboxv1.ProcessSignal_PROCESS_SIGNAL_SIGKILL,
		})
		p.cancel()
		_ = p.out.Close()
	})
	return nil
}
