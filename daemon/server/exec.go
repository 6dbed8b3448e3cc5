package server

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/wickfs"
)

// Exec runs a command and streams its output as it is produced. The command
// leads its own process group; the group is killed at the timeout and when
// the stream's context ends (the client cancelled or went away).
func (s *Server) Exec(req *daemonv1.ExecRequest, stream grpc.ServerStreamingServer[daemonv1.ExecResponse]) error {
	if req.GetTimeout().AsDuration() < 0 || req.GetMaxOutputBytes() < 0 {
		return invalidf("timeout and max_output_bytes must not be negative")
	}
	o := wickfs.ExecOptions{
		Timeout:        req.GetTimeout().AsDuration(),
		MaxOutputBytes: req.GetMaxOutputBytes(),
		Workdir:        req.GetWorkdir(),
		Env:            req.GetEnv(),
	}
	timeout, max := s.fs.ExecLimits(o)
	ctx, cancel := context.WithTimeout(stream.Context(), timeout)
	defer cancel()
	cmd, err := s.fs.Command(ctx, req.GetCommand(), o)
	if err != nil {
		return toStatus(err)
	}
	if len(req.GetStdin()) > 0 {
		cmd.Stdin = bytes.NewReader(req.GetStdin())
	}
	out := &execSender{stream: stream}
	lim := wickfs.NewOutputLimit(max)
	cmd.Stdout = lim.Writer(execWriter{out, false})
	cmd.Stderr = lim.Writer(execWriter{out, true})
	start := time.Now()
	err = cmd.Run()
	if cmd.ProcessState == nil {
		if cerr := stream.Context().Err(); cerr != nil {
			return toStatus(cerr)
		}
		return status.Errorf(codes.Internal, "exec: start: %v", err)
	}
	if err := stream.Context().Err(); err != nil {
		return toStatus(err)
	}
	if out.err != nil {
		return out.err
	}
	return stream.Send(&daemonv1.ExecResponse{Output: &daemonv1.ExecResponse_Exit{Exit: &daemonv1.ExitStatus{
		ExitCode:  int32(cmd.ProcessState.ExitCode()),
		TimedOut:  errors.Is(ctx.Err(), context.DeadlineExceeded),
		Truncated: lim.Truncated(),
		Duration:  durationpb.New(time.Since(start)),
	}}})
}

// execSender serialises the stdout and stderr copiers' sends on one stream.
type execSender struct {
	mu     sync.Mutex
	stream grpc.ServerStreamingServer[daemonv1.ExecResponse]
	err    error
}

type execWriter struct {
	s      *execSender
	stderr bool
}

func (w execWriter) Write(b []byte) (int, error) {
	msg := &daemonv1.ExecResponse{}
	if w.stderr {
		msg.Output = &daemonv1.ExecResponse_Stderr{Stderr: b}
	} else {
		msg.Output = &daemonv1.ExecResponse_Stdout{Stdout: b}
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.s.err != nil {
		return 0, w.s.err
	}
	if err := w.s.stream.Send(msg); err != nil {
		w.s.err = err
		return 0, err
	}
	return len(b), nil
}
