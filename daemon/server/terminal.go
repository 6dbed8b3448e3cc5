package server

import (
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/wickfs"
)

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
	recv := func() (wickfs.TerminalInput, error) {
		for {
			req, err := stream.Recv()
			if err != nil {
				return wickfs.TerminalInput{}, err
			}
			switch m := req.GetMsg().(type) {
			case *daemonv1.TerminalRequest_Input:
				return wickfs.TerminalInput{Data: m.Input}, nil
			case *daemonv1.TerminalRequest_Resize:
				return wickfs.TerminalInput{Resize: true, Rows: m.Resize.GetRows(), Cols: m.Resize.GetCols()}, nil
			}
		}
	}
	send := func(b []byte) error {
		return stream.Send(&daemonv1.TerminalResponse{Msg: &daemonv1.TerminalResponse_Output{Output: b}})
	}
	exit, err := s.fs.Terminal(stream.Context(), wickfs.TerminalOptions{
		Shell: s.cfg.shell, Command: start.GetCommand(),
		Rows: start.GetSize().GetRows(), Cols: start.GetSize().GetCols(),
		Workdir: start.GetWorkdir(), Env: start.GetEnv(),
	}, recv, send)
	if err != nil || exit == nil {
		return rpcstatus.FromError(stream.Context(), err)
	}
	return stream.Send(&daemonv1.TerminalResponse{Msg: &daemonv1.TerminalResponse_Exit{Exit: &daemonv1.ExitStatus{
		ExitCode: int32(exit.ExitCode),
		Duration: durationpb.New(exit.Duration),
	}}})
}
