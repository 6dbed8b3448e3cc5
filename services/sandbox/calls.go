package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"sort"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/wickfs"
)

// use resolves the caller's running sandbox for a call. A sandbox the reaper
// stopped is started again with the spec it was built with.
func (s *Service) use(ctx context.Context, agent string) (view, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return view{}, err
	}
	b, err := s.lookup(user, agent)
	if err != nil {
		return view{}, err
	}
	b.mu.Lock()
	state, held := b.state, b.held
	b.mu.Unlock()
	if held {
		return view{}, fmt.Errorf("%w: sandbox is stopped; EnsureSandbox or RestartSandbox starts it", errPrecondition)
	}
	if state != stateRunning {
		if _, err := s.ensure(ctx, user, agent, nil); err != nil {
			return view{}, err
		}
	}
	b.mu.Lock()
	b.lastUsed = s.now()
	b.mu.Unlock()
	v := b.view()
	if v.state != stateRunning {
		return view{}, fmt.Errorf("%w: sandbox is %s", errPrecondition, v.state)
	}
	if v.set.onKube() && v.daemon == nil {
		return view{}, fmt.Errorf("%w: the sandbox pod's daemon is not connected; try again shortly", errUnavailable)
	}
	if v.transport == transportExec && v.set.DockerHost == "" {
		s.reinject(b) // keeps trying to bring the daemon back, with back-off
	}
	return v, nil
}

// onDaemon reports whether a call should try the daemon first.
func (v view) onDaemon() bool { return v.daemon != nil && v.transport != transportExec }

// workspace is the file system a call of the sandbox v goes through: the
// confined local directory, the daemon with Docker exec as its fallback, or
// Docker exec alone while the daemon is known to be down or out of reach.
func (s *Service) workspace(v view) *workspace {
	switch {
	case v.local != nil:
		return &workspace{primary: v.local}
	case v.set.onKube():
		// No exec fallback: a daemon that does not answer means the pod
		// has gone, and the call is made again on its replacement.
		return &workspace{
			primary: v.daemon,
			fallback: func() workspaceFS {
				if d := s.reviveKube(context.WithoutCancel(s.bgCtx), v.b, v.containerID); d != nil {
					return d
				}
				return v.daemon
			},
			down: func(op string) { s.meters.fellBack(op) },
			probe: func(ctx context.Context) error {
				hc, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
				defer cancel()
				_, err := v.daemon.Client().Health(hc, &daemonv1.HealthRequest{})
				return err
			},
		}
	case v.onDaemon():
		return &workspace{
			primary:  v.daemon,
			fallback: func() workspaceFS { return s.execFS(v) },
			down:     func(op string) { s.fallback(v.b, op) },
			probe: func(ctx context.Context) error {
				hc, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
				defer cancel()
				_, err := v.daemon.Client().Health(hc, &daemonv1.HealthRequest{})
				return err
			},
		}
	}
	return &workspace{primary: s.execFS(v)}
}

// EnsureSandbox creates or returns the caller's sandbox.
func (s *Service) EnsureSandbox(ctx context.Context, req *sandboxv1.EnsureSandboxRequest) (*sandboxv1.EnsureSandboxResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	b, err := s.ensure(ctx, user, req.GetAgentId(), req.GetSpec())
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	return &sandboxv1.EnsureSandboxResponse{Sandbox: b.proto()}, nil
}

// GetSandbox describes the caller's sandbox.
func (s *Service) GetSandbox(ctx context.Context, req *sandboxv1.GetSandboxRequest) (*sandboxv1.GetSandboxResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	b, err := s.lookup(user, req.GetAgentId())
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	return &sandboxv1.GetSandboxResponse{Sandbox: b.proto()}, nil
}

// ListSandboxes lists the caller's sandboxes, by agent id.
func (s *Service) ListSandboxes(ctx context.Context, _ *sandboxv1.ListSandboxesRequest) (*sandboxv1.ListSandboxesResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	var mine []*box
	for _, b := range s.boxes {
		if b.user == user {
			mine = append(mine, b)
		}
	}
	s.mu.Unlock()
	sort.Slice(mine, func(i, j int) bool { return mine[i].agent < mine[j].agent })
	out := &sandboxv1.ListSandboxesResponse{}
	for _, b := range mine {
		out.Sandboxes = append(out.Sandboxes, b.proto())
	}
	return out, nil
}

func (s *Service) lifecycle(ctx context.Context, agent string, f func(*box) error) (*box, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	b, err := s.lookup(user, agent)
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	b.life.Lock()
	defer b.life.Unlock()
	if err := f(b); err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	return b, nil
}

// StopSandbox removes the container and keeps the workspace.
func (s *Service) StopSandbox(ctx context.Context, req *sandboxv1.StopSandboxRequest) (*sandboxv1.StopSandboxResponse, error) {
	b, err := s.lifecycle(ctx, req.GetAgentId(), func(b *box) error {
		if err := s.stop(ctx, b); err != nil {
			return err
		}
		b.mu.Lock()
		b.held = true
		b.mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &sandboxv1.StopSandboxResponse{Sandbox: b.proto()}, nil
}

// RestartSandbox stops the sandbox and starts it on the same workspace.
func (s *Service) RestartSandbox(ctx context.Context, req *sandboxv1.RestartSandboxRequest) (*sandboxv1.RestartSandboxResponse, error) {
	b, err := s.lifecycle(ctx, req.GetAgentId(), func(b *box) error {
		if err := s.stop(ctx, b); err != nil {
			return err
		}
		b.mu.Lock()
		set := b.set
		b.mu.Unlock()
		return s.start(ctx, b, set, false)
	})
	if err != nil {
		return nil, err
	}
	return &sandboxv1.RestartSandboxResponse{Sandbox: b.proto()}, nil
}

// DeleteSandbox removes the container, the workspace and the host state.
func (s *Service) DeleteSandbox(ctx context.Context, req *sandboxv1.DeleteSandboxRequest) (*sandboxv1.DeleteSandboxResponse, error) {
	if _, err := s.lifecycle(ctx, req.GetAgentId(), func(b *box) error { return s.remove(ctx, b) }); err != nil {
		return nil, err
	}
	return &sandboxv1.DeleteSandboxResponse{}, nil
}

// Exec runs a command and streams its output, then its exit status.
func (s *Service) Exec(req *sandboxv1.ExecRequest, stream grpc.ServerStreamingServer[sandboxv1.ExecResponse]) error {
	ctx := stream.Context()
	v, err := s.use(ctx, req.GetAgentId())
	if err != nil {
		return rpcstatus.FromError(ctx, err)
	}
	if strings.TrimSpace(req.GetCommand()) == "" {
		return status.Error(codes.InvalidArgument, "command must not be empty")
	}
	timeout := durationOr(req.GetTimeout(), v.set.ExecTimeout)
	if timeout > s.cfg.MaxExecTimeout {
		return status.Errorf(codes.InvalidArgument, "timeout %s is more than the %s limit", timeout, s.cfg.MaxExecTimeout)
	}
	maxOut := req.GetMaxOutputBytes()
	if maxOut <= 0 {
		maxOut = v.set.MaxOutput
	}
	if maxOut > s.cfg.MaxOutputCap {
		return status.Errorf(codes.InvalidArgument, "max_output_bytes %d is more than the %d limit", maxOut, s.cfg.MaxOutputCap)
	}
	send := func(stderr bool) io.Writer {
		return writer(func(p []byte) error {
			m := &sandboxv1.ExecResponse{Output: &sandboxv1.ExecResponse_Stdout{Stdout: p}}
			if stderr {
				m.Output = &sandboxv1.ExecResponse_Stderr{Stderr: p}
			}
			return stream.Send(m) // Send marshals p before it returns
		})
	}
	st, err := s.workspace(v).ExecStream(ctx, req.GetCommand(), send(false), send(true),
		wickfs.WithTimeout(timeout), wickfs.WithMaxOutput(maxOut), wickfs.WithWorkdir(req.GetWorkdir()),
		wickfs.WithEnv(req.GetEnv()), wickfs.WithStdin(req.GetStdin()))
	if err != nil {
		return rpcstatus.FromError(ctx, err)
	}
	return stream.Send(&sandboxv1.ExecResponse{Output: &sandboxv1.ExecResponse_Exit{Exit: exitStatus(st)}})
}

func exitStatus(st *wickfs.ExitStatus) *sandboxv1.ExitStatus {
	return &sandboxv1.ExitStatus{ExitCode: int32(st.ExitCode), TimedOut: st.TimedOut, Truncated: st.Truncated,
		Duration: durationpb.New(st.Duration)}
}

type writer func([]byte) error

func (w writer) Write(p []byte) (int, error) {
	if err := w(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Ls lists a workspace directory.
func (s *Service) Ls(ctx context.Context, req *sandboxv1.LsRequest) (*sandboxv1.LsResponse, error) {
	v, err := s.use(ctx, req.GetAgentId())
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	entries, err := s.workspace(v).Ls(ctx, req.GetPath())
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	out := &sandboxv1.LsResponse{Entries: make([]*sandboxv1.DirEntry, len(entries))}
	for i, e := range entries {
		out.Entries[i] = &sandboxv1.DirEntry{Name: e.Name, Type: e.Type, Size: e.Size}
	}
	return out, nil
}

// ReadFile streams a workspace file, or a window of its lines.
func (s *Service) ReadFile(req *sandboxv1.ReadFileRequest, stream grpc.ServerStreamingServer[sandboxv1.ReadFileResponse]) error {
	ctx := stream.Context()
	v, err := s.use(ctx, req.GetAgentId())
	if err != nil {
		return rpcstatus.FromError(ctx, err)
	}
	if req.GetOffset() < 0 || req.GetLimit() < 0 {
		return status.Error(codes.InvalidArgument, "offset and limit must not be negative")
	}
	ws := s.workspace(v)
	if req.GetOffset() > 0 || req.GetLimit() > 0 {
		limit := req.GetLimit()
		if limit == 0 || limit > math.MaxInt32 {
			limit = math.MaxInt32 // the rest of the file, bounded by the read limit
		}
		res, err := ws.ReadLines(ctx, req.GetPath(), int(min(req.GetOffset(), math.MaxInt32)), int(limit))
		if err != nil {
			return rpcstatus.FromError(ctx, err)
		}
		var b bytes.Buffer
		for _, l := range res.Lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		return rpcstatus.FromError(ctx, sendFile(stream, &b, res.Size, res.Mode, res.MoreLines))
	}
	f, err := ws.OpenFile(ctx, req.GetPath())
	if err != nil {
		return rpcstatus.FromError(ctx, err)
	}
	defer f.Close()
	return rpcstatus.FromError(ctx, sendFile(stream, f, f.Size, uint32(f.Mode), false))
}

// sendFile streams r in chunks of ReadChunk: the first message carries size
// and mode (and goes out even for an empty file), the last one more.
func sendFile(stream grpc.ServerStreamingServer[sandboxv1.ReadFileResponse], r io.Reader, size int64, mode uint32, more bool) error {
	buf := make([]byte, ReadChunk)
	msg := &sandboxv1.ReadFileResponse{Size: size, Mode: mode}
	first := true
	for {
		n, err := io.ReadFull(r, buf)
		done := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !done {
			return err
		}
		if n > 0 || first || (done && more) {
			msg.Data = buf[:n]
			msg.MoreLines = done && more
			// Send marshals before it returns, so buf can be reused.
			if err := stream.Send(msg); err != nil {
				return err
			}
			msg, first = &sandboxv1.ReadFileResponse{}, false
		}
		if done {
			return nil
		}
	}
}

// WriteFile receives a header and chunks and writes the file atomically.
func (s *Service) WriteFile(stream grpc.ClientStreamingServer[sandboxv1.WriteFileRequest, sandboxv1.WriteFileResponse]) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	h := first.GetHeader()
	if h == nil {
		return status.Error(codes.InvalidArgument, "the first WriteFile message must carry the header")
	}
	v, err := s.use(ctx, h.GetAgentId())
	if err != nil {
		return rpcstatus.FromError(ctx, err)
	}
	if h.GetMode() > 0o777 {
		return status.Errorf(codes.InvalidArgument, "mode %#o has bits beyond the permission bits", h.GetMode())
	}
	r, err := s.workspace(v).Upload(ctx, h.GetPath(), fs.FileMode(h.GetMode()), uploadData(stream))
	if err != nil {
		return rpcstatus.FromError(ctx, err)
	}
	return stream.SendAndClose(&sandboxv1.WriteFileResponse{Path: r.Path, BytesWritten: int64(r.BytesWritten)})
}

// uploadData reads the data messages that follow a WriteFile header.
func uploadData(stream grpc.ClientStreamingServer[sandboxv1.WriteFileRequest, sandboxv1.WriteFileResponse]) io.Reader {
	return wickfs.ChunkReader(func() ([]byte, error) {
		m, err := stream.Recv()
		if err == nil && m.GetHeader() != nil {
			err = fmt.Errorf("%w: WriteFile carries one header, first", errInvalid)
		}
		return m.GetData(), err
	})
}

// EditFile replaces exact text in a file.
func (s *Service) EditFile(ctx context.Context, req *sandboxv1.EditFileRequest) (*sandboxv1.EditFileResponse, error) {
	v, err := s.use(ctx, req.GetAgentId())
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	var opts []wickfs.EditOption
	if req.GetReplaceAll() {
		opts = append(opts, wickfs.ReplaceAll())
	}
	r, err := s.workspace(v).EditFile(ctx, req.GetPath(), req.GetOldText(), req.GetNewText(), opts...)
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	return &sandboxv1.EditFileResponse{Path: r.Path, Replacements: int32(min(r.Replacements, math.MaxInt32))}, nil
}

// resultCap checks a caller's Grep or Glob cap against the ceiling.
func resultCap(n int32, what string) (int, error) {
	if n < 0 {
		return 0, fmt.Errorf("%w: %s must not be negative (got %d)", errInvalid, what, n)
	}
	if n > wickfs.MaxResults {
		return 0, fmt.Errorf("%w: %s %d is above the ceiling of %d", errInvalid, what, n, wickfs.MaxResults)
	}
	return int(n), nil
}

// Grep searches workspace files.
func (s *Service) Grep(ctx context.Context, req *sandboxv1.GrepRequest) (*sandboxv1.GrepResponse, error) {
	v, err := s.use(ctx, req.GetAgentId())
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	max, err := resultCap(req.GetMaxMatches(), "max_matches")
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	r, err := s.workspace(v).GrepN(ctx, req.GetPattern(), req.GetPath(), max)
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	out := &sandboxv1.GrepResponse{Truncated: r.Truncated, Matches: make([]*sandboxv1.GrepMatch, len(r.Matches))}
	for i, m := range r.Matches {
		out.Matches[i] = &sandboxv1.GrepMatch{File: m.File, Line: int32(min(m.Line, math.MaxInt32)), Text: m.Text}
	}
	return out, nil
}

// Glob finds workspace files by pattern.
func (s *Service) Glob(ctx context.Context, req *sandboxv1.GlobRequest) (*sandboxv1.GlobResponse, error) {
	v, err := s.use(ctx, req.GetAgentId())
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	max, err := resultCap(req.GetMaxFiles(), "max_files")
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	r, err := s.workspace(v).GlobN(ctx, req.GetPattern(), req.GetPath(), max)
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	return &sandboxv1.GlobResponse{Files: r.Files, Truncated: r.Truncated}, nil
}
