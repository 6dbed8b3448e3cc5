package sandbox

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/wickfs"
)

// Terminal is an interactive shell in the sandbox: the daemon's PTY, the
// local directory's, or docker exec with a TTY when the daemon does not answer.
func (s *Service) Terminal(stream grpc.BidiStreamingServer[sandboxv1.TerminalRequest, sandboxv1.TerminalResponse]) error {
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
		return rpcstatus.FromError(ctx, err)
	}
	recv := func() (wickfs.TerminalInput, error) {
		for {
			m, err := stream.Recv()
			if err != nil {
				return wickfs.TerminalInput{}, err
			}
			switch {
			case m.GetInput() != nil:
				return wickfs.TerminalInput{Data: m.GetInput()}, nil
			case m.GetResize() != nil:
				return wickfs.TerminalInput{Resize: true, Rows: m.GetResize().GetRows(), Cols: m.GetResize().GetCols()}, nil
			}
		}
	}
	send := func(b []byte) error {
		// Send marshals b before it returns, so the caller may reuse it.
		return stream.Send(&sandboxv1.TerminalResponse{Msg: &sandboxv1.TerminalResponse_Output{Output: b}})
	}
	exit, err := s.workspace(v).Terminal(ctx, wickfs.TerminalOptions{
		Command: start.GetCommand(), Rows: start.GetSize().GetRows(), Cols: start.GetSize().GetCols(),
	}, recv, send)
	if err != nil {
		return rpcstatus.FromError(ctx, err)
	}
	if exit == nil {
		return nil // the client closed its side
	}
	return stream.Send(&sandboxv1.TerminalResponse{Msg: &sandboxv1.TerminalResponse_Exit{Exit: exitStatus(exit)}})
}
