package wickfs

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"
)

// DefaultMaxUploadBytes caps one streamed Upload. It is far above
// DefaultMaxWriteBytes because a stream never holds the file in memory.
const DefaultMaxUploadBytes int64 = 8 << 30

// FileReader is a file opened to be read whole as a stream: its size and
// permission bits as they were when it was opened, then its bytes.
type FileReader struct {
	io.ReadCloser
	// Size is the file's size in bytes when it was opened.
	Size int64
	// Mode is the file's permission bits; 0 when the file system cannot tell.
	Mode fs.FileMode
}

// ExitStatus is how a streamed command or a terminal session ended.
type ExitStatus struct {
	// ExitCode is the exit code; -1 when a signal killed the process.
	ExitCode int
	// TimedOut is true when the command was killed at its timeout.
	TimedOut bool
	// Truncated is true when output past the cap was dropped.
	Truncated bool
	// Duration is how long the process ran.
	Duration time.Duration
}

// WithStdin gives the command data on its standard input, which is then closed.
func WithStdin(b []byte) ExecOption { return func(o *ExecOptions) { o.Stdin = b } }

// DecodeContent reverses EncodeContent: "base64:" content is decoded, any
// other content is UTF-8 text taken as is.
func DecodeContent(content string) ([]byte, error) {
	enc, ok := strings.CutPrefix(content, Base64Prefix)
	if !ok {
		return []byte(content), nil
	}
	data, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("decode base64 content: %w", err)
	}
	return data, nil
}

// OpenFile opens a regular file to be streamed whole; the caller closes it.
func (l *LocalFS) OpenFile(ctx context.Context, p string) (*FileReader, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, st, err := l.OpenRead(p)
	if err != nil {
		return nil, err
	}
	return &FileReader{ReadCloser: f, Size: st.Size(), Mode: st.Mode().Perm()}, nil
}

// Upload replaces p atomically with everything r yields, creating parent
// directories; mode is used for a new file (0 means DefaultFileMode). Nothing
// is replaced unless r is read to its end within the upload limit and ctx is
// still live.
func (l *LocalFS) Upload(ctx context.Context, p string, mode fs.FileMode, r io.Reader) (*WriteResult, error) {
	w, err := l.CreateAtomic(p, mode)
	if err != nil {
		return nil, err
	}
	n, err := io.Copy(w, io.LimitReader(r, l.cfg.maxUploadBytes+1))
	if err == nil && n > l.cfg.maxUploadBytes {
		err = &PathError{Op: "write", Path: w.Path(), Err: tooLarge(fmt.Sprintf(
			"upload is more than the %d-byte limit; nothing was written", l.cfg.maxUploadBytes))}
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		w.Abort()
		return nil, err
	}
	if err := w.Commit(); err != nil {
		return nil, err
	}
	return &WriteResult{Path: w.Path(), BytesWritten: int(n)}, nil
}

// ExecStream runs `sh -c command` like Exec but writes its output to stdout
// and stderr as it is produced, never both at once, within the output cap.
// A failed write ends the command and is returned.
func (l *LocalFS) ExecStream(ctx context.Context, command string, stdout, stderr io.Writer, opts ...ExecOption) (*ExitStatus, error) {
	o := ApplyExec(opts)
	timeout, max := l.ExecLimits(o)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd, done, err := l.Command(cctx, command, o)
	if err != nil {
		return nil, err
	}
	defer done()
	if len(o.Stdin) > 0 {
		cmd.Stdin = bytes.NewReader(o.Stdin)
	}
	out := &serialWriter{cancel: cancel}
	lim := NewOutputLimit(max)
	cmd.Stdout = lim.Writer(out.to(stdout))
	cmd.Stderr = lim.Writer(out.to(stderr))
	start := time.Now()
	err = cmd.Run()
	if cmd.ProcessState == nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, fmt.Errorf("exec: start %s: %w", l.cfg.shell, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := out.failed(); err != nil {
		return nil, err
	}
	return &ExitStatus{
		ExitCode:  cmd.ProcessState.ExitCode(),
		TimedOut:  errors.Is(cctx.Err(), context.DeadlineExceeded),
		Truncated: lim.Truncated(),
		Duration:  time.Since(start),
	}, nil
}

// serialWriter serialises a command's stdout and stderr copiers onto writers
// that may not be written from two goroutines at once (a gRPC stream), and
// remembers the first failed write, which ends the command.
type serialWriter struct {
	mu     sync.Mutex
	err    error
	cancel context.CancelFunc
}

func (s *serialWriter) to(w io.Writer) io.Writer {
	return writerFunc(func(b []byte) (int, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.err != nil {
			return 0, s.err
		}
		if _, err := w.Write(b); err != nil {
			s.err = err
			s.cancel()
			return 0, err
		}
		return len(b), nil
	})
}

func (s *serialWriter) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// ChunkReader reads a stream of chunks, such as the data messages of a gRPC
// stream, as one byte stream. next returns the next chunk, or an error (io.EOF
// at the end) that every later Read then returns.
func ChunkReader(next func() ([]byte, error)) io.Reader { return &chunkReader{next: next} }

type chunkReader struct {
	next func() ([]byte, error)
	buf  []byte
	err  error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		r.buf, r.err = r.next()
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}
