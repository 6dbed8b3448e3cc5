// Package sandboxfs is wickfs.FileSystem over the sandbox service: the
// agent's file and shell tools reach the caller's sandbox for one agent.
// The user travels in the call context (signed onto each call by the
// connection's identity interceptor).
package sandboxfs

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/errcode"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/wickfs"
)

// Defaults of the file system.
const (
	// DefaultMaxReadBytes bounds a whole-file read made by a tool.
	DefaultMaxReadBytes = 16 << 20
	// ChunkSize is the size of write chunks sent to the sandbox.
	ChunkSize = 256 << 10
	// DefaultWorkdir is the agent-facing workspace.
	DefaultWorkdir = "/workspace"
)

// ErrTooLarge is returned when a file is larger than the read limit.
var ErrTooLarge = errcode.New(codes.ResourceExhausted, "file is larger than the read limit")

// Spec maps an agent's backend to the sandbox service's spec: "local" is
// a workdir on the sandbox host; "docker" a container on the engine at
// sandbox_url (empty: the sandbox service's own engine).
func Spec(b *loop.BackendCfg) *sandboxv1.SandboxSpec {
	if b == nil {
		return nil
	}
	s := &sandboxv1.SandboxSpec{
		Type: b.Type, Image: b.Image, DockerHost: b.SandboxURL, Workdir: b.Workdir,
		MemoryBytes: b.MemoryBytes, NanoCpus: b.NanoCPUs, Network: b.Network, MaxOutputBytes: b.MaxOutputBytes,
		WorkspaceBytes: b.WorkspaceBytes, ModelEndpoint: b.ModelEndpoint != nil && *b.ModelEndpoint,
	}
	if b.Timeout > 0 {
		s.ExecTimeout = durationpb.New(b.Timeout)
	}
	return s
}

// FS is one agent's sandbox file system.
type FS struct {
	api     sandboxv1.SandboxServiceClient
	agentID string
	spec    *sandboxv1.SandboxSpec
	maxRead int64
	mu      sync.Mutex
	ensured bool
}

// Option configures FS.
type Option func(*FS)

// WithMaxReadBytes bounds whole-file reads.
func WithMaxReadBytes(n int64) Option { return func(f *FS) { f.maxRead = n } }

// New returns the file system of agentID's sandbox, created from spec on first use.
func New(api sandboxv1.SandboxServiceClient, agentID string, spec *sandboxv1.SandboxSpec, opts ...Option) *FS {
	f := &FS{api: api, agentID: agentID, spec: spec, maxRead: DefaultMaxReadBytes}
	for _, o := range opts {
		o(f)
	}
	return f
}

var _ wickfs.FileSystem = (*FS)(nil)

// Ensure creates or finds the sandbox once; a failure is retried on the next call.
func (f *FS) Ensure(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ensured {
		return nil
	}
	if _, err := f.api.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: f.agentID, Spec: f.spec}); err != nil {
		return fmt.Errorf("ensure sandbox: %w", err)
	}
	f.ensured = true
	return nil
}

// Ls implements wickfs.FileSystem.
func (f *FS) Ls(ctx context.Context, path string) ([]wickfs.DirEntry, error) {
	if err := f.Ensure(ctx); err != nil {
		return nil, err
	}
	resp, err := f.api.Ls(ctx, &sandboxv1.LsRequest{AgentId: f.agentID, Path: path})
	if err != nil {
		return nil, fmt.Errorf("ls %s: %w", path, err)
	}
	out := make([]wickfs.DirEntry, 0, len(resp.GetEntries()))
	for _, e := range resp.GetEntries() {
		out = append(out, wickfs.DirEntry{Name: e.GetName(), Type: e.GetType(), Size: e.GetSize()})
	}
	return out, nil
}

// readRaw streams a file (or a line window) into memory, up to max bytes.
func (f *FS) readRaw(ctx context.Context, path string, offset, limit int, max int64) ([]byte, bool, error) {
	if err := f.Ensure(ctx); err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := f.api.ReadFile(ctx, &sandboxv1.ReadFileRequest{AgentId: f.agentID, Path: path, Offset: int64(offset), Limit: int64(limit)})
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	var buf bytes.Buffer
	more := false
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), more, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("read %s: %w", path, err)
		}
		if resp.GetSize() > max && limit == 0 {
			return nil, false, fmt.Errorf("read %s: %w (%d > %d bytes)", path, ErrTooLarge, resp.GetSize(), max)
		}
		if int64(buf.Len()+len(resp.GetData())) > max {
			return nil, false, fmt.Errorf("read %s: %w (%d bytes)", path, ErrTooLarge, max)
		}
		buf.Write(resp.GetData())
		more = more || resp.GetMoreLines()
	}
}

// ReadFile implements wickfs.FileSystem.
func (f *FS) ReadFile(ctx context.Context, path string) (string, error) {
	data, _, err := f.readRaw(ctx, path, 0, 0, f.maxRead)
	if err != nil {
		return "", err
	}
	return Text(data), nil
}

// Text is file bytes as a JSON string can carry them: UTF-8 as is, anything
// else as "base64:" and its base64.
func Text(data []byte) string {
	if utf8.Valid(data) {
		return string(data)
	}
	return "base64:" + base64.StdEncoding.EncodeToString(data)
}

// ReadLines implements wickfs.FileSystem.
func (f *FS) ReadLines(ctx context.Context, path string, offset, limit int) (*wickfs.LinesResult, error) {
	data, more, err := f.readRaw(ctx, path, offset, limit, f.maxRead)
	if err != nil {
		return nil, err
	}
	text := strings.TrimSuffix(string(data), "\n")
	lines := []string{}
	if text != "" || len(data) > 0 {
		lines = strings.Split(text, "\n")
	}
	return &wickfs.LinesResult{Lines: lines, Offset: offset, MoreLines: more}, nil
}

// WriteFile implements wickfs.FileSystem.
func (f *FS) WriteFile(ctx context.Context, path, content string) (*wickfs.WriteResult, error) {
	n, err := f.Write(ctx, path, strings.NewReader(content), -1)
	if err != nil {
		return nil, err
	}
	return &wickfs.WriteResult{Path: path, BytesWritten: int(n)}, nil
}

// Write streams r into path, refusing more than max bytes when max >= 0.
func (f *FS) Write(ctx context.Context, path string, r io.Reader, max int64) (int64, error) {
	if err := f.Ensure(ctx); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := f.api.WriteFile(ctx)
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	if err := stream.Send(&sandboxv1.WriteFileRequest{Msg: &sandboxv1.WriteFileRequest_Header{Header: &sandboxv1.WriteFileHeader{AgentId: f.agentID, Path: path}}}); err != nil {
		return 0, fmt.Errorf("write %s: %w", path, sendErr(stream, err))
	}
	buf := make([]byte, ChunkSize)
	var total int64
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			total += int64(n)
			if max >= 0 && total > max {
				return 0, fmt.Errorf("write %s: %w (%d bytes)", path, ErrTooLarge, max)
			}
			if err := stream.Send(&sandboxv1.WriteFileRequest{Msg: &sandboxv1.WriteFileRequest_Data{Data: append([]byte(nil), buf[:n]...)}}); err != nil {
				return 0, fmt.Errorf("write %s: %w", path, sendErr(stream, err))
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return 0, fmt.Errorf("write %s: %w", path, rerr)
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	return resp.GetBytesWritten(), nil
}

// sendErr turns a failed Send (io.EOF: the server ended the call) into the
// server's status.
func sendErr(stream sandboxv1.SandboxService_WriteFileClient, err error) error {
	if errors.Is(err, io.EOF) {
		if _, rerr := stream.CloseAndRecv(); rerr != nil {
			return rerr
		}
	}
	return err
}

// EditFile implements wickfs.FileSystem.
func (f *FS) EditFile(ctx context.Context, path, oldText, newText string, opts ...wickfs.EditOption) (*wickfs.EditResult, error) {
	if err := f.Ensure(ctx); err != nil {
		return nil, err
	}
	o := wickfs.ApplyEdit(opts)
	resp, err := f.api.EditFile(ctx, &sandboxv1.EditFileRequest{AgentId: f.agentID, Path: path, OldText: oldText, NewText: newText, ReplaceAll: o.ReplaceAll})
	if err != nil {
		return nil, fmt.Errorf("edit %s: %w", path, err)
	}
	return &wickfs.EditResult{Path: resp.GetPath(), Replacements: int(resp.GetReplacements())}, nil
}

// Grep implements wickfs.FileSystem.
func (f *FS) Grep(ctx context.Context, pattern, path string) (*wickfs.GrepResult, error) {
	if err := f.Ensure(ctx); err != nil {
		return nil, err
	}
	resp, err := f.api.Grep(ctx, &sandboxv1.GrepRequest{AgentId: f.agentID, Pattern: pattern, Path: path, MaxMatches: wickfs.MaxGrepMatches})
	if err != nil {
		return nil, fmt.Errorf("grep: %w", err)
	}
	out := &wickfs.GrepResult{Matches: []wickfs.GrepMatch{}, Truncated: resp.GetTruncated()}
	for _, m := range resp.GetMatches() {
		out.Matches = append(out.Matches, wickfs.GrepMatch{File: m.GetFile(), Line: int(m.GetLine()), Text: m.GetText()})
	}
	return out, nil
}

// Glob implements wickfs.FileSystem.
func (f *FS) Glob(ctx context.Context, pattern, path string) (*wickfs.GlobResult, error) {
	if err := f.Ensure(ctx); err != nil {
		return nil, err
	}
	resp, err := f.api.Glob(ctx, &sandboxv1.GlobRequest{AgentId: f.agentID, Pattern: pattern, Path: path, MaxFiles: wickfs.MaxGlobFiles})
	if err != nil {
		return nil, fmt.Errorf("glob: %w", err)
	}
	files := resp.GetFiles()
	if files == nil {
		files = []string{}
	}
	return &wickfs.GlobResult{Files: files, Truncated: resp.GetTruncated()}, nil
}

// Exec implements wickfs.FileSystem.
func (f *FS) Exec(ctx context.Context, command string, opts ...wickfs.ExecOption) (*wickfs.ExecResult, error) {
	if err := f.Ensure(ctx); err != nil {
		return nil, err
	}
	o := wickfs.ApplyExec(opts)
	req := &sandboxv1.ExecRequest{AgentId: f.agentID, Command: command, Workdir: o.Workdir, MaxOutputBytes: o.MaxOutputBytes, Env: o.Env}
	if o.Timeout > 0 {
		req.Timeout = durationpb.New(o.Timeout)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := f.api.Exec(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	var stdout, stderr strings.Builder
	res := &wickfs.ExecResult{ExitCode: -1}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if status.Code(err) == codes.Unavailable {
			// The service went away with the command running: the model
			// should know the command's fate is unknown, not retry blindly.
			return nil, fmt.Errorf("exec: the sandbox service became unreachable while the command ran; whether it finished is unknown: %w", err)
		}
		if err != nil {
			return nil, fmt.Errorf("exec: %w", err)
		}
		switch out := resp.GetOutput().(type) {
		case *sandboxv1.ExecResponse_Stdout:
			stdout.Write(out.Stdout)
		case *sandboxv1.ExecResponse_Stderr:
			stderr.Write(out.Stderr)
		case *sandboxv1.ExecResponse_Exit:
			res.ExitCode = int(out.Exit.GetExitCode())
			res.TimedOut = out.Exit.GetTimedOut()
			res.Truncated = out.Exit.GetTruncated()
		}
	}
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	return res, nil
}
