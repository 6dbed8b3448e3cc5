// Package daemonfs is a wickfs.FileSystem backed by a wick-daemon connection:
// the sandbox service and the agent's file tools use the same interface
// whether the files are local or inside a container.
package daemonfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wick-agent/wick/daemon/internal/bufpool"
	"github.com/wick-agent/wick/daemon/server"
	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/wickfs"
)

const (
	// DefaultChunkSize is the size of WriteFile chunks sent to the daemon.
	DefaultChunkSize = 256 << 10
	// WindowSize is the HTTP/2 flow-control window Dial asks for.
	WindowSize = 4 << 20
)

type options struct {
	chunkSize      int
	maxReadBytes   int64
	maxOutputBytes int64
}

// Option configures an FS.
type Option func(*options)

// WithChunkSize sets the WriteFile chunk size.
func WithChunkSize(n int) Option { return func(o *options) { o.chunkSize = n } }

// WithMaxReadBytes caps what ReadFile gathers in memory.
func WithMaxReadBytes(n int64) Option { return func(o *options) { o.maxReadBytes = n } }

// WithMaxOutputBytes caps what Exec gathers, whatever the daemon sends.
func WithMaxOutputBytes(n int64) Option { return func(o *options) { o.maxOutputBytes = n } }

// FS is a wickfs.FileSystem over a daemon client.
type FS struct {
	c   daemonv1.DaemonClient
	cfg options
}

var _ wickfs.FileSystem = (*FS)(nil)

// New returns an FS that calls the daemon through client.
func New(client daemonv1.DaemonClient, opts ...Option) *FS {
	cfg := options{chunkSize: DefaultChunkSize, maxReadBytes: wickfs.DefaultMaxReadBytes, maxOutputBytes: 64 << 20}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.chunkSize <= 0 {
		cfg.chunkSize = DefaultChunkSize
	}
	return &FS{c: client, cfg: cfg}
}

// Client is the underlying daemon client, for calls FileSystem does not
// cover (Health).
func (f *FS) Client() daemonv1.DaemonClient { return f.c }

// Ls lists a directory.
func (f *FS) Ls(ctx context.Context, path string) ([]wickfs.DirEntry, error) {
	if err := checkUTF8("path", path); err != nil {
		return nil, err
	}
	res, err := f.c.Ls(ctx, &daemonv1.LsRequest{Path: path})
	if err != nil {
		return nil, fromStatus(err)
	}
	out := make([]wickfs.DirEntry, len(res.GetEntries()))
	for i, e := range res.GetEntries() {
		out[i] = wickfs.DirEntry{Name: e.GetName(), Type: e.GetType(), Size: e.GetSize()}
	}
	return out, nil
}

// ReadFile reads a whole file, refusing files above the read limit before
// they are transferred.
func (f *FS) ReadFile(ctx context.Context, path string) (string, error) {
	if err := checkUTF8("path", path); err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := f.c.ReadFile(ctx, &daemonv1.ReadFileRequest{Path: path})
	if err != nil {
		return "", fromStatus(err)
	}
	var data []byte
	first := true
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return wickfs.EncodeContent(data), nil
		}
		if err != nil {
			return "", fromStatus(err)
		}
		if first {
			first = false
			if msg.GetSize() > f.cfg.maxReadBytes {
				return "", wickfs.NewError(wickfs.ErrTooLarge, fmt.Sprintf(
					"read %s: file is %d bytes, more than the %d-byte limit; read a window of lines instead", path, msg.GetSize(), f.cfg.maxReadBytes))
			}
			data = make([]byte, 0, msg.GetSize())
		}
		if int64(len(data)+len(msg.GetData())) > f.cfg.maxReadBytes {
			return "", wickfs.NewError(wickfs.ErrTooLarge, fmt.Sprintf("read %s: file grew past the %d-byte limit", path, f.cfg.maxReadBytes))
		}
		data = append(data, msg.GetData()...)
	}
}

// ReadLines reads a window of lines.
func (f *FS) ReadLines(ctx context.Context, path string, offset, limit int) (*wickfs.LinesResult, error) {
	if err := checkUTF8("path", path); err != nil {
		return nil, err
	}
	if offset < 0 || limit < 0 {
		return nil, wickfs.NewError(wickfs.ErrInvalidArgument, fmt.Sprintf("offset (%d) and limit (%d) must not be negative", offset, limit))
	}
	if limit == 0 {
		limit = wickfs.DefaultReadLinesLimit
	}
	stream, err := f.c.ReadFile(ctx, &daemonv1.ReadFileRequest{Path: path, Offset: int64(offset), Limit: int64(limit)})
	if err != nil {
		return nil, fromStatus(err)
	}
	var b strings.Builder
	res := &wickfs.LinesResult{Offset: offset, Lines: []string{}}
	first := true
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fromStatus(err)
		}
		if first {
			first = false
			res.Size, res.Mode = msg.GetSize(), msg.GetMode()
		}
		if int64(b.Len()+len(msg.GetData())) > f.cfg.maxReadBytes {
			return nil, wickfs.NewError(wickfs.ErrTooLarge, fmt.Sprintf("read %s: the lines asked for exceed the %d-byte limit", path, f.cfg.maxReadBytes))
		}
		b.Write(msg.GetData())
		res.MoreLines = res.MoreLines || msg.GetMoreLines()
	}
	if s := b.String(); s != "" {
		res.Lines = strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	}
	return res, nil
}

// WriteFile uploads content in chunks; the daemon replaces the file only
// when every chunk has arrived.
func (f *FS) WriteFile(ctx context.Context, path, content string) (*wickfs.WriteResult, error) {
	return f.Upload(ctx, path, 0, strings.NewReader(content))
}

// Upload streams r into path (mode 0 means the daemon's default for a new
// file); nothing is replaced unless r is read to its end.
func (f *FS) Upload(ctx context.Context, path string, mode fs.FileMode, r io.Reader) (*wickfs.WriteResult, error) {
	if err := checkUTF8("path", path); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := f.c.WriteFile(ctx)
	if err != nil {
		return nil, fromStatus(err)
	}
	if err := stream.Send(&daemonv1.WriteFileRequest{Msg: &daemonv1.WriteFileRequest_Header{
		Header: &daemonv1.WriteFileHeader{Path: path, Mode: uint32(mode.Perm())}}}); err != nil {
		return nil, f.sendErr(stream, err)
	}
	buf := make([]byte, f.cfg.chunkSize)
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if err := stream.Send(&daemonv1.WriteFileRequest{Msg: &daemonv1.WriteFileRequest_Data{Data: buf[:n]}}); err != nil {
				return nil, f.sendErr(stream, err)
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			// Cancelling the stream makes the daemon drop the partial file.
			return nil, fmt.Errorf("upload %s: %w", path, rerr)
		}
	}
	res, err := stream.CloseAndRecv()
	if err != nil {
		return nil, fromStatus(err)
	}
	return &wickfs.WriteResult{Path: res.GetPath(), BytesWritten: int(res.GetBytesWritten())}, nil
}

// sendErr fetches the daemon's own error when a Send failed because the
// daemon ended the call (Send then only reports io.EOF).
func (f *FS) sendErr(stream grpc.ClientStreamingClient[daemonv1.WriteFileRequest, daemonv1.WriteFileResponse], err error) error {
	if errors.Is(err, io.EOF) {
		_, err = stream.CloseAndRecv()
	}
	return fromStatus(err)
}

// OpenFile opens a file to be streamed whole. The first message has arrived
// when it returns, so an error here means no byte of the file moved; the
// caller closes the reader, which ends the call.
func (f *FS) OpenFile(ctx context.Context, path string) (*wickfs.FileReader, error) {
	if err := checkUTF8("path", path); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stream, err := f.c.ReadFile(ctx, &daemonv1.ReadFileRequest{Path: path})
	if err != nil {
		cancel()
		return nil, fromStatus(err)
	}
	first, err := stream.Recv()
	if err != nil {
		cancel()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("read: the daemon ended the stream without the file's metadata")
		}
		return nil, fromStatus(err)
	}
	pending := first.GetData()
	r := wickfs.ChunkReader(func() ([]byte, error) {
		if pending != nil {
			b := pending
			pending = nil
			return b, nil
		}
		msg, err := stream.Recv()
		if err != nil && !errors.Is(err, io.EOF) {
			err = fromStatus(err)
		}
		return msg.GetData(), err
	})
	return &wickfs.FileReader{ReadCloser: fileStream{r, cancel}, Size: first.GetSize(), Mode: fs.FileMode(first.GetMode()).Perm()}, nil
}

// fileStream reads the chunks of a ReadFile stream; Close ends the call.
type fileStream struct {
	io.Reader
	cancel context.CancelFunc
}

func (r fileStream) Close() error { r.cancel(); return nil }

// Download streams path into w and returns the byte count.
func (f *FS) Download(ctx context.Context, path string, w io.Writer) (int64, error) {
	r, err := f.OpenFile(ctx, path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	return io.Copy(w, r)
}

// EditFile edits a file.
func (f *FS) EditFile(ctx context.Context, path, oldText, newText string, opts ...wickfs.EditOption) (*wickfs.EditResult, error) {
	if err := checkUTF8("path", path, "old_text", oldText, "new_text", newText); err != nil {
		return nil, err
	}
	o := wickfs.ApplyEdit(opts)
	res, err := f.c.EditFile(ctx, &daemonv1.EditFileRequest{Path: path, OldText: oldText, NewText: newText, ReplaceAll: o.ReplaceAll})
	if err != nil {
		return nil, fromStatus(err)
	}
	return &wickfs.EditResult{Path: res.GetPath(), Replacements: int(res.GetReplacements())}, nil
}

// Grep searches file contents.
func (f *FS) Grep(ctx context.Context, pattern, path string) (*wickfs.GrepResult, error) {
	return f.GrepN(ctx, pattern, path, 0)
}

// GrepN is Grep with a match cap; max 0 means the daemon's default.
func (f *FS) GrepN(ctx context.Context, pattern, path string, max int) (*wickfs.GrepResult, error) {
	if err := checkUTF8("path", path, "pattern", pattern); err != nil {
		return nil, err
	}
	res, err := f.c.Grep(ctx, &daemonv1.GrepRequest{Pattern: pattern, Path: path, MaxMatches: int32(min(max, math.MaxInt32))})
	if err != nil {
		return nil, fromStatus(err)
	}
	out := &wickfs.GrepResult{Truncated: res.GetTruncated(), Matches: make([]wickfs.GrepMatch, len(res.GetMatches()))}
	for i, m := range res.GetMatches() {
		out.Matches[i] = wickfs.GrepMatch{File: m.GetFile(), Line: int(m.GetLine()), Text: m.GetText()}
	}
	return out, nil
}

// Glob finds files by pattern.
func (f *FS) Glob(ctx context.Context, pattern, path string) (*wickfs.GlobResult, error) {
	return f.GlobN(ctx, pattern, path, 0)
}

// GlobN is Glob with a result cap; max 0 means the daemon's default.
func (f *FS) GlobN(ctx context.Context, pattern, path string, max int) (*wickfs.GlobResult, error) {
	if err := checkUTF8("path", path, "pattern", pattern); err != nil {
		return nil, err
	}
	res, err := f.c.Glob(ctx, &daemonv1.GlobRequest{Pattern: pattern, Path: path, MaxFiles: int32(min(max, math.MaxInt32))})
	if err != nil {
		return nil, fromStatus(err)
	}
	files := res.GetFiles()
	if files == nil {
		files = []string{}
	}
	return &wickfs.GlobResult{Files: files, Truncated: res.GetTruncated()}, nil
}

// Exec runs a command and gathers its streamed output.
func (f *FS) Exec(ctx context.Context, command string, opts ...wickfs.ExecOption) (*wickfs.ExecResult, error) {
	var stdout, stderr bytes.Buffer
	st, err := f.ExecStream(ctx, command, &stdout, &stderr, opts...)
	if err != nil {
		return nil, err
	}
	return &wickfs.ExecResult{
		Stdout:    wickfs.TextOutput(stdout.Bytes()),
		Stderr:    wickfs.TextOutput(stderr.Bytes()),
		ExitCode:  st.ExitCode,
		TimedOut:  st.TimedOut,
		Truncated: st.Truncated,
	}, nil
}

// ExecStream runs a command in the daemon and writes its output to stdout
// and stderr as it arrives, within the client's own output cap whatever the
// daemon sends. A failed write ends the call and is returned.
func (f *FS) ExecStream(ctx context.Context, command string, stdout, stderr io.Writer, opts ...wickfs.ExecOption) (*wickfs.ExitStatus, error) {
	o := wickfs.ApplyExec(opts)
	if err := checkUTF8("command", command, "workdir", o.Workdir); err != nil {
		return nil, err
	}
	for k, v := range o.Env {
		if err := checkUTF8("environment variable", k, "environment value", v); err != nil {
			return nil, err
		}
	}
	req := &daemonv1.ExecRequest{Command: command, Workdir: o.Workdir, Env: o.Env, MaxOutputBytes: o.MaxOutputBytes, Stdin: o.Stdin}
	if o.Timeout > 0 {
		req.Timeout = durationpb.New(o.Timeout)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := f.c.Exec(ctx, req)
	if err != nil {
		return nil, fromStatus(err)
	}
	// Until the daemon's header, the command was not taken and the caller
	// may make the call elsewhere; after it, a broken stream is not
	// Unavailable, so the command is never run twice. A stream that broke
	// before any header gives Header() no error, only no header: that is a
	// command not taken. An older daemon sends no header; its first message
	// then says the command was taken.
	md, err := stream.Header()
	if err != nil {
		return nil, fromStatus(err)
	}
	taken := len(md.Get(server.ExecStartedHeader)) > 0
	max := f.cfg.maxOutputBytes
	if o.MaxOutputBytes > 0 {
		max = min(max, o.MaxOutputBytes)
	}
	lim := wickfs.NewOutputLimit(max)
	wout, werr := lim.Writer(stdout), lim.Writer(stderr)
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("exec: the daemon ended the stream without an exit status")
		}
		if taken && status.Code(err) == codes.Unavailable {
			return nil, status.Errorf(codes.Aborted, "exec: wick-daemon stopped while the command ran, which was not run again: %s", status.Convert(err).Message())
		}
		if err != nil {
			return nil, fromStatus(err)
		}
		taken = true
		switch m := msg.GetOutput().(type) {
		case *daemonv1.ExecResponse_Stdout:
			_, err = wout.Write(m.Stdout)
		case *daemonv1.ExecResponse_Stderr:
			_, err = werr.Write(m.Stderr)
		case *daemonv1.ExecResponse_Exit:
			// The exit status is the daemon's last message: reading on to the
			// end finishes the call here (and its trace span) rather than
			// in the background when ctx is cancelled.
			for stream.RecvMsg(new(daemonv1.ExecResponse)) == nil {
			}
			return &wickfs.ExitStatus{
				ExitCode:  int(m.Exit.GetExitCode()),
				TimedOut:  m.Exit.GetTimedOut(),
				Truncated: m.Exit.GetTruncated() || lim.Truncated(),
				Duration:  m.Exit.GetDuration().AsDuration(),
			}, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Terminal runs a terminal session in the daemon with LocalFS.Terminal's
// contract: output goes to send as it arrives, recv's messages go to the
// daemon, and the exit status is returned when the shell exits; nil, nil when
// recv reports io.EOF (the daemon's side is closed and the session ends).
func (f *FS) Terminal(ctx context.Context, o wickfs.TerminalOptions, recv func() (wickfs.TerminalInput, error), send func([]byte) error) (*wickfs.ExitStatus, error) {
	if err := checkUTF8("command", o.Command, "workdir", o.Workdir); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := f.c.Terminal(ctx)
	if err != nil {
		return nil, fromStatus(err)
	}
	start := &daemonv1.TerminalStart{Command: o.Command, Workdir: o.Workdir, Env: o.Env,
		Size: &daemonv1.TerminalSize{Rows: o.Rows, Cols: o.Cols}}
	if err := stream.Send(&daemonv1.TerminalRequest{Msg: &daemonv1.TerminalRequest_Start{Start: start}}); err != nil && !errors.Is(err, io.EOF) {
		return nil, fromStatus(err)
	}
	go func() {
		for {
			in, err := recv()
			if err != nil {
				if errors.Is(err, io.EOF) {
					_ = stream.CloseSend()
				} else {
					cancel()
				}
				return
			}
			m := &daemonv1.TerminalRequest{Msg: &daemonv1.TerminalRequest_Input{Input: in.Data}}
			if in.Resize {
				m.Msg = &daemonv1.TerminalRequest_Resize{Resize: &daemonv1.TerminalSize{Rows: in.Rows, Cols: in.Cols}}
			}
			if err := stream.Send(m); err != nil {
				return
			}
		}
	}()
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, fromStatus(err)
		}
		if e := m.GetExit(); e != nil {
			return &wickfs.ExitStatus{ExitCode: int(e.GetExitCode()), Duration: e.GetDuration().AsDuration()}, nil
		}
		if err := send(m.GetOutput()); err != nil {
			return nil, err
		}
	}
}

// fromStatus turns a daemon status back into an error matching the wickfs
// sentinel it came from, keeping the daemon's message.
func fromStatus(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	var kind error
	switch st.Code() {
	case codes.NotFound:
		kind = wickfs.ErrNotFound
	case codes.PermissionDenied:
		kind = wickfs.ErrPermission
		if strings.Contains(st.Message(), wickfs.ErrOutsideWorkspace.Error()) {
			kind = wickfs.ErrOutsideWorkspace
		}
	case codes.InvalidArgument:
		kind = wickfs.ErrInvalidArgument
	case codes.ResourceExhausted:
		kind = wickfs.ErrTooLarge
	case codes.Canceled:
		return fmt.Errorf("daemon: %s: %w", st.Message(), context.Canceled)
	case codes.DeadlineExceeded:
		return fmt.Errorf("daemon: %s: %w", st.Message(), context.DeadlineExceeded)
	default:
		return fmt.Errorf("daemon: %w", err)
	}
	return &statusError{msg: st.Message(), kind: kind, st: err}
}

// statusError matches both its wickfs sentinel and, through GRPCStatus, the
// original status.
type statusError struct {
	msg  string
	kind error
	st   error
}

func (e *statusError) Error() string { return e.msg }

func (e *statusError) Unwrap() error { return e.kind }

// GRPCStatus keeps status.FromError working on the converted error.
func (e *statusError) GRPCStatus() *status.Status { s, _ := status.FromError(e.st); return s }

// tokenCreds sends the daemon token on every call.
type tokenCreds string

func (t tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

// RequireTransportSecurity is false: the daemon's TCP port is reached over a
// private container network, and the token only proves the caller is the
// sandbox service. Put TLS in front when the network is not private.
func (tokenCreds) RequireTransportSecurity() bool { return false }

// Dial returns a client connection to a daemon at a Unix socket path
// ("/run/wick/daemon.sock" or "unix:///…") or a TCP address ("host:port"),
// sending token (if not empty) on every call. The connection is made lazily;
// ctx is kept for symmetry with other dialers and is not used.
func Dial(_ context.Context, target, token string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	switch {
	case strings.HasPrefix(target, "unix://"), strings.HasPrefix(target, "unix:"):
	case strings.HasPrefix(target, "/"):
		target = "unix://" + target
	default:
		target = "passthrough:///" + target
	}
	base := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// A large flow-control window keeps uploads from stalling on window
		// updates (the daemon's server side uses the same).
		grpc.WithInitialWindowSize(WindowSize),
		grpc.WithInitialConnWindowSize(WindowSize),
	}
	pool := bufpool.New()
	base = append(base,
		experimental.WithBufferPool(pool),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(bufpool.NewCodec(pool))))
	if token != "" {
		base = append(base, grpc.WithPerRPCCredentials(tokenCreds(token)))
	}
	conn, err := grpc.NewClient(target, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("dial daemon %s: %w", target, err)
	}
	return conn, nil
}

// checkUTF8 refuses strings protobuf cannot carry, with the message LocalFS
// gives for the same input.
func checkUTF8(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if !utf8.ValidString(pairs[i+1]) {
			return wickfs.NewError(wickfs.ErrInvalidArgument, fmt.Sprintf("%s %q is not valid UTF-8", pairs[i], pairs[i+1]))
		}
	}
	return nil
}
