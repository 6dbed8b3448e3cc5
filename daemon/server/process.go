package server

import (
	"context"
	"errors"
	"io"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/wick-agent/wick/daemon/process"
	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/wickfs"
)

// StartProcess starts a program with pipes in the workspace.
func (s *Server) StartProcess(ctx context.Context, req *daemonv1.StartProcessRequest) (*daemonv1.StartProcessResponse, error) {
	info, err := s.procs.StartProcess(ctx, processSpec(req))
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	return &daemonv1.StartProcessResponse{Process: processInfo(info)}, nil
}

// AttachProcess streams a process's output from an offset and writes the
// client's stdin messages to it.
func (s *Server) AttachProcess(stream grpc.BidiStreamingServer[daemonv1.AttachProcessRequest, daemonv1.AttachProcessResponse]) error {
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return invalidf("AttachProcess needs an attach message first")
		}
		return err
	}
	at, start := first.GetAttach(), first.GetStart()
	if at == nil && start == nil {
		return invalidf("the first AttachProcess message must be attach or start")
	}
	input := func() (process.Input, error) {
		req, err := stream.Recv()
		if err != nil {
			return process.Input{}, err
		}
		switch m := req.GetMsg().(type) {
		case *daemonv1.AttachProcessRequest_Stdin:
			return process.Input{Data: m.Stdin}, nil
		case *daemonv1.AttachProcessRequest_CloseStdin:
			return process.Input{Close: m.CloseStdin}, nil
		}
		return process.Input{}, invalidf("AttachProcess takes one attach or start message, first")
	}
	send := func(ev process.Event) error { return stream.Send(processEvent(ev)) }
	if start != nil {
		return rpcstatus.FromError(stream.Context(), s.procs.StartAttachedProcess(stream.Context(), processSpec(start), input, send))
	}
	return rpcstatus.FromError(stream.Context(), s.procs.AttachProcess(stream.Context(), at.GetId(), at.GetOffset(), input, send))
}

// SignalProcess signals a process's group.
func (s *Server) SignalProcess(ctx context.Context, req *daemonv1.SignalProcessRequest) (*daemonv1.SignalProcessResponse, error) {
	sig := req.GetSignal()
	if _, known := daemonv1.ProcessSignal_name[int32(sig)]; !known || sig == daemonv1.ProcessSignal_PROCESS_SIGNAL_UNSPECIFIED {
		return nil, invalidf("signal %d is not one a process can be sent", sig)
	}
	if err := s.procs.SignalProcess(ctx, req.GetId(), syscall.Signal(sig)); err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	return &daemonv1.SignalProcessResponse{}, nil
}

// ListProcesses lists running and recently exited processes.
func (s *Server) ListProcesses(ctx context.Context, req *daemonv1.ListProcessesRequest) (*daemonv1.ListProcessesResponse, error) {
	ps, err := s.procs.ListProcesses(ctx, req.GetId(), req.GetTag())
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	out := &daemonv1.ListProcessesResponse{}
	for _, p := range ps {
		out.Processes = append(out.Processes, processInfo(p))
	}
	return out, nil
}

func processSpec(req *daemonv1.StartProcessRequest) process.Spec {
	return process.Spec{Argv: req.GetArgv(), Env: req.GetEnv(), Cwd: req.GetCwd(), Tag: req.GetTag()}
}

func processInfo(p *process.Info) *daemonv1.ProcessInfo {
	out := &daemonv1.ProcessInfo{Id: p.ID, Tag: p.Tag, Argv: p.Argv, Cwd: p.Cwd, Pid: int32(p.PID),
		Running: p.Exit == nil, StartedAt: timestamppb.New(p.Started), OutputEnd: p.OutputEnd}
	if p.Exit != nil {
		out.Exit = processExit(p.Exit)
	}
	return out
}

func processEvent(ev process.Event) *daemonv1.AttachProcessResponse {
	m := &daemonv1.AttachProcessResponse{Offset: ev.Offset}
	switch {
	case ev.Started != nil:
		m.Event = &daemonv1.AttachProcessResponse_Started{Started: processInfo(ev.Started)}
	case ev.Exit != nil:
		m.Event = &daemonv1.AttachProcessResponse_Exit{Exit: processExit(ev.Exit)}
	case ev.Dropped > 0:
		m.Event = &daemonv1.AttachProcessResponse_Dropped{Dropped: ev.Dropped}
	case ev.Stream == process.Stderr:
		m.Event = &daemonv1.AttachProcessResponse_Stderr{Stderr: ev.Data}
	default:
		m.Event = &daemonv1.AttachProcessResponse_Stdout{Stdout: ev.Data}
	}
	return m
}

func processExit(e *wickfs.ExitStatus) *daemonv1.ExitStatus {
	return &daemonv1.ExitStatus{ExitCode: int32(e.ExitCode), Duration: durationpb.New(e.Duration)}
}
