package sandboxfs

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/wickfs"
)

// localSandbox serves the sandbox API over one wickfs.LocalFS and records
// the specs it was asked to ensure.
type localSandbox struct {
	sandboxv1.UnimplementedSandboxServiceServer
	fs      *wickfs.LocalFS
	ensured []*sandboxv1.EnsureSandboxRequest
}

func (s *localSandbox) EnsureSandbox(_ context.Context, req *sandboxv1.EnsureSandboxRequest) (*sandboxv1.EnsureSandboxResponse, error) {
	s.ensured = append(s.ensured, req)
	return &sandboxv1.EnsureSandboxResponse{Sandbox: &sandboxv1.Sandbox{AgentId: req.GetAgentId(), State: "running"}}, nil
}

func (s *localSandbox) Ls(ctx context.Context, req *sandboxv1.LsRequest) (*sandboxv1.LsResponse, error) {
	es, err := s.fs.Ls(ctx, req.GetPath())
	if err != nil {
		return nil, err
	}
	out := &sandboxv1.LsResponse{}
	for _, e := range es {
		out.Entries = append(out.Entries, &sandboxv1.DirEntry{Name: e.Name, Type: e.Type, Size: e.Size})
	}
	return out, nil
}

func (s *localSandbox) ReadFile(req *sandboxv1.ReadFileRequest, stream sandboxv1.SandboxService_ReadFileServer) error {
	if req.GetLimit() > 0 {
		res, err := s.fs.ReadLines(stream.Context(), req.GetPath(), int(req.GetOffset()), int(req.GetLimit()))
		if err != nil {
			return err
		}
		data := strings.Join(res.Lines, "\n") + "\n"
		return stream.Send(&sandboxv1.ReadFileResponse{Data: []byte(data), Size: int64(len(data)), MoreLines: res.MoreLines})
	}
	c, err := s.fs.ReadFile(stream.Context(), req.GetPath())
	if err != nil {
		return err
	}
	data := []byte(c)
	if b, ok := strings.CutPrefix(c, "base64:"); ok {
		data, _ = base64.StdEncoding.DecodeString(b)
	}
	// Two chunks, to check reassembly.
	half := len(data) / 2
	if err := stream.Send(&sandboxv1.ReadFileResponse{Data: data[:half], Size: int64(len(data))}); err != nil {
		return err
	}
	return stream.Send(&sandboxv1.ReadFileResponse{Data: data[half:]})
}

func (s *localSandbox) WriteFile(stream sandboxv1.SandboxService_WriteFileServer) error {
	h, err := stream.Recv()
	if err != nil {
		return err
	}
	var b strings.Builder
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		b.Write(m.GetData())
	}
	res, err := s.fs.WriteFile(stream.Context(), h.GetHeader().GetPath(), b.String())
	if err != nil {
		return err
	}
	return stream.SendAndClose(&sandboxv1.WriteFileResponse{Path: res.Path, BytesWritten: int64(res.BytesWritten)})
}

func (s *localSandbox) EditFile(ctx context.Context, req *sandboxv1.EditFileRequest) (*sandboxv1.EditFileResponse, error) {
	var opts []wickfs.EditOption
	if req.GetReplaceAll() {
		opts = append(opts, wickfs.ReplaceAll())
	}
	res, err := s.fs.EditFile(ctx, req.GetPath(), req.GetOldText(), req.GetNewText(), opts...)
	if err != nil {
		return nil, err
	}
	return &sandboxv1.EditFileResponse{Path: res.Path, Replacements: int32(res.Replacements)}, nil
}

func (s *localSandbox) Grep(ctx context.Context, req *sandboxv1.GrepRequest) (*sandboxv1.GrepResponse, error) {
	res, err := s.fs.Grep(ctx, req.GetPattern(), req.GetPath())
	if err != nil {
		return nil, err
	}
	out := &sandboxv1.GrepResponse{Truncated: res.Truncated}
	for _, m := range res.Matches {
		out.Matches = append(out.Matches, &sandboxv1.GrepMatch{File: m.File, Line: int32(m.Line), Text: m.Text})
	}
	return out, nil
}

func (s *localSandbox) Glob(ctx context.Context, req *sandboxv1.GlobRequest) (*sandboxv1.GlobResponse, error) {
	res, err := s.fs.Glob(ctx, req.GetPattern(), req.GetPath())
	if err != nil {
		return nil, err
	}
	return &sandboxv1.GlobResponse{Files: res.Files, Truncated: res.Truncated}, nil
}

func (s *localSandbox) Exec(req *sandboxv1.ExecRequest, stream sandboxv1.SandboxService_ExecServer) error {
	res, err := s.fs.Exec(stream.Context(), req.GetCommand())
	if err != nil {
		return err
	}
	stream.Send(&sandboxv1.ExecResponse{Output: &sandboxv1.ExecResponse_Stdout{Stdout: []byte(res.Stdout)}})
	stream.Send(&sandboxv1.ExecResponse{Output: &sandboxv1.ExecResponse_Stderr{Stderr: []byte(res.Stderr)}})
	return stream.Send(&sandboxv1.ExecResponse{Output: &sandboxv1.ExecResponse_Exit{Exit: &sandboxv1.ExitStatus{ExitCode: int32(res.ExitCode)}}})
}

func newFS(t *testing.T, opts ...Option) (*FS, *localSandbox) {
	t.Helper()
	lfs, err := wickfs.NewLocalFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sb := &localSandbox{fs: lfs}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	sandboxv1.RegisterSandboxServiceServer(g, sb)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	spec := Spec(&loop.BackendCfg{Type: "docker", Image: "img", SandboxURL: "tcp://h:2376", MemoryBytes: 1 << 20, WorkspaceBytes: 64 << 20})
	return New(sandboxv1.NewSandboxServiceClient(conn), "a1", spec, opts...), sb
}

func TestFileSystemOverSandbox(t *testing.T) {
	t.Parallel()
	fs, sb := newFS(t)
	ctx := context.Background()

	w, err := fs.WriteFile(ctx, "/workspace/dir/a.txt", "one\ntwo\nthree\n")
	if err != nil || w.BytesWritten != 14 {
		t.Fatalf("WriteFile = %+v, %v", w, err)
	}
	if len(sb.ensured) != 1 || sb.ensured[0].GetSpec().GetDockerHost() != "tcp://h:2376" || sb.ensured[0].GetSpec().GetType() != "docker" || sb.ensured[0].GetAgentId() != "a1" ||
		sb.ensured[0].GetSpec().GetWorkspaceBytes() != 64<<20 {
		t.Fatalf("ensure = %v", sb.ensured)
	}
	if c, err := fs.ReadFile(ctx, "/workspace/dir/a.txt"); err != nil || c != "one\ntwo\nthree\n" {
		t.Fatalf("ReadFile = %q, %v", c, err)
	}
	lines, err := fs.ReadLines(ctx, "/workspace/dir/a.txt", 1, 1)
	if err != nil || len(lines.Lines) != 1 || lines.Lines[0] != "two" || !lines.MoreLines || lines.Offset != 1 {
		t.Fatalf("ReadLines = %+v, %v", lines, err)
	}
	es, err := fs.Ls(ctx, "/workspace/dir")
	if err != nil || len(es) != 1 || es[0].Name != "a.txt" {
		t.Fatalf("Ls = %+v, %v", es, err)
	}
	ed, err := fs.EditFile(ctx, "/workspace/dir/a.txt", "two", "2")
	if err != nil || ed.Replacements != 1 {
		t.Fatalf("EditFile = %+v, %v", ed, err)
	}
	g, err := fs.Grep(ctx, "^2$", "/workspace")
	if err != nil || len(g.Matches) != 1 || g.Matches[0].Line != 2 {
		t.Fatalf("Grep = %+v, %v", g, err)
	}
	gl, err := fs.Glob(ctx, "*.txt", "/workspace/dir")
	if err != nil || len(gl.Files) != 1 {
		t.Fatalf("Glob = %+v, %v", gl, err)
	}
	x, err := fs.Exec(ctx, "cat dir/a.txt | wc -l; echo oops >&2; exit 3")
	if err != nil || strings.TrimSpace(x.Stdout) != "3" || strings.TrimSpace(x.Stderr) != "oops" || x.ExitCode != 3 {
		t.Fatalf("Exec = %+v, %v", x, err)
	}
	// Binary content reads as base64.
	if _, err := fs.Write(ctx, "/workspace/b.bin", strings.NewReader("\xff\xfe\x00"), -1); err != nil {
		t.Fatal(err)
	}
	if c, _ := fs.ReadFile(ctx, "/workspace/b.bin"); c != "base64:"+base64.StdEncoding.EncodeToString([]byte("\xff\xfe\x00")) {
		t.Fatalf("binary ReadFile = %q", c)
	}
	if len(sb.ensured) != 1 {
		t.Fatalf("sandbox ensured %d times, want once", len(sb.ensured))
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	fs, _ := newFS(t, WithMaxReadBytes(10))
	ctx := context.Background()
	if _, err := fs.WriteFile(ctx, "/workspace/big.txt", strings.Repeat("x", 100)); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.ReadFile(ctx, "/workspace/big.txt"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized read = %v", err)
	}
	if _, err := fs.Write(ctx, "/workspace/c.txt", strings.NewReader(strings.Repeat("y", 100)), 50); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized write = %v", err)
	}
	if Spec(nil) != nil {
		t.Fatal("Spec(nil) != nil")
	}
}

// TestSpecModelEndpoint: the backend's model_endpoint reaches the sandbox
// spec; unset is off (AgentConfig.SandboxBackend decides the default).
func TestSpecModelEndpoint(t *testing.T) {
	t.Parallel()
	on, off := true, false
	for _, tc := range []struct {
		in   *bool
		want bool
	}{{nil, false}, {&off, false}, {&on, true}} {
		if got := Spec(&loop.BackendCfg{ModelEndpoint: tc.in}).GetModelEndpoint(); got != tc.want {
			t.Errorf("model_endpoint %v: spec says %v, want %v", tc.in, got, tc.want)
		}
	}
}
