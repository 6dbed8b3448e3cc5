package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
)

// defaultTerm is TERM for fallback terminals.
const defaultTerm = "xterm-256color"

type terminalStream = grpc.BidiStreamingServer[sandboxv1.TerminalRequest, sandboxv1.TerminalResponse]

// Terminal is an interactive shell in the sandbox.
func (s *Service) Terminal(stream terminalStream) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return status.Error(codes.InvalidArgument, "the first Terminal message must carry start")
	}
	v, err := s.use(ctx, start.GetAgentId())
	if err != nil {
		return rpcErr(err)
	}
	if v.onDaemon() {
		// A terminal may print nothing for a long time, so whether the daemon
		// answers is asked up front rather than read from the first output.
		hc, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
		_, herr := v.daemon.Health(hc, &daemonv1.HealthRequest{})
		cancel()
		if herr == nil || v.transport == transportLocal {
			return s.terminalDaemon(ctx, v, start, stream)
		}
		s.fallback(v.b, "terminal")
	}
	return rpcErr(s.terminalExec(ctx, v, start, stream))
}

func (s *Service) terminalDaemon(ctx context.Context, v view, start *sandboxv1.TerminalStart, stream terminalStream) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dst, err := v.daemon.Terminal(ctx)
	if err != nil {
		return err
	}
	if err := dst.Send(&daemonv1.TerminalRequest{Msg: &daemonv1.TerminalRequest_Start{Start: &daemonv1.TerminalStart{
		Command: start.GetCommand(), Size: &daemonv1.TerminalSize{Rows: start.GetSize().GetRows(), Cols: start.GetSize().GetCols()}}}}); err != nil && err != io.EOF {
		return err
	}
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				if err == io.EOF {
					_ = dst.CloseSend()
				} else {
					cancel()
				}
				return
			}
			var out *daemonv1.TerminalRequest
			switch {
			case m.GetInput() != nil:
				out = &daemonv1.TerminalRequest{Msg: &daemonv1.TerminalRequest_Input{Input: m.GetInput()}}
			case m.GetResize() != nil:
				out = &daemonv1.TerminalRequest{Msg: &daemonv1.TerminalRequest_Resize{Resize: &daemonv1.TerminalSize{Rows: m.GetResize().GetRows(), Cols: m.GetResize().GetCols()}}}
			default:
				continue
			}
			if err := dst.Send(out); err != nil {
				return
			}
		}
	}()
	for {
		m, err := dst.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var out *sandboxv1.TerminalResponse
		switch {
		case m.GetExit() != nil:
			out = &sandboxv1.TerminalResponse{Msg: &sandboxv1.TerminalResponse_Exit{Exit: exitStatus(m.GetExit())}}
		default:
			out = &sandboxv1.TerminalResponse{Msg: &sandboxv1.TerminalResponse_Output{Output: m.GetOutput()}}
		}
		if err := stream.Send(out); err != nil {
			return err
		}
	}
}

// terminalExec is the fallback terminal: docker exec with a TTY.
func (s *Service) terminalExec(ctx context.Context, v view, start *sandboxv1.TerminalStart, stream terminalStream) error {
	cmd := []string{"sh"}
	if c := start.GetCommand(); c != "" {
		cmd = []string{"sh", "-c", c}
	}
	tty, err := dockerbox.OpenTTY(ctx, v.engine, v.containerID, dockerbox.RunOptions{
		User: v.cuser.Name, Cmd: cmd, Env: []string{"TERM=" + defaultTerm}, WorkingDir: v.set.Params.Workdir,
	}, uint(start.GetSize().GetRows()), uint(start.GetSize().GetCols()))
	if err != nil {
		return err
	}
	defer tty.Close()
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					tty.Close()
				}
				return
			}
			if in := m.GetInput(); in != nil {
				if _, err := tty.Write(in); err != nil {
					return
				}
			} else if r := m.GetResize(); r != nil {
				_ = tty.Resize(ctx, uint(r.GetRows()), uint(r.GetCols()))
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := tty.Read(buf)
		if n > 0 {
			if serr := stream.Send(&sandboxv1.TerminalResponse{Msg: &sandboxv1.TerminalResponse_Output{Output: bytes.Clone(buf[:n])}}); serr != nil {
				return serr
			}
		}
		if err != nil {
			break
		}
	}
	code, err := tty.ExitCode(ctx)
	if err != nil {
		return err
	}
	return stream.Send(&sandboxv1.TerminalResponse{Msg: &sandboxv1.TerminalResponse_Exit{Exit: &sandboxv1.ExitStatus{ExitCode: int32(code)}}})
}
