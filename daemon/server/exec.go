package server

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/wickfs"
)

// ExecStartedHeader is the header Exec sends once it has taken the command.
const ExecStartedHeader = "wick-exec-started"

// Exec runs a command and streams its output as it is produced. The command
// leads its own process group; the group is killed at the timeout and when
// the stream's context ends (the client cancelled or went away).
func (s *Server) Exec(req *daemonv1.ExecRequest, stream grpc.ServerStreamingServer[daemonv1.ExecResponse]) error {
	if req.GetTimeout().AsDuration() < 0 || req.GetMaxOutputBytes() < 0 {
		return invalidf("timeout and max_output_bytes must not be negative")
	}
	// The header tells the client the command was taken: if the stream
	// breaks after it (this daemon killed), the command may have run, and
	// the client must not run it again elsewhere.
	if err := stream.SendHeader(metadata.Pairs(ExecStartedHeader, "1")); err != nil {
		return err
	}
	st, err := s.fs.ExecStream(stream.Context(), req.GetCommand(),
		execWriter{stream, false}, execWriter{stream, true},
		wickfs.WithTimeout(req.GetTimeout().AsDuration()), wickfs.WithMaxOutput(req.GetMaxOutputBytes()),
		wickfs.WithWorkdir(req.GetWorkdir()), wickfs.WithEnv(req.GetEnv()), wickfs.WithStdin(req.GetStdin()))
	if err != nil {
		return rpcstatus.FromError(stream.Context(), err)
	}
	return stream.Send(&daemonv1.ExecResponse{Output: &daemonv1.ExecResponse_Exit{Exit: &daemonv1.ExitStatus{
		ExitCode:  int32(st.ExitCode),
		TimedOut:  st.TimedOut,
		Truncated: st.Truncated,
		Duration:  durationpb.New(st.Duration),
	}}})
}

// execWriter sends one output stream's chunks; ExecStream never writes the
// two streams at once.
type execWriter struct {
	stream grpc.ServerStreamingServer[daemonv1.ExecResponse]
	stderr bool
}

func (w execWriter) Write(b []byte) (int, error) {
	msg := &daemonv1.ExecResponse{}
	if w.stderr {
		msg.Output = &daemonv1.ExecResponse_Stderr{Stderr: b}
	} else {
		msg.Output = &daemonv1.ExecResponse_Stdout{Stdout: b}
	}
	if err := w.stream.Send(msg); err != nil {
		return 0, err
	}
	return len(b), nil
}
