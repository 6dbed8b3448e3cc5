// Package server is the wick-daemon gRPC service: workspace files through a
// wickfs.LocalFS, commands with streamed output, and PTY terminals (both from
// the LocalFS too). It keeps no global state, so one process can host
// several (tests run them in-process).
package server

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wick-agent/wick/daemon"
	"github.com/wick-agent/wick/daemon/internal/bufpool"
	"github.com/wick-agent/wick/daemon/process"
	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/wickfs"
)

// Defaults of the server's limits.
const (
	// DefaultChunkSize is the size of ReadFile and WriteFile chunks.
	DefaultChunkSize = 256 << 10
	// DefaultMaxWriteBytes caps a streamed WriteFile; larger than LocalFS's
	// in-memory limit because the stream never holds the file in memory.
	DefaultMaxWriteBytes = wickfs.DefaultMaxUploadBytes
	// DefaultMaxResults is the ceiling on a Grep or Glob caller's own cap.
	DefaultMaxResults = wickfs.MaxResults
	// DefaultShell is the terminal's program when a session names none.
	DefaultShell = "sh"
	// DefaultTerm is TERM in a terminal unless the session sets it.
	DefaultTerm = wickfs.DefaultTerm
	// WindowSize is the HTTP/2 flow-control window the daemon and daemonfs
	// use. gRPC's 64 KiB default keeps a file upload waiting on window
	// updates; the connection is local, so a large window costs nothing.
	WindowSize = 4 << 20
)

// GRPCOptions are the grpc.Server options a host of the daemon service
// should use for file streaming throughput: a large flow-control window and
// a buffer pool that does not clear buffers (see internal/bufpool).
func GRPCOptions() []grpc.ServerOption {
	pool := bufpool.New()
	return []grpc.ServerOption{
		grpc.InitialWindowSize(WindowSize),
		grpc.InitialConnWindowSize(WindowSize),
		experimental.BufferPool(pool),
		grpc.ForceServerCodecV2(bufpool.NewCodec(pool)),
	}
}

type options struct {
	version       string
	chunkSize     int
	maxWriteBytes int64
	maxResults    int
	shell         string
	now           func() time.Time
	process       []process.Option
	tunnels       map[string]*Tunnel
}

// Option configures a Server.
type Option func(*options)

// WithVersion sets the version Health reports (default daemon.Version).
func WithVersion(v string) Option { return func(o *options) { o.version = v } }

// WithChunkSize sets the ReadFile chunk size.
func WithChunkSize(n int) Option { return func(o *options) { o.chunkSize = n } }

// WithMaxWriteBytes caps one WriteFile upload.
func WithMaxWriteBytes(n int64) Option { return func(o *options) { o.maxWriteBytes = n } }

// WithMaxResults caps the max_matches / max_files a caller may ask for.
func WithMaxResults(n int) Option { return func(o *options) { o.maxResults = n } }

// WithShell sets the terminal's default program.
func WithShell(sh string) Option { return func(o *options) { o.shell = sh } }

// WithProcessOptions sets the limits of the process table (see package
// process).
func WithProcessOptions(opts ...process.Option) Option {
	return func(o *options) { o.process = append(o.process, opts...) }
}

// Server implements daemonv1.DaemonServer on a workspace.
type Server struct {
	daemonv1.UnimplementedDaemonServer
	fs      *wickfs.LocalFS
	procs   *process.Table
	cfg     options
	started time.Time
}

var _ daemonv1.DaemonServer = (*Server)(nil)

// New returns a server on fs; fs stays owned by the caller.
func New(fs *wickfs.LocalFS, opts ...Option) *Server {
	cfg := options{
		version:       daemon.Version,
		chunkSize:     DefaultChunkSize,
		maxWriteBytes: DefaultMaxWriteBytes,
		maxResults:    DefaultMaxResults,
		shell:         DefaultShell,
		now:           time.Now,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.chunkSize <= 0 {
		cfg.chunkSize = DefaultChunkSize
	}
	return &Server{fs: fs, procs: process.NewTable(fs, cfg.process...), cfg: cfg, started: cfg.now()}
}

// Close kills the processes StartProcess started; the server then refuses
// new ones.
func (s *Server) Close() { s.procs.Close() }

// Register registers the service on r.
func (s *Server) Register(r grpc.ServiceRegistrar) { daemonv1.RegisterDaemonServer(r, s) }

// Health reports version and uptime.
func (s *Server) Health(context.Context, *daemonv1.HealthRequest) (*daemonv1.HealthResponse, error) {
	return &daemonv1.HealthResponse{
		Version:       s.cfg.version,
		Uptime:        durationpb.New(s.cfg.now().Sub(s.started)),
		WorkspaceRoot: s.fs.Dir(),
		Pid:           int32(os.Getpid()),
	}, nil
}

// Ls lists a directory.
func (s *Server) Ls(ctx context.Context, req *daemonv1.LsRequest) (*daemonv1.LsResponse, error) {
	entries, err := s.fs.Ls(ctx, req.GetPath())
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	out := &daemonv1.LsResponse{Entries: make([]*daemonv1.DirEntry, len(entries))}
	for i, e := range entries {
		out.Entries[i] = &daemonv1.DirEntry{Name: e.Name, Type: e.Type, Size: e.Size}
	}
	return out, nil
}

// EditFile replaces text in a file.
func (s *Server) EditFile(ctx context.Context, req *daemonv1.EditFileRequest) (*daemonv1.EditFileResponse, error) {
	var opts []wickfs.EditOption
	if req.GetReplaceAll() {
		opts = append(opts, wickfs.ReplaceAll())
	}
	res, err := s.fs.EditFile(ctx, req.GetPath(), req.GetOldText(), req.GetNewText(), opts...)
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	return &daemonv1.EditFileResponse{Path: res.Path, Replacements: int32(min(res.Replacements, math.MaxInt32))}, nil
}

func (s *Server) resultCap(n int32, what string) (int, error) {
	if n < 0 {
		return 0, status.Errorf(codes.InvalidArgument, "%s must not be negative (got %d)", what, n)
	}
	if int(n) > s.cfg.maxResults {
		return 0, status.Errorf(codes.InvalidArgument, "%s %d is above the daemon's ceiling of %d", what, n, s.cfg.maxResults)
	}
	return int(n), nil
}

// Grep searches file contents.
func (s *Server) Grep(ctx context.Context, req *daemonv1.GrepRequest) (*daemonv1.GrepResponse, error) {
	max, err := s.resultCap(req.GetMaxMatches(), "max_matches")
	if err != nil {
		return nil, err
	}
	res, err := s.fs.GrepN(ctx, req.GetPattern(), req.GetPath(), max)
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	out := &daemonv1.GrepResponse{Truncated: res.Truncated, Matches: make([]*daemonv1.GrepMatch, len(res.Matches))}
	for i, m := range res.Matches {
		out.Matches[i] = &daemonv1.GrepMatch{File: m.File, Line: int32(min(m.Line, math.MaxInt32)), Text: m.Text}
	}
	return out, nil
}

// Glob finds files by pattern.
func (s *Server) Glob(ctx context.Context, req *daemonv1.GlobRequest) (*daemonv1.GlobResponse, error) {
	max, err := s.resultCap(req.GetMaxFiles(), "max_files")
	if err != nil {
		return nil, err
	}
	res, err := s.fs.GlobN(ctx, req.GetPattern(), req.GetPath(), max)
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	return &daemonv1.GlobResponse{Files: res.Files, Truncated: res.Truncated}, nil
}

func invalidf(format string, args ...any) error {
	return status.Error(codes.InvalidArgument, fmt.Sprintf(format, args...))
}
