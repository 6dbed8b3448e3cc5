package server

import (
	"errors"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
)

// Terminal sizes used when a session gives none.
const (
	defaultRows = 24
	defaultCols = 80
	// outputDrain bounds how long output written just before the shell
	// exited is still forwarded.
	outputDrain = 2 * time.Second
)

func winsize(sz *daemonv1.TerminalSize) (*pty.Winsize, error) {
	rows, cols := uint32(defaultRows), uint32(defaultCols)
	if sz != nil {
		if sz.GetRows() > 0 {
			rows = sz.GetRows()
		}
		if sz.GetCols() > 0 {
			cols = sz.GetCols()
		}
	}
	if rows > 0xffff || cols > 0xffff {
		return nil, invalidf("terminal size %dx%d is too large", rows, cols)
	}
	return &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}, nil
}

// Terminal runs a shell on a pseudo-terminal. It ends when the shell exits
// (after a final exit message) or when the client closes its side or goes
// away (then the shell's whole session is killed).
func (s *Server) Terminal(stream grpc.BidiStreamingServer[daemonv1.TerminalRequest, daemonv1.TerminalResponse]) error {
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return invalidf("Terminal needs a start message first")
		}
		return err
	}
	start := first.GetStart()
	if start == nil {
		return invalidf("the first Terminal message must be start")
	}
	ws, err := winsize(start.GetSize())
	if err != nil {
		return err
	}
	var cmd *exec.Cmd
	if start.GetCommand() == "" {
		cmd = exec.Command(s.cfg.shell)
	} else {
		cmd = exec.Command(s.cfg.shell, "-c", start.GetCommand())
	}
	env := map[string]string{"TERM": DefaultTerm}
	for k, v := range start.GetEnv() {
		env[k] = v
	}
	if err := s.fs.PrepareCmd(cmd, start.GetWorkdir(), env); err != nil {
		return toStatus(err)
	}
	began := time.Now()
	// pty.Start makes the shell a session leader, so its pid is also the
	// process group to kill.
	ptmx, err := pty.StartWithSize(cmd, ws)
	if err != nil {
		return status.Errorf(codes.Internal, "terminal: start %s: %v", s.cfg.shell, err)
	}
	pid := cmd.Process.Pid
	var sendMu sync.Mutex
	send := func(m *daemonv1.TerminalResponse) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}

	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			if n > 0 {
				if send(&daemonv1.TerminalResponse{Msg: &daemonv1.TerminalResponse_Output{Output: buf[:n]}}) != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	inDone := make(chan error, 1)
	go func() {
		for {
			req, err := stream.Recv()
			if err != nil {
				inDone <- err
				return
			}
			switch m := req.GetMsg().(type) {
			case *daemonv1.TerminalRequest_Input:
				if _, err := ptmx.Write(m.Input); err != nil {
					inDone <- nil
					return
				}
			case *daemonv1.TerminalRequest_Resize:
				if ws, err := winsize(m.Resize); err == nil {
					_ = pty.Setsize(ptmx, ws)
				}
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
		case <-time.After(outputDrain):
		}
		ptmx.Close()
		<-outDone
		return send(&daemonv1.TerminalResponse{Msg: &daemonv1.TerminalResponse_Exit{Exit: &daemonv1.ExitStatus{
			ExitCode: int32(cmd.ProcessState.ExitCode()),
			Duration: durationpb.New(time.Since(began)),
		}}})
	case err := <-inDone:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-waited
		ptmx.Close()
		<-outDone
		if err == nil || errors.Is(err, io.EOF) {
			return nil
		}
		return toStatus(stream.Context().Err())
	}
}
