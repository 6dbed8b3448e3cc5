package sandbox

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
	"github.com/wick-agent/wick/wickfs"
)

// rpcErr converts an error to a gRPC status, once, at the edge. Statuses the
// daemon returned pass through unchanged.
func rpcErr(err error) error {
	if err == nil {
		return nil
	}
	code := codes.Internal
	switch {
	case errors.Is(err, errNotFound), errors.Is(err, wickfs.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, errInvalid), errors.Is(err, wickfs.ErrInvalidArgument):
		code = codes.InvalidArgument
	case errors.Is(err, errDenied), errors.Is(err, wickfs.ErrPermission), errors.Is(err, wickfs.ErrOutsideWorkspace):
		code = codes.PermissionDenied
	case errors.Is(err, errExhausted), errors.Is(err, wickfs.ErrTooLarge), errors.Is(err, dockerbox.ErrOutputTooLarge):
		code = codes.ResourceExhausted
	case errors.Is(err, errPrecondition), errors.Is(err, errNoDocker):
		code = codes.FailedPrecondition
	case errors.Is(err, errUnavailable), errors.Is(err, dockerbox.ErrUnavailable), errors.Is(err, dockerbox.ErrNotRunning):
		code = codes.Unavailable
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	default:
		if st, ok := status.FromError(err); ok {
			return st.Err()
		}
	}
	return status.Error(code, err.Error())
}

func daemonDown(err error) bool { return status.Code(err) == codes.Unavailable }

// takeFallback decides where a daemon call that failed with err goes next. A
// daemon that did not answer sends the call to Docker exec (recorded, and the
// daemon re-injected in the background); any other error, and any error of a
// local sandbox, which has no fallback, is the call's answer.
func (s *Service) takeFallback(v view, op string, err error) bool {
	if !daemonDown(err) || v.transport == transportLocal {
		return false
	}
	s.fallback(v.b, op)
	return true
}

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
	if v.transport == transportExec && v.set.DockerHost == "" {
		s.reinject(b) // keeps trying to bring the daemon back, with back-off
	}
	return v, nil
}

// onDaemon reports whether a call should try the daemon first.
func (v view) onDaemon() bool { return v.daemon != nil && v.transport != transportExec }

// remoteFS is the fallback: the wickfs CLI run through Docker exec.
func (s *Service) remoteFS(v view) *wickfs.RemoteFS {
	wd := v.set.Params.Workdir
	x := &dockerbox.Executor{
		Engine: v.engine, Container: v.containerID, User: v.cuser.Name, Workdir: wd,
		Env: []string{"WICKFS_ROOT=" + wd, "WICKFS_PREFIX=" + wd},
		// Replies are JSON with base64 for binary files: room for the encoding.
		MaxOutput: s.cfg.FallbackMaxBytes*4/3 + 64<<10,
	}
	return wickfs.NewRemoteFS(x, wickfs.WithBinary(path.Join(dockerbox.BinDir, dockerbox.WickfsBinary)))
}

// EnsureSandbox creates or returns the caller's sandbox.
func (s *Service) EnsureSandbox(ctx context.Context, req *sandboxv1.EnsureSandboxRequest) (*sandboxv1.EnsureSandboxResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	b, err := s.ensure(ctx, user, req.GetAgentId(), req.GetSpec())
	if err != nil {
		return nil, rpcErr(err)
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
		return nil, rpcErr(err)
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
		return nil, rpcErr(err)
	}
	b.life.Lock()
	defer b.life.Unlock()
	if err := f(b); err != nil {
		return nil, rpcErr(err)
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
		return s.start(ctx, b, set)
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

// Exec runs a command, through the daemon or, when it does not answer, Docker exec.
func (s *Service) Exec(req *sandboxv1.ExecRequest, stream grpc.ServerStreamingServer[sandboxv1.ExecResponse]) error {
	ctx := stream.Context()
	v, err := s.use(ctx, req.GetAgentId())
	if err != nil {
		return rpcErr(err)
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
	dreq := &daemonv1.ExecRequest{Command: req.GetCommand(), Workdir: req.GetWorkdir(), Timeout: durationpb.New(timeout),
		MaxOutputBytes: maxOut, Env: req.GetEnv(), Stdin: req.GetStdin()}
	if v.onDaemon() {
		st, err := v.daemon.Exec(ctx, dreq)
		sent := false
		for err == nil {
			var m *daemonv1.ExecResponse
			m, err = st.Recv()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				break
			}
			sent = true
			if err := stream.Send(execOut(m)); err != nil {
				return err
			}
		}
		// Only a call that never reached the daemon is retried: one that
		// started must not run twice.
		if sent || !s.takeFallback(v, "exec", err) {
			return err
		}
	}
	return rpcErr(s.execFallback(ctx, v, dreq, stream))
}

func execOut(m *daemonv1.ExecResponse) *sandboxv1.ExecResponse {
	switch o := m.GetOutput().(type) {
	case *daemonv1.ExecResponse_Stdout:
		return &sandboxv1.ExecResponse{Output: &sandboxv1.ExecResponse_Stdout{Stdout: o.Stdout}}
	case *daemonv1.ExecResponse_Stderr:
		return &sandboxv1.ExecResponse{Output: &sandboxv1.ExecResponse_Stderr{Stderr: o.Stderr}}
	case *daemonv1.ExecResponse_Exit:
		return &sandboxv1.ExecResponse{Output: &sandboxv1.ExecResponse_Exit{Exit: exitStatus(o.Exit)}}
	}
	return &sandboxv1.ExecResponse{}
}

// containerDir maps an agent-facing working directory to the container,
// refusing one outside the workspace.
func containerDir(workdir, dir string) (string, error) {
	if dir == "" {
		return workdir, nil
	}
	if !path.IsAbs(dir) {
		dir = path.Join(workdir, dir)
	}
	dir = path.Clean(dir)
	if dir != workdir && !strings.HasPrefix(dir, workdir+"/") {
		return "", fmt.Errorf("%w: workdir %q is outside the workspace", errInvalid, dir)
	}
	return dir, nil
}

// execFallback runs the command with Docker exec: through `wickfs exec`,
// which enforces timeout and output cap inside the container, or, when the
// call carries stdin, as `sh -c` with the output streamed.
func (s *Service) execFallback(ctx context.Context, v view, r *daemonv1.ExecRequest, stream grpc.ServerStreamingServer[sandboxv1.ExecResponse]) error {
	start := time.Now()
	timeout := r.GetTimeout().AsDuration()
	if len(r.GetStdin()) == 0 {
		// The CLI kills the command at its timeout; the outer bound only
		// covers a wedged engine.
		cctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
		defer cancel()
		res, err := s.remoteFS(v).Exec(cctx, r.GetCommand(), wickfs.WithTimeout(timeout),
			wickfs.WithMaxOutput(r.GetMaxOutputBytes()), wickfs.WithWorkdir(r.GetWorkdir()), wickfs.WithEnv(r.GetEnv()))
		if err != nil {
			return err
		}
		for _, out := range []*sandboxv1.ExecResponse{
			{Output: &sandboxv1.ExecResponse_Stdout{Stdout: []byte(res.Stdout)}},
			{Output: &sandboxv1.ExecResponse_Stderr{Stderr: []byte(res.Stderr)}},
		} {
			if len(out.GetStdout())+len(out.GetStderr()) == 0 {
				continue
			}
			if err := stream.Send(out); err != nil {
				return err
			}
		}
		return stream.Send(&sandboxv1.ExecResponse{Output: &sandboxv1.ExecResponse_Exit{Exit: &sandboxv1.ExitStatus{
			ExitCode: int32(res.ExitCode), TimedOut: res.TimedOut, Truncated: res.Truncated, Duration: durationpb.New(time.Since(start))}}})
	}
	dir, err := containerDir(v.set.Params.Workdir, r.GetWorkdir())
	if err != nil {
		return err
	}
	env := make([]string, 0, len(r.GetEnv()))
	for k, val := range r.GetEnv() {
		env = append(env, k+"="+val)
	}
	sort.Strings(env)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	send := func(stdout bool) io.Writer {
		return writer(func(p []byte) error {
			m := &sandboxv1.ExecResponse{Output: &sandboxv1.ExecResponse_Stderr{Stderr: bytes.Clone(p)}}
			if stdout {
				m.Output = &sandboxv1.ExecResponse_Stdout{Stdout: bytes.Clone(p)}
			}
			return stream.Send(m)
		})
	}
	code, truncated, err := dockerbox.Stream(cctx, v.engine, v.containerID, dockerbox.RunOptions{
		User: v.cuser.Name, Cmd: []string{"sh", "-c", r.GetCommand()}, Env: env, WorkingDir: dir,
		Stdin: bytes.NewReader(r.GetStdin()), MaxOutput: r.GetMaxOutputBytes(), KillOnCancel: v.set.DockerHost == "",
	}, send(true), send(false))
	timedOut := errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
	if err != nil && !timedOut {
		return err
	}
	return stream.Send(&sandboxv1.ExecResponse{Output: &sandboxv1.ExecResponse_Exit{Exit: &sandboxv1.ExitStatus{
		ExitCode: int32(code), TimedOut: timedOut, Truncated: truncated, Duration: durationpb.New(time.Since(start))}}})
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
		return nil, rpcErr(err)
	}
	if v.onDaemon() {
		r, err := v.daemon.Ls(ctx, &daemonv1.LsRequest{Path: req.GetPath()})
		if err == nil {
			out := &sandboxv1.LsResponse{}
			for _, e := range r.GetEntries() {
				out.Entries = append(out.Entries, &sandboxv1.DirEntry{Name: e.GetName(), Type: e.GetType(), Size: e.GetSize()})
			}
			return out, nil
		}
		if !s.takeFallback(v, "ls", err) {
			return nil, err
		}
	}
	entries, err := s.remoteFS(v).Ls(ctx, req.GetPath())
	if err != nil {
		return nil, rpcErr(err)
	}
	out := &sandboxv1.LsResponse{}
	for _, e := range entries {
		out.Entries = append(out.Entries, &sandboxv1.DirEntry{Name: e.Name, Type: e.Type, Size: e.Size})
	}
	return out, nil
}

// ReadFile streams a workspace file.
func (s *Service) ReadFile(req *sandboxv1.ReadFileRequest, stream grpc.ServerStreamingServer[sandboxv1.ReadFileResponse]) error {
	ctx := stream.Context()
	v, err := s.use(ctx, req.GetAgentId())
	if err != nil {
		return rpcErr(err)
	}
	if req.GetOffset() < 0 || req.GetLimit() < 0 {
		return status.Error(codes.InvalidArgument, "offset and limit must not be negative")
	}
	if v.onDaemon() {
		st, err := v.daemon.ReadFile(ctx, &daemonv1.ReadFileRequest{Path: req.GetPath(), Offset: req.GetOffset(), Limit: req.GetLimit()})
		sent := false
		for err == nil {
			var m *daemonv1.ReadFileResponse
			m, err = st.Recv()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				break
			}
			sent = true
			if err := stream.Send(&sandboxv1.ReadFileResponse{Data: m.GetData(), Size: m.GetSize(), Mode: m.GetMode(), MoreLines: m.GetMoreLines()}); err != nil {
				return err
			}
		}
		if sent || !s.takeFallback(v, "read", err) {
			return err
		}
	}
	data, more, err := s.readFallback(ctx, v, req)
	if err != nil {
		return rpcErr(err)
	}
	first := true
	for first || len(data) > 0 {
		n := min(len(data), ReadChunk)
		m := &sandboxv1.ReadFileResponse{Data: data[:n]}
		if first {
			m.Size = int64(len(data))
			first = false
		}
		data = data[n:]
		if len(data) == 0 {
			m.MoreLines = more
		}
		if err := stream.Send(m); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) readFallback(ctx context.Context, v view, req *sandboxv1.ReadFileRequest) ([]byte, bool, error) {
	fs := s.remoteFS(v)
	if req.GetOffset() > 0 || req.GetLimit() > 0 {
		r, err := fs.ReadLines(ctx, req.GetPath(), int(req.GetOffset()), int(req.GetLimit()))
		if err != nil {
			return nil, false, err
		}
		var b bytes.Buffer
		for _, l := range r.Lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		return b.Bytes(), r.MoreLines, nil
	}
	content, err := fs.ReadFile(ctx, req.GetPath())
	if err != nil {
		return nil, false, err
	}
	if enc, ok := strings.CutPrefix(content, "base64:"); ok {
		data, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return nil, false, fmt.Errorf("decode wickfs read: %w", err)
		}
		return data, false, nil
	}
	return []byte(content), false, nil
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
		return rpcErr(err)
	}
	if v.onDaemon() {
		dst, err := v.daemon.WriteFile(ctx)
		if err == nil {
			err = dst.Send(&daemonv1.WriteFileRequest{Msg: &daemonv1.WriteFileRequest_Header{Header: &daemonv1.WriteFileHeader{Path: h.GetPath(), Mode: h.GetMode()}}})
			if err == io.EOF {
				_, err = dst.CloseAndRecv()
			}
		}
		if err == nil {
			return s.forwardWrite(stream, dst)
		}
		if !s.takeFallback(v, "write", err) {
			return err
		}
	}
	var buf bytes.Buffer
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if int64(buf.Len()+len(m.GetData())) > s.cfg.FallbackMaxBytes {
			return status.Errorf(codes.ResourceExhausted, "file is more than the %d bytes the Docker-exec fallback can move; retry when the daemon is back", s.cfg.FallbackMaxBytes)
		}
		buf.Write(m.GetData())
	}
	r, err := s.remoteFS(v).WriteFile(ctx, h.GetPath(), buf.String())
	if err != nil {
		return rpcErr(err)
	}
	return stream.SendAndClose(&sandboxv1.WriteFileResponse{Path: r.Path, BytesWritten: int64(r.BytesWritten)})
}

func (s *Service) forwardWrite(stream grpc.ClientStreamingServer[sandboxv1.WriteFileRequest, sandboxv1.WriteFileResponse], dst grpc.ClientStreamingClient[daemonv1.WriteFileRequest, daemonv1.WriteFileResponse]) error {
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if m.GetHeader() != nil {
			return status.Error(codes.InvalidArgument, "WriteFile carries one header, first")
		}
		if err := dst.Send(&daemonv1.WriteFileRequest{Msg: &daemonv1.WriteFileRequest_Data{Data: m.GetData()}}); err != nil {
			if err == io.EOF {
				_, err = dst.CloseAndRecv()
			}
			return err
		}
	}
	r, err := dst.CloseAndRecv()
	if err != nil {
		return err
	}
	return stream.SendAndClose(&sandboxv1.WriteFileResponse{Path: r.GetPath(), BytesWritten: r.GetBytesWritten()})
}

// EditFile replaces exact text in a file.
func (s *Service) EditFile(ctx context.Context, req *sandboxv1.EditFileRequest) (*sandboxv1.EditFileResponse, error) {
	v, err := s.use(ctx, req.GetAgentId())
	if err != nil {
		return nil, rpcErr(err)
	}
	if v.onDaemon() {
		r, err := v.daemon.EditFile(ctx, &daemonv1.EditFileRequest{Path: req.GetPath(), OldText: req.GetOldText(), NewText: req.GetNewText(), ReplaceAll: req.GetReplaceAll()})
		if err == nil {
			return &sandboxv1.EditFileResponse{Path: r.GetPath(), Replacements: r.GetReplacements()}, nil
		}
		if !s.takeFallback(v, "edit", err) {
			return nil, err
		}
	}
	var opts []wickfs.EditOption
	if req.GetReplaceAll() {
		opts = append(opts, wickfs.ReplaceAll())
	}
	r, err := s.remoteFS(v).EditFile(ctx, req.GetPath(), req.GetOldText(), req.GetNewText(), opts...)
	if err != nil {
		return nil, rpcErr(err)
	}
	return &sandboxv1.EditFileResponse{Path: r.Path, Replacements: int32(r.Replacements)}, nil
}

// Grep searches workspace files.
func (s *Service) Grep(ctx context.Context, req *sandboxv1.GrepRequest) (*sandboxv1.GrepResponse, error) {
	v, err := s.use(ctx, req.GetAgentId())
	if err != nil {
		return nil, rpcErr(err)
	}
	if v.onDaemon() {
		r, err := v.daemon.Grep(ctx, &daemonv1.GrepRequest{Pattern: req.GetPattern(), Path: req.GetPath(), MaxMatches: req.GetMaxMatches()})
		if err == nil {
			out := &sandboxv1.GrepResponse{Truncated: r.GetTruncated()}
			for _, m := range r.GetMatches() {
				out.Matches = append(out.Matches, &sandboxv1.GrepMatch{File: m.GetFile(), Line: m.GetLine(), Text: m.GetText()})
			}
			return out, nil
		}
		if !s.takeFallback(v, "grep", err) {
			return nil, err
		}
	}
	r, err := s.remoteFS(v).Grep(ctx, req.GetPattern(), req.GetPath())
	if err != nil {
		return nil, rpcErr(err)
	}
	out := &sandboxv1.GrepResponse{Truncated: r.Truncated}
	for _, m := range r.Matches {
		if n := req.GetMaxMatches(); n > 0 && len(out.Matches) >= int(n) {
			out.Truncated = true
			break
		}
		out.Matches = append(out.Matches, &sandboxv1.GrepMatch{File: m.File, Line: int32(m.Line), Text: m.Text})
	}
	return out, nil
}

// Glob finds workspace files by pattern.
func (s *Service) Glob(ctx context.Context, req *sandboxv1.GlobRequest) (*sandboxv1.GlobResponse, error) {
	v, err := s.use(ctx, req.GetAgentId())
	if err != nil {
		return nil, rpcErr(err)
	}
	if v.onDaemon() {
		r, err := v.daemon.Glob(ctx, &daemonv1.GlobRequest{Pattern: req.GetPattern(), Path: req.GetPath(), MaxFiles: req.GetMaxFiles()})
		if err == nil {
			return &sandboxv1.GlobResponse{Files: r.GetFiles(), Truncated: r.GetTruncated()}, nil
		}
		if !s.takeFallback(v, "glob", err) {
			return nil, err
		}
	}
	r, err := s.remoteFS(v).Glob(ctx, req.GetPattern(), req.GetPath())
	if err != nil {
		return nil, rpcErr(err)
	}
	out := &sandboxv1.GlobResponse{Files: r.Files, Truncated: r.Truncated}
	if n := int(req.GetMaxFiles()); n > 0 && len(out.Files) > n {
		out.Files, out.Truncated = out.Files[:n], true
	}
	return out, nil
}

func exitStatus(e *daemonv1.ExitStatus) *sandboxv1.ExitStatus {
	return &sandboxv1.ExitStatus{ExitCode: e.GetExitCode(), TimedOut: e.GetTimedOut(), Truncated: e.GetTruncated(), Duration: e.GetDuration()}
}
