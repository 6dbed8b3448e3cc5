package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/wick-agent/wick/daemon/process"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/rpcstatus"
)

// processAPI is what the process RPCs need of a sandbox: its daemon's
// client (daemonfs.FS) or, on the local backend, the in-process table
// (process.Table), confined as the sandbox's commands are.
type processAPI interface {
	StartProcess(ctx context.Context, s process.Spec) (*process.Info, error)
	AttachProcess(ctx context.Context, id string, offset int64, input func() (process.Input, error), send func(process.Event) error) error
	StartAttachedProcess(ctx context.Context, s process.Spec, input func() (process.Input, error), send func(process.Event) error) error
	SignalProcess(ctx context.Context, id string, sig syscall.Signal) error
	ListProcesses(ctx context.Context, id, tag string) ([]*process.Info, error)
}

// processes is the process API of a sandbox. The Docker-exec fallback has
// none: a process outlives the call that started it, and only the daemon
// keeps it; while the daemon is down (being re-injected) calls answer
// Unavailable.
func (s *Service) processes(ctx context.Context, agent string) (processAPI, view, error) {
	v, err := s.use(ctx, agent)
	if err != nil {
		return nil, v, err
	}
	switch {
	case v.procs != nil:
		return v.procs, v, nil
	case v.set.DockerHost != "":
		return nil, v, fmt.Errorf("%w: processes need wick-daemon's socket, which a sandbox on a remote engine does not have", errPrecondition)
	case v.onDaemon():
		return v.daemon, v, nil
	}
	return nil, v, fmt.Errorf("%w: wick-daemon is not answering and is being restarted; processes need it, try again shortly", errUnavailable)
}

// daemonErr records a daemon that did not answer a process call, so it is
// re-injected, and passes err on.
func (s *Service) daemonErr(v view, err error) error {
	if v.procs == nil && status.Code(err) == codes.Unavailable {
		s.fallback(v.b, "process")
	}
	return err
}

// StartProcess starts a program in the sandbox.
func (s *Service) StartProcess(ctx context.Context, req *sandboxv1.StartProcessRequest) (*sandboxv1.StartProcessResponse, error) {
	if len(req.GetArgv()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "argv must name a program")
	}
	p, v, err := s.processes(ctx, req.GetAgentId())
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	info, err := p.StartProcess(ctx, processSpec(req))
	if err != nil {
		return nil, rpcstatus.FromError(ctx, s.daemonErr(v, err))
	}
	return &sandboxv1.StartProcessResponse{Process: processInfo(info)}, nil
}

// AttachProcess streams a process's output from an offset and passes the
// caller's stdin on.
func (s *Service) AttachProcess(stream grpc.BidiStreamingServer[sandboxv1.AttachProcessRequest, sandboxv1.AttachProcessResponse]) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return status.Error(codes.InvalidArgument, "AttachProcess needs an attach message first")
		}
		return err
	}
	at, start := first.GetAttach(), first.GetStart()
	agent := at.GetAgentId()
	switch {
	case start != nil:
		if len(start.GetArgv()) == 0 {
			return status.Error(codes.InvalidArgument, "argv must name a program")
		}
		agent = start.GetAgentId()
	case at == nil:
		return status.Error(codes.InvalidArgument, "the first AttachProcess message must carry attach or start")
	}
	p, v, err := s.processes(ctx, agent)
	if err != nil {
		return rpcstatus.FromError(ctx, err)
	}
	input := func() (process.Input, error) {
		m, err := stream.Recv()
		if err != nil {
			return process.Input{}, err
		}
		switch msg := m.GetMsg().(type) {
		case *sandboxv1.AttachProcessRequest_Stdin:
			return process.Input{Data: msg.Stdin}, nil
		case *sandboxv1.AttachProcessRequest_CloseStdin:
			return process.Input{Close: msg.CloseStdin}, nil
		}
		return process.Input{}, fmt.Errorf("%w: AttachProcess takes one attach or start message, first", errInvalid)
	}
	send := func(ev process.Event) error { return stream.Send(processEvent(ev)) }
	if start != nil {
		err = p.StartAttachedProcess(ctx, processSpec(start), input, send)
	} else {
		err = p.AttachProcess(ctx, at.GetId(), at.GetOffset(), input, send)
	}
	return rpcstatus.FromError(ctx, s.daemonErr(v, err))
}

// SignalProcess sends a signal to a process's group.
func (s *Service) SignalProcess(ctx context.Context, req *sandboxv1.SignalProcessRequest) (*sandboxv1.SignalProcessResponse, error) {
	sig := req.GetSignal()
	if _, known := sandboxv1.ProcessSignal_name[int32(sig)]; !known || sig == sandboxv1.ProcessSignal_PROCESS_SIGNAL_UNSPECIFIED {
		return nil, status.Errorf(codes.InvalidArgument, "signal %d is not one a process can be sent", sig)
	}
	p, v, err := s.processes(ctx, req.GetAgentId())
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	// Each ProcessSignal value is the signal's Linux number.
	if err := p.SignalProcess(ctx, req.GetId(), syscall.Signal(sig)); err != nil {
		return nil, rpcstatus.FromError(ctx, s.daemonErr(v, err))
	}
	return &sandboxv1.SignalProcessResponse{}, nil
}

// ListProcesses lists the sandbox's processes by id or tag.
func (s *Service) ListProcesses(ctx context.Context, req *sandboxv1.ListProcessesRequest) (*sandboxv1.ListProcessesResponse, error) {
	p, v, err := s.processes(ctx, req.GetAgentId())
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	ps, err := p.ListProcesses(ctx, req.GetId(), req.GetTag())
	if err != nil {
		return nil, rpcstatus.FromError(ctx, s.daemonErr(v, err))
	}
	out := &sandboxv1.ListProcessesResponse{Processes: make([]*sandboxv1.ProcessInfo, len(ps))}
	for i, info := range ps {
		out.Processes[i] = processInfo(info)
	}
	return out, nil
}

func processSpec(req *sandboxv1.StartProcessRequest) process.Spec {
	return process.Spec{Argv: req.GetArgv(), Env: req.GetEnv(), Cwd: req.GetCwd(), Tag: req.GetTag()}
}

func processInfo(p *process.Info) *sandboxv1.ProcessInfo {
	out := &sandboxv1.ProcessInfo{Id: p.ID, Tag: p.Tag, Argv: p.Argv, Cwd: p.Cwd, Pid: int32(p.PID),
		Running: p.Exit == nil, StartedAt: timestamppb.New(p.Started), OutputEnd: p.OutputEnd}
	if p.Exit != nil {
		out.Exit = exitStatus(p.Exit)
	}
	return out
}

func processEvent(ev process.Event) *sandboxv1.AttachProcessResponse {
	m := &sandboxv1.AttachProcessResponse{Offset: ev.Offset}
	switch {
	case ev.Started != nil:
		m.Event = &sandboxv1.AttachProcessResponse_Started{Started: processInfo(ev.Started)}
	case ev.Exit != nil:
		m.Event = &sandboxv1.AttachProcessResponse_Exit{Exit: exitStatus(ev.Exit)}
	case ev.Dropped > 0:
		m.Event = &sandboxv1.AttachProcessResponse_Dropped{Dropped: ev.Dropped}
	case ev.Stream == process.Stderr:
		m.Event = &sandboxv1.AttachProcessResponse_Stderr{Stderr: ev.Data}
	default:
		m.Event = &sandboxv1.AttachProcessResponse_Stdout{Stdout: ev.Data}
	}
	return m
}
