package daemonfs

import (
	"context"
	"errors"
	"io"
	"syscall"

	"github.com/wick-agent/wick/daemon/process"
	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/wickfs"
)

// StartProcess starts a process through the daemon.
func (f *FS) StartProcess(ctx context.Context, s process.Spec) (*process.Info, error) {
	res, err := f.c.StartProcess(ctx, startRequest(s))
	if err != nil {
		return nil, fromStatus(err)
	}
	return processInfo(res.GetProcess()), nil
}

// AttachProcess attaches to a process through the daemon, with the same
// contract as process.Table.AttachProcess.
func (f *FS) AttachProcess(ctx context.Context, id string, offset int64, input func() (process.Input, error), send func(process.Event) error) error {
	return f.attach(ctx, &daemonv1.AttachProcessRequest{Msg: &daemonv1.AttachProcessRequest_Attach{
		Attach: &daemonv1.ProcessAttach{Id: id, Offset: offset}}}, input, send)
}

// StartAttachedProcess starts a process through the daemon and attaches to
// it from its first byte, as process.Table.StartAttachedProcess does.
func (f *FS) StartAttachedProcess(ctx context.Context, s process.Spec, input func() (process.Input, error), send func(process.Event) error) error {
	return f.attach(ctx, &daemonv1.AttachProcessRequest{Msg: &daemonv1.AttachProcessRequest_Start{
		Start: startRequest(s)}}, input, send)
}

// attach runs an AttachProcess stream opened with first.
func (f *FS) attach(ctx context.Context, first *daemonv1.AttachProcessRequest, input func() (process.Input, error), send func(process.Event) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stream, err := f.c.AttachProcess(ctx)
	if err != nil {
		return fromStatus(err)
	}
	if err := stream.Send(first); err != nil && !errors.Is(err, io.EOF) { // io.EOF: the status comes from Recv
		return fromStatus(err)
	}
	if input != nil {
		go func() {
			for {
				in, err := input()
				if errors.Is(err, io.EOF) {
					_ = stream.CloseSend()
					return
				}
				if err != nil {
					cancel(err)
					return
				}
				m := &daemonv1.AttachProcessRequest{Msg: &daemonv1.AttachProcessRequest_Stdin{Stdin: in.Data}}
				if in.Close {
					m.Msg = &daemonv1.AttachProcessRequest_CloseStdin{CloseStdin: true}
				}
				if stream.Send(m) != nil {
					return // the stream broke; Recv reports why
				}
			}
		}()
	}
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return errors.New("daemon: the attachment ended without an exit")
		}
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
				return cause
			}
			return fromStatus(err)
		}
		ev := process.Event{Offset: m.GetOffset()}
		switch e := m.GetEvent().(type) {
		case *daemonv1.AttachProcessResponse_Stdout:
			ev.Stream, ev.Data = process.Stdout, e.Stdout
		case *daemonv1.AttachProcessResponse_Stderr:
			ev.Stream, ev.Data = process.Stderr, e.Stderr
		case *daemonv1.AttachProcessResponse_Dropped:
			ev.Dropped = e.Dropped
		case *daemonv1.AttachProcessResponse_Exit:
			ev.Exit = exitStatus(e.Exit)
		case *daemonv1.AttachProcessResponse_Started:
			ev.Started = processInfo(e.Started)
		default:
			continue
		}
		if err := send(ev); err != nil {
			return err
		}
		if ev.Exit != nil {
			return nil
		}
	}
}

// SignalProcess signals a process's group through the daemon.
func (f *FS) SignalProcess(ctx context.Context, id string, sig syscall.Signal) error {
	if _, err := f.c.SignalProcess(ctx, &daemonv1.SignalProcessRequest{Id: id, Signal: daemonv1.ProcessSignal(sig)}); err != nil {
		return fromStatus(err)
	}
	return nil
}

// ListProcesses lists the daemon's processes matching id and tag.
func (f *FS) ListProcesses(ctx context.Context, id, tag string) ([]*process.Info, error) {
	res, err := f.c.ListProcesses(ctx, &daemonv1.ListProcessesRequest{Id: id, Tag: tag})
	if err != nil {
		return nil, fromStatus(err)
	}
	out := make([]*process.Info, len(res.GetProcesses()))
	for i, p := range res.GetProcesses() {
		out[i] = processInfo(p)
	}
	return out, nil
}

func startRequest(s process.Spec) *daemonv1.StartProcessRequest {
	return &daemonv1.StartProcessRequest{Argv: s.Argv, Env: s.Env, Cwd: s.Cwd, Tag: s.Tag}
}

func processInfo(p *daemonv1.ProcessInfo) *process.Info {
	info := &process.Info{ID: p.GetId(), Tag: p.GetTag(), Argv: p.GetArgv(), Cwd: p.GetCwd(), PID: int(p.GetPid()),
		Started: p.GetStartedAt().AsTime(), OutputEnd: p.GetOutputEnd()}
	if p.GetExit() != nil {
		info.Exit = exitStatus(p.GetExit())
	}
	return info
}

func exitStatus(e *daemonv1.ExitStatus) *wickfs.ExitStatus {
	return &wickfs.ExitStatus{ExitCode: int(e.GetExitCode()), Duration: e.GetDuration().AsDuration()}
}
