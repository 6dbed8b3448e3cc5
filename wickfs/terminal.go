package wickfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	"github.com/creack/pty"
)

// Terminal defaults, used when a session gives none.
const (
	DefaultTerminalRows = 24
	DefaultTerminalCols = 80
	// DefaultTerm is TERM in a terminal unless the session sets it.
	DefaultTerm = "xterm-256color"
	// terminalDrain bounds how long output written just before the shell
	// exited is still forwarded.
	terminalDrain = 2 * time.Second
)

// TerminalOptions open a terminal session.
type TerminalOptions struct {
	// Shell is the program; empty means the LocalFS's shell.
	Shell string
	// Command is run with `<shell> -c`; empty starts the shell itself.
	Command string
	// Rows and Cols are the initial size; 0 takes the default.
	Rows, Cols uint32
	// Workdir is the agent-facing working directory; empty means the root.
	Workdir string
	// Env adds environment variables (TERM is DefaultTerm unless set here).
	Env map[string]string
}

// TerminalInput is one client message of a terminal session: keyboard input,
// or, when Resize is set, a new size.
type TerminalInput struct {
	Data       []byte
	Resize     bool
	Rows, Cols uint32
}

// winsize checks a terminal size and fills in the defaults.
func winsize(rows, cols uint32) (*pty.Winsize, error) {
	if rows == 0 {
		rows = DefaultTerminalRows
	}
	if cols == 0 {
		cols = DefaultTerminalCols
	}
	if rows > 0xffff || cols > 0xffff {
		return nil, invalid(fmt.Sprintf("terminal size %dx%d is too large", rows, cols))
	}
	return &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}, nil
}

// Terminal runs a shell on a pseudo-terminal in the workspace: send gets its
// output as it comes, recv delivers the client's input and resizes. It
// returns the exit status when the shell exits (after its last output was
// sent), and nil, nil when recv reports io.EOF (the client closed its side).
// When the client goes away or recv fails otherwise, the shell's whole
// session is killed and ctx's error (nil if ctx is live) is returned.
func (l *LocalFS) Terminal(ctx context.Context, o TerminalOptions, recv func() (TerminalInput, error), send func([]byte) error) (*ExitStatus, error) {
	ws, err := winsize(o.Rows, o.Cols)
	if err != nil {
		return nil, err
	}
	shell := o.Shell
	if shell == "" {
		shell = l.cfg.shell
	}
	cmd := exec.Command(shell)
	if o.Command != "" {
		cmd = exec.Command(shell, "-c", o.Command)
	}
	env := map[string]string{"TERM": DefaultTerm}
	for k, v := range o.Env {
		env[k] = v
	}
	// A cgroup of its own, so that what the session started dies with it
	// even when it left the session (setsid, double fork).
	cg, err := l.commandCgroup()
	if err != nil {
		return nil, err
	}
	defer func() {
		if cg != nil {
			_ = cg.Remove()
		}
	}()
	if err := l.prepare(cmd, o.Workdir, env, cg); err != nil {
		return nil, err
	}
	began := time.Now()
	// pty.Start makes the shell a session leader, so its pid is also the
	// process group to kill.
	ptmx, err := pty.StartWithSize(cmd, ws)
	if err != nil {
		return nil, fmt.Errorf("terminal: start %s: %w", shell, err)
	}
	pid := cmd.Process.Pid

	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			if n > 0 && send(buf[:n]) != nil {
				return
			}
			if err != nil {
				return
			}
		}
	}()
	inDone := make(chan error, 1)
	go func() {
		for {
			in, err := recv()
			if err != nil {
				inDone <- err
				return
			}
			if in.Resize {
				if ws, err := winsize(in.Rows, in.Cols); err == nil {
					_ = pty.Setsize(ptmx, ws)
				}
				continue
			}
			if _, err := ptmx.Write(in.Data); err != nil {
				inDone <- nil
				return
			}
		}
	}()
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()

	select {
	case <-waited:
		// The shell is gone; what it left on the terminal dies with it.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		select {
		case <-outDone:
		case <-time.After(terminalDrain):
		}
		ptmx.Close()
		<-outDone
		return &ExitStatus{ExitCode: cmd.ProcessState.ExitCode(), Duration: time.Since(began)}, nil
	case err := <-inDone:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-waited
		ptmx.Close()
		<-outDone
		if err == nil || errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, ctx.Err()
	}
}
