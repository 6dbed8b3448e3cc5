package sandbox

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/wickfs"
)

// workspaceFS is what a sandbox's calls need of its file system: the wickfs
// FileSystem, result caps for Grep and Glob, and streams for files too large
// to hold in memory, live command output and terminals. The daemon's client
// (daemonfs.FS), the confined local directory (wickfs.LocalFS) and the
// Docker-exec fallback (execFS) implement it.
type workspaceFS interface {
	wickfs.FileSystem
	// GrepN and GlobN are Grep and Glob with a cap; 0 means the default.
	GrepN(ctx context.Context, pattern, path string, max int) (*wickfs.GrepResult, error)
	GlobN(ctx context.Context, pattern, path string, max int) (*wickfs.GlobResult, error)
	// OpenFile opens a file to be streamed whole; the caller closes it.
	OpenFile(ctx context.Context, path string) (*wickfs.FileReader, error)
	// Upload replaces path atomically with everything r yields.
	Upload(ctx context.Context, path string, mode fs.FileMode, r io.Reader) (*wickfs.WriteResult, error)
	// ExecStream runs a command with its output written as it is produced.
	ExecStream(ctx context.Context, command string, stdout, stderr io.Writer, opts ...wickfs.ExecOption) (*wickfs.ExitStatus, error)
	// Terminal runs an interactive session (see wickfs.LocalFS.Terminal).
	Terminal(ctx context.Context, o wickfs.TerminalOptions, recv func() (wickfs.TerminalInput, error), send func([]byte) error) (*wickfs.ExitStatus, error)
}

var (
	_ workspaceFS = (*wickfs.LocalFS)(nil)
	_ workspaceFS = (*workspace)(nil)
)

// workspace is the one file system a call of a sandbox goes through. A
// daemon-backed sandbox tries the daemon first; when the daemon does not
// answer (Unavailable) before anything of the call moved, the call is made
// again on the Docker-exec fallback, and down records that and re-injects
// the daemon. A call that already moved bytes is never made twice: a command
// must not run twice and a stream cannot be replayed. Local sandboxes and
// sandboxes already on Docker exec have no fallback.
type workspace struct {
	primary workspaceFS
	// fallback builds the Docker-exec file system; nil when there is none.
	fallback func() workspaceFS
	// down is told that a call of op took the fallback.
	down func(op string)
	// probe asks the daemon whether it answers, for terminals, which may
	// print nothing for a long time and so cannot be judged by their first
	// output; nil skips the question.
	probe func(ctx context.Context) error
}

// retry reports whether a call of op that failed with err is made again on
// the fallback, and records it when it is.
func (w *workspace) retry(op string, err error) bool {
	if err == nil || w.fallback == nil || status.Code(err) != codes.Unavailable {
		return false
	}
	if w.down != nil {
		w.down(op)
	}
	return true
}

// attempt runs a call that moves nothing before it answers on the primary,
// then, when the daemon did not answer, on the fallback.
func attempt[T any](w *workspace, op string, call func(workspaceFS) (T, error)) (T, error) {
	r, err := call(w.primary)
	if w.retry(op, err) {
		return call(w.fallback())
	}
	return r, err
}

func (w *workspace) Ls(ctx context.Context, path string) ([]wickfs.DirEntry, error) {
	return attempt(w, "ls", func(f workspaceFS) ([]wickfs.DirEntry, error) { return f.Ls(ctx, path) })
}

func (w *workspace) ReadFile(ctx context.Context, path string) (string, error) {
	return attempt(w, "read", func(f workspaceFS) (string, error) { return f.ReadFile(ctx, path) })
}

func (w *workspace) ReadLines(ctx context.Context, path string, offset, limit int) (*wickfs.LinesResult, error) {
	return attempt(w, "read", func(f workspaceFS) (*wickfs.LinesResult, error) { return f.ReadLines(ctx, path, offset, limit) })
}

// OpenFile falls back only when the daemon failed before its first message:
// daemonfs returns once that message has arrived.
func (w *workspace) OpenFile(ctx context.Context, path string) (*wickfs.FileReader, error) {
	return attempt(w, "read", func(f workspaceFS) (*wickfs.FileReader, error) { return f.OpenFile(ctx, path) })
}

func (w *workspace) WriteFile(ctx context.Context, path, content string) (*wickfs.WriteResult, error) {
	return attempt(w, "write", func(f workspaceFS) (*wickfs.WriteResult, error) { return f.WriteFile(ctx, path, content) })
}

// Upload falls back when the daemon did not answer, which leaves the file
// as it was (the daemon replaces it only when the upload completed), and
// when every byte read from r so far can be read again: the first
// uploadReplayBytes are kept for that. A dead daemon often shows only after
// the first chunks went into the connection's buffers.
func (w *workspace) Upload(ctx context.Context, path string, mode fs.FileMode, r io.Reader) (*wickfs.WriteResult, error) {
	rr := &replayReader{r: r, limit: uploadReplayBytes}
	res, err := w.primary.Upload(ctx, path, mode, rr)
	if !rr.spilled && w.retry("write", err) {
		return w.fallback().Upload(ctx, path, mode, io.MultiReader(bytes.NewReader(rr.kept), r))
	}
	return res, err
}

func (w *workspace) EditFile(ctx context.Context, path, oldText, newText string, opts ...wickfs.EditOption) (*wickfs.EditResult, error) {
	return attempt(w, "edit", func(f workspaceFS) (*wickfs.EditResult, error) {
		return f.EditFile(ctx, path, oldText, newText, opts...)
	})
}

func (w *workspace) Grep(ctx context.Context, pattern, path string) (*wickfs.GrepResult, error) {
	return w.GrepN(ctx, pattern, path, 0)
}

func (w *workspace) GrepN(ctx context.Context, pattern, path string, max int) (*wickfs.GrepResult, error) {
	return attempt(w, "grep", func(f workspaceFS) (*wickfs.GrepResult, error) { return f.GrepN(ctx, pattern, path, max) })
}

func (w *workspace) Glob(ctx context.Context, pattern, path string) (*wickfs.GlobResult, error) {
	return w.GlobN(ctx, pattern, path, 0)
}

func (w *workspace) GlobN(ctx context.Context, pattern, path string, max int) (*wickfs.GlobResult, error) {
	return attempt(w, "glob", func(f workspaceFS) (*wickfs.GlobResult, error) { return f.GlobN(ctx, pattern, path, max) })
}

// Exec gathers ExecStream's output, so it falls back by the same rule.
func (w *workspace) Exec(ctx context.Context, command string, opts ...wickfs.ExecOption) (*wickfs.ExecResult, error) {
	return attempt(w, "exec", func(f workspaceFS) (*wickfs.ExecResult, error) { return f.Exec(ctx, command, opts...) })
}

// ExecStream falls back only while no output has been written: a command
// whose output already went to the caller must not run a second time.
func (w *workspace) ExecStream(ctx context.Context, command string, stdout, stderr io.Writer, opts ...wickfs.ExecOption) (*wickfs.ExitStatus, error) {
	var wrote atomic.Bool
	st, err := w.primary.ExecStream(ctx, command, &markingWriter{w: stdout, wrote: &wrote}, &markingWriter{w: stderr, wrote: &wrote}, opts...)
	if !wrote.Load() && w.retry("exec", err) {
		return w.fallback().ExecStream(ctx, command, stdout, stderr, opts...)
	}
	return st, err
}

// Terminal asks the daemon whether it answers before the session starts; a
// session that started stays where it is.
func (w *workspace) Terminal(ctx context.Context, o wickfs.TerminalOptions, recv func() (wickfs.TerminalInput, error), send func([]byte) error) (*wickfs.ExitStatus, error) {
	if w.probe != nil && w.fallback != nil {
		if err := w.probe(ctx); err != nil {
			if w.down != nil {
				w.down("terminal")
			}
			return w.fallback().Terminal(ctx, o, recv, send)
		}
	}
	return w.primary.Terminal(ctx, o, recv, send)
}

// uploadReplayBytes is how much of an upload is kept to be sent again
// through the fallback when the daemon turns out not to answer.
const uploadReplayBytes = 1 << 20

// replayReader keeps what is read through it, up to limit bytes; past that it
// drops what it kept and reports spilled.
type replayReader struct {
	r       io.Reader
	limit   int
	kept    []byte
	spilled bool
}

func (rr *replayReader) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	if n > 0 && !rr.spilled {
		if len(rr.kept)+n > rr.limit {
			rr.kept, rr.spilled = nil, true
		} else {
			rr.kept = append(rr.kept, p[:n]...)
		}
	}
	return n, err
}

// markingWriter notes that something was written through it.
type markingWriter struct {
	w     io.Writer
	wrote *atomic.Bool
}

func (m *markingWriter) Write(p []byte) (int, error) {
	m.wrote.Store(true)
	return m.w.Write(p)
}
