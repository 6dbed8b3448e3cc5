package acp

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/services/agent/internal/sandboxproc"
)

// Bounds of the agent's terminals.
const (
	// MaxTerminals bounds the terminals one run keeps at once.
	MaxTerminals = 16
	// DefaultTerminalOutputBytes is the output a terminal keeps (its end)
	// when the agent sets no outputByteLimit, and the most it may set.
	DefaultTerminalOutputBytes = 1 << 20
)

// terminals are the commands the agent runs through terminal/*: processes
// of the sandbox started through the process API, tagged with the agent's
// tag, all killed when the run ends.
type terminals struct {
	sandbox sandboxproc.Sandbox
	agentID string
	tag     string
	// ctx is the run's, which the processes' streams live in.
	ctx context.Context

	mu   sync.Mutex
	byID map[string]*terminal
	n    int
	// closed is set when the run ended: no terminal is kept after it.
	closed bool
}

// terminal is one command and the end of its output.
type terminal struct {
	t      *terminals
	procID string
	stream interface {
		Recv() (*sandboxv1.AttachProcessResponse, error)
	}
	cancel context.CancelFunc
	limit  int
	done   chan struct{}

	mu        sync.Mutex
	out       []byte
	truncated bool
	exit      *acpsdk.TerminalExitStatus
}

func (ts *terminals) create(ctx context.Context, p acpsdk.CreateTerminalRequest) (string, error) {
	ts.mu.Lock()
	if len(ts.byID) >= MaxTerminals {
		ts.mu.Unlock()
		return "", acpsdk.NewInvalidRequest(map[string]any{"error": fmt.Sprintf("at most %d terminals at once; release one", MaxTerminals)})
	}
	ts.n++
	id := fmt.Sprintf("term-%d", ts.n)
	ts.mu.Unlock()

	limit := DefaultTerminalOutputBytes
	if p.OutputByteLimit != nil && *p.OutputByteLimit >= 0 && *p.OutputByteLimit < limit {
		limit = *p.OutputByteLimit
	}
	env := map[string]string{}
	for _, v := range p.Env {
		env[v.Name] = v.Value
	}
	start := &sandboxv1.StartProcessRequest{AgentId: ts.agentID, Argv: terminalArgv(p.Command, p.Args), Env: env, Tag: ts.tag}
	if p.Cwd != nil {
		start.Cwd = *p.Cwd
	}
	stream, info, cancel, err := sandboxproc.Attach(ctx, ts.ctx, ts.sandbox, start)
	if err != nil {
		return "", err
	}
	t := &terminal{t: ts, procID: info.GetId(), stream: stream, cancel: cancel, limit: limit, done: make(chan struct{})}
	go t.pump()
	ts.mu.Lock()
	if ts.closed {
		ts.mu.Unlock()
		t.kill(ctx)
		cancel()
		return "", acpsdk.NewInvalidRequest(map[string]any{"error": "the run has ended"})
	}
	ts.byID[id] = t
	ts.mu.Unlock()
	return id, nil
}

// terminalArgv is what a terminal runs: a command with arguments is a
// program and its arguments; a command alone is a shell line (adapters
// send "echo hi > a.txt; ls" that way), run by /bin/sh -c as editors do.
func terminalArgv(command string, args []string) []string {
	if len(args) == 0 {
		return []string{"/bin/sh", "-c", command}
	}
	return append([]string{command}, args...)
}

// pump keeps the end of the command's output, stdout and stderr as they
// come, until it exits or its stream ends.
func (t *terminal) pump() {
	defer close(t.done)
	for {
		resp, err := t.stream.Recv()
		if err != nil {
			t.finish(&acpsdk.TerminalExitStatus{Signal: acpsdk.Ptr("the process's stream ended: " + err.Error())})
			return
		}
		switch ev := resp.GetEvent().(type) {
		case *sandboxv1.AttachProcessResponse_Stdout:
			t.keep(ev.Stdout)
		case *sandboxv1.AttachProcessResponse_Stderr:
			t.keep(ev.Stderr)
		case *sandboxv1.AttachProcessResponse_Dropped:
			t.mu.Lock()
			t.truncated = true
			t.mu.Unlock()
		case *sandboxv1.AttachProcessResponse_Exit:
			st := &acpsdk.TerminalExitStatus{}
			if c := ev.Exit.GetExitCode(); c >= 0 {
				st.ExitCode = acpsdk.Ptr(int(c))
			} else {
				st.Signal = acpsdk.Ptr("SIGKILL")
			}
			t.finish(st)
			return
		}
	}
}

func (t *terminal) finish(st *acpsdk.TerminalExitStatus) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.exit == nil {
		t.exit = st
	}
}

// keep appends output, dropping from the start past the limit on a
// character boundary, as the protocol asks.
func (t *terminal) keep(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.out = append(t.out, b...)
	if n := len(t.out) - t.limit; n > 0 {
		for n < len(t.out) && !utf8.RuneStart(t.out[n]) {
			n++
		}
		t.out = append(t.out[:0], t.out[n:]...)
		t.truncated = true
	}
}

func (t *terminal) snapshot() (string, bool, *acpsdk.TerminalExitStatus) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var exit *acpsdk.TerminalExitStatus
	if t.exit != nil {
		e := *t.exit
		exit = &e
	}
	return string(t.out), t.truncated, exit
}

// kill kills the command's process group; a command that ended is left.
func (t *terminal) kill(ctx context.Context) {
	select {
	case <-t.done:
		return
	default:
	}
	_, _ = t.t.sandbox.SignalProcess(context.WithoutCancel(ctx), &sandboxv1.SignalProcessRequest{
		AgentId: t.t.agentID, Id: t.procID, Signal: sandboxv1.ProcessSignal_PROCESS_SIGNAL_SIGKILL,
	})
}

func (ts *terminals) get(id string) (*terminal, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.byID[id]
	if t == nil {
		return nil, acpsdk.NewInvalidParams(map[string]any{"terminalId": id, "error": "no such terminal (released, or never created)"})
	}
	return t, nil
}

func (ts *terminals) release(ctx context.Context, id string) error {
	t, err := ts.get(id)
	if err != nil {
		return err
	}
	ts.mu.Lock()
	delete(ts.byID, id)
	ts.mu.Unlock()
	t.kill(ctx)
	t.cancel()
	return nil
}

// closeAll kills every terminal still kept; the run has ended.
func (ts *terminals) closeAll(ctx context.Context) {
	ts.mu.Lock()
	all := maps.Clone(ts.byID)
	clear(ts.byID)
	ts.closed = true
	ts.mu.Unlock()
	for _, t := range all {
		t.kill(ctx)
		t.cancel()
	}
}
