package wickfs

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/wick-agent/wick/wickfs/confine"
)

// Defaults of LocalFS; each has an option.
const (
	// DefaultPrefix is the agent-facing path the root is mounted at.
	DefaultPrefix = "/workspace"
	// DefaultExecTimeout bounds a command when the caller gives no timeout.
	DefaultExecTimeout = 120 * time.Second
	// DefaultMaxOutputBytes caps stdout plus stderr of a command.
	DefaultMaxOutputBytes = 1 << 20
	// DefaultMaxReadBytes is the largest file ReadFile returns whole; larger
	// files are read as windows of lines.
	DefaultMaxReadBytes = 16 << 20
	// DefaultMaxWriteBytes is the largest content WriteFile and EditFile write.
	DefaultMaxWriteBytes = 64 << 20
	// DefaultMaxLineBytes is where a line in a Grep result is cut.
	DefaultMaxLineBytes = 4096
	// DefaultReadLinesLimit is the window ReadLines returns when limit is 0.
	DefaultReadLinesLimit = 2000
	// DefaultWaitDelay is how long a finished or killed command's output pipes
	// stay open for processes it left behind before they are closed.
	DefaultWaitDelay = time.Second
	// DefaultShell runs commands as `sh -c`.
	DefaultShell = "sh"
	// DefaultGrepWorkers is how many files Grep reads and searches at once.
	DefaultGrepWorkers = 16
	// DefaultFileMode is the mode of a newly created file.
	DefaultFileMode fs.FileMode = 0o644

	tmpPrefix = ".wickfs-tmp-"
)

type localOptions struct {
	prefix         string
	execTimeout    time.Duration
	maxOutputBytes int64
	maxReadBytes   int64
	maxWriteBytes  int64
	maxUploadBytes int64
	maxLineBytes   int
	maxGrepMatches int
	maxGlobFiles   int
	grepWorkers    int
	waitDelay      time.Duration
	shell          string
	confinement    *Confinement
	cgroup         *confine.Cgroup
}

// LocalOption configures a LocalFS.
type LocalOption func(*localOptions)

// WithPrefix sets the agent-facing path the root is mounted at ("/workspace"
// by default; "/" maps every absolute path onto the root).
func WithPrefix(p string) LocalOption { return func(o *localOptions) { o.prefix = p } }

// WithExecTimeout sets the default command timeout.
func WithExecTimeout(d time.Duration) LocalOption {
	return func(o *localOptions) { o.execTimeout = d }
}

// WithMaxOutputBytes sets the default cap on a command's stdout plus stderr.
func WithMaxOutputBytes(n int64) LocalOption {
	return func(o *localOptions) { o.maxOutputBytes = n }
}

// WithMaxReadBytes sets the largest file ReadFile and EditFile load.
func WithMaxReadBytes(n int64) LocalOption { return func(o *localOptions) { o.maxReadBytes = n } }

// WithMaxWriteBytes sets the largest content WriteFile and EditFile write.
func WithMaxWriteBytes(n int64) LocalOption {
	return func(o *localOptions) { o.maxWriteBytes = n }
}

// WithMaxUploadBytes sets the largest file one streamed Upload writes.
func WithMaxUploadBytes(n int64) LocalOption {
	return func(o *localOptions) { o.maxUploadBytes = n }
}

// WithMaxLineBytes sets where a Grep result line is cut.
func WithMaxLineBytes(n int) LocalOption { return func(o *localOptions) { o.maxLineBytes = n } }

// WithMaxGrepMatches sets Grep's default match cap.
func WithMaxGrepMatches(n int) LocalOption {
	return func(o *localOptions) { o.maxGrepMatches = n }
}

// WithMaxGlobFiles sets Glob's default result cap.
func WithMaxGlobFiles(n int) LocalOption { return func(o *localOptions) { o.maxGlobFiles = n } }

// WithGrepWorkers sets how many files Grep reads at once (default
// DefaultGrepWorkers).
func WithGrepWorkers(n int) LocalOption { return func(o *localOptions) { o.grepWorkers = n } }

// WithWaitDelay sets how long output pipes held by a command's leftover
// background processes stay open after it ends.
func WithWaitDelay(d time.Duration) LocalOption { return func(o *localOptions) { o.waitDelay = d } }

// WithShell sets the shell run as `<shell> -c command`.
func WithShell(sh string) LocalOption { return func(o *localOptions) { o.shell = sh } }

// Confinement is what WithConfinement imposes on commands and terminals.
type Confinement struct {
	// Env is the whole environment they start with; per-call variables are
	// added to it. Nothing of the process's own environment is passed.
	Env map[string]string
	// Policy, when set, confines them with Landlock and no_new_privs (see
	// package confine); the LocalFS adds its root to Policy.ReadWrite. Nil
	// leaves only the environment scrubbed, for kernels without Landlock.
	Policy *confine.Policy
}

// WithConfinement makes every command and terminal start with exactly c.Env,
// in a session of its own (so no controlling terminal of the server's can be
// reached through /dev/tty), under c.Policy when it is set. Without it they
// inherit the process's environment and rights, which is what wick-daemon,
// already confined by its container, wants.
func WithConfinement(c Confinement) LocalOption {
	return func(o *localOptions) { o.confinement = &c }
}

// WithCgroup starts every command, process and terminal in a cgroup beneath
// cg (through the confine launcher), so that nothing they start escapes
// being killed, however it detaches: a command's own cgroup at its timeout,
// a terminal's when the session ends; the caller kills cg itself when the
// sandbox stops. A process started with PrepareCmd joins cg directly.
func WithCgroup(cg *confine.Cgroup) LocalOption { return func(o *localOptions) { o.cgroup = cg } }

// LocalFS is a FileSystem on a local directory. Every path goes through an
// os.Root, so "..", absolute paths outside the prefix and symlinks that lead
// out of the root are refused by os.Root's openat-based resolution, not by
// string checks alone, and without a check-then-open race. Commands run with
// the process's own rights and environment unless WithConfinement is given.
type LocalFS struct {
	root *os.Root
	dir  string
	cfg  localOptions

	// cgroups names the commands' cgroups; lingering are those of commands
	// that ended while processes they left in the background still ran, to
	// be removed once those have gone too.
	cgroups   atomic.Uint64
	lingerMu  sync.Mutex
	lingering []*confine.Cgroup
}

var _ FileSystem = (*LocalFS)(nil)

// NewLocalFS opens root (which must exist) as the workspace.
func NewLocalFS(root string, opts ...LocalOption) (*LocalFS, error) {
	cfg := localOptions{
		prefix:         DefaultPrefix,
		execTimeout:    DefaultExecTimeout,
		maxOutputBytes: DefaultMaxOutputBytes,
		maxReadBytes:   DefaultMaxReadBytes,
		maxWriteBytes:  DefaultMaxWriteBytes,
		maxUploadBytes: DefaultMaxUploadBytes,
		maxLineBytes:   DefaultMaxLineBytes,
		maxGrepMatches: MaxGrepMatches,
		maxGlobFiles:   MaxGlobFiles,
		grepWorkers:    DefaultGrepWorkers,
		waitDelay:      DefaultWaitDelay,
		shell:          DefaultShell,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if !path.IsAbs(cfg.prefix) {
		return nil, fmt.Errorf("wickfs: prefix %q must be an absolute path", cfg.prefix)
	}
	cfg.prefix = path.Clean(cfg.prefix)
	if cfg.maxLineBytes < 16 || cfg.grepWorkers < 1 || cfg.maxGrepMatches < 1 || cfg.maxGlobFiles < 1 {
		return nil, errors.New("wickfs: line, worker and result limits must be positive")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("wickfs: root %q: %w", root, err)
	}
	if c := cfg.confinement; c != nil && c.Policy != nil {
		p := *c.Policy
		p.ReadWrite = append([]string{abs}, p.ReadWrite...)
		cfg.confinement = &Confinement{Env: c.Env, Policy: &p}
	}
	// Looking the shell up once saves a PATH search on every command.
	if sh, err := exec.LookPath(cfg.shell); err == nil {
		cfg.shell = sh
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("wickfs: open root: %w", err)
	}
	return &LocalFS{root: r, dir: abs, cfg: cfg}, nil
}

// Close releases the root directory handle.
func (l *LocalFS) Close() error { return l.root.Close() }

// Dir is the host directory the workspace maps onto.
func (l *LocalFS) Dir() string { return l.dir }

// Prefix is the agent-facing path of the root.
func (l *LocalFS) Prefix() string { return l.cfg.prefix }

// Resolve maps an agent-facing path onto a slash-separated path relative to
// the root ("." for the root itself) and returns the cleaned agent-facing path
// too. Relative paths are taken relative to the prefix. It refuses paths that
// leave the prefix; symlinks are checked when the path is opened.
func (l *LocalFS) Resolve(p string) (rel, agent string, err error) {
	if !utf8.ValidString(p) {
		return "", "", invalid(fmt.Sprintf("path %q is not valid UTF-8", p))
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", "", invalid(fmt.Sprintf("path %q contains a NUL byte", p))
	}
	if p == "" {
		p = l.cfg.prefix
	}
	if !path.IsAbs(p) {
		p = path.Join(l.cfg.prefix, p)
	}
	c := path.Clean(p)
	if err := checkLength(c); err != nil {
		return "", "", err
	}
	switch {
	case l.cfg.prefix == "/":
		rel = strings.TrimPrefix(c, "/")
	case c == l.cfg.prefix:
		rel = ""
	case strings.HasPrefix(c, l.cfg.prefix+"/"):
		rel = c[len(l.cfg.prefix)+1:]
	default:
		return "", "", &PathError{Op: "resolve", Path: p, Err: ErrOutsideWorkspace}
	}
	if rel == "" {
		rel = "."
	}
	return rel, c, nil
}

// checkLength refuses a path the kernel would refuse with ENAMETOOLONG,
// before any file is touched, with a message that says which limit.
func checkLength(p string) error {
	if len(p) > MaxPathBytes {
		return invalid(fmt.Sprintf("path %s is %d bytes, longer than the limit of %d bytes", shorten(p), len(p), MaxPathBytes))
	}
	for name := range strings.SplitSeq(p, "/") {
		if len(name) > MaxNameBytes {
			return invalid(fmt.Sprintf("path %s has a name of %d bytes, longer than the limit of %d bytes per name",
				shorten(p), len(name), MaxNameBytes))
		}
	}
	return nil
}

// shorten quotes p for a message, cut to its first 64 bytes.
func shorten(p string) string {
	const keep = 64
	if len(p) <= keep {
		return fmt.Sprintf("%q", p)
	}
	return fmt.Sprintf("%q…", strings.ToValidUTF8(p[:keep], ""))
}

// agentPath turns a root-relative path back into an agent-facing one.
func (l *LocalFS) agentPath(rel string) string {
	if rel == "." {
		return l.cfg.prefix
	}
	return path.Join(l.cfg.prefix, rel)
}

// HostPath maps an agent-facing path onto the host, after checking through
// the root that it exists and stays inside. Only for handing a directory to a
// child process (a working directory); file operations never use host paths.
func (l *LocalFS) HostPath(p string) (string, error) {
	rel, agent, err := l.Resolve(p)
	if err != nil {
		return "", err
	}
	if _, err := l.root.Stat(rel); err != nil {
		return "", opError("stat", agent, err)
	}
	return filepath.Join(l.dir, filepath.FromSlash(rel)), nil
}

// Ls lists one directory, sorted by name.
func (l *LocalFS) Ls(ctx context.Context, p string) ([]DirEntry, error) {
	rel, agent, err := l.Resolve(p)
	if err != nil {
		return nil, err
	}
	// Stat first: opening a FIFO would block until a writer came.
	if st, err := l.root.Stat(rel); err != nil {
		return nil, opError("ls", agent, err)
	} else if !st.IsDir() {
		return nil, &PathError{Op: "ls", Path: agent, Err: invalid("not a directory")}
	}
	f, err := l.root.Open(rel)
	if err != nil {
		return nil, opError("ls", agent, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, opError("ls", agent, err)
	}
	if !st.IsDir() {
		return nil, &PathError{Op: "ls", Path: agent, Err: invalid("not a directory")}
	}
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, opError("ls", agent, err)
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	out := make([]DirEntry, 0, len(des))
	for _, d := range des {
		e := DirEntry{Name: d.Name(), Type: entryType(d.Type())}
		if info, err := d.Info(); err == nil {
			e.Size = info.Size()
		}
		out = append(out, e)
	}
	return out, ctx.Err()
}

func entryType(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "dir"
	}
	return "file"
}

// OpenRead opens a regular file for reading, for callers that stream it.
func (l *LocalFS) OpenRead(p string) (*os.File, fs.FileInfo, error) {
	rel, agent, err := l.Resolve(p)
	if err != nil {
		return nil, nil, err
	}
	// Stat first: opening a FIFO or a device could block or have effects.
	if st, err := l.root.Stat(rel); err != nil {
		return nil, nil, opError("read", agent, err)
	} else if st.IsDir() {
		return nil, nil, &PathError{Op: "read", Path: agent, Err: invalid("is a directory")}
	} else if !st.Mode().IsRegular() {
		return nil, nil, &PathError{Op: "read", Path: agent, Err: invalid("not a regular file")}
	}
	f, err := l.root.Open(rel)
	if err != nil {
		return nil, nil, opError("read", agent, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, opError("read", agent, err)
	}
	if st.IsDir() {
		f.Close()
		return nil, nil, &PathError{Op: "read", Path: agent, Err: invalid("is a directory")}
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, &PathError{Op: "read", Path: agent, Err: invalid("not a regular file")}
	}
	return f, st, nil
}

// readAll loads a whole file under the read limit.
func (l *LocalFS) readAll(op, p string) ([]byte, fs.FileInfo, string, error) {
	f, st, err := l.OpenRead(p)
	if err != nil {
		return nil, nil, "", err
	}
	defer f.Close()
	_, agent, _ := l.Resolve(p)
	if st.Size() > l.cfg.maxReadBytes {
		return nil, nil, "", &PathError{Op: op, Path: agent, Err: tooLarge(fmt.Sprintf(
			"file is %d bytes, more than the %d-byte limit; read a window of lines instead", st.Size(), l.cfg.maxReadBytes))}
	}
	data, err := io.ReadAll(io.LimitReader(f, l.cfg.maxReadBytes+1))
	if err != nil {
		return nil, nil, "", opError(op, agent, err)
	}
	if int64(len(data)) > l.cfg.maxReadBytes {
		return nil, nil, "", &PathError{Op: op, Path: agent, Err: tooLarge(fmt.Sprintf(
			"file grew past the %d-byte limit while being read", l.cfg.maxReadBytes))}
	}
	return data, st, agent, nil
}

// ReadFile returns a file's content: UTF-8 text as is, other bytes as
// "base64:" and the standard base64 encoding.
func (l *LocalFS) ReadFile(ctx context.Context, p string) (string, error) {
	data, _, _, err := l.readAll("read", p)
	if err != nil {
		return "", err
	}
	return EncodeContent(data), ctx.Err()
}

// EncodeContent is ReadFile's encoding of bytes: UTF-8 text as is, anything
// else as "base64:" and the standard base64 encoding.
func EncodeContent(data []byte) string {
	if utf8.Valid(data) {
		return string(data)
	}
	return Base64Prefix + base64.StdEncoding.EncodeToString(data)
}

// Base64Prefix marks ReadFile content that is base64-encoded bytes.
const Base64Prefix = "base64:"

// ReadLines returns up to limit lines starting at the 0-based line offset;
// limit 0 means DefaultReadLinesLimit. The window's total size is bounded by
// the read limit.
func (l *LocalFS) ReadLines(ctx context.Context, p string, offset, limit int) (*LinesResult, error) {
	if offset < 0 || limit < 0 {
		return nil, invalid(fmt.Sprintf("offset (%d) and limit (%d) must not be negative", offset, limit))
	}
	if limit == 0 {
		limit = DefaultReadLinesLimit
	}
	f, st, err := l.OpenRead(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	_, agent, _ := l.Resolve(p)
	res, err := readLines(bufio.NewReaderSize(f, 64<<10), offset, limit, l.cfg.maxReadBytes)
	if err != nil {
		return nil, opError("read", agent, err)
	}
	res.Size, res.Mode = st.Size(), uint32(st.Mode().Perm())
	return res, ctx.Err()
}

// readLines is ReadLines on a reader; its errors are already precise.
func readLines(r *bufio.Reader, offset, limit int, maxBytes int64) (*LinesResult, error) {
	res := &LinesResult{Offset: offset, Lines: []string{}}
	var total int64
	var line []byte
	for n := 0; ; n++ {
		chunk, err := r.ReadSlice('\n')
		keep := n >= offset
		if keep {
			line = append(line, chunk...)
			total += int64(len(chunk))
			if total > maxBytes {
				return nil, tooLarge(fmt.Sprintf("the lines asked for exceed the %d-byte limit; ask for fewer", maxBytes))
			}
		}
		for errors.Is(err, bufio.ErrBufferFull) {
			chunk, err = r.ReadSlice('\n')
			if keep {
				line = append(line, chunk...)
				total += int64(len(chunk))
				if total > maxBytes {
					return nil, tooLarge(fmt.Sprintf("the lines asked for exceed the %d-byte limit; ask for fewer", maxBytes))
				}
			}
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		if len(chunk) == 0 && err == io.EOF && len(line) == 0 {
			return res, nil
		}
		if keep {
			s := strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r")
			if !utf8.ValidString(s) {
				return nil, invalid(fmt.Sprintf("line %d is not UTF-8 text; read the whole file to get it as base64", n+1))
			}
			res.Lines = append(res.Lines, s)
			line = line[:0]
		}
		if err == io.EOF {
			return res, nil
		}
		if len(res.Lines) == limit {
			_, perr := r.Peek(1)
			res.MoreLines = perr == nil
			return res, nil
		}
	}
}

// FormatNumbered renders a window the way an agent's read tool shows it:
// 1-based line numbers right-aligned to six columns and a tab, then a hint when
// lines remain.
func FormatNumbered(res *LinesResult) string {
	var b strings.Builder
	for i, line := range res.Lines {
		fmt.Fprintf(&b, "%6d\t%s\n", res.Offset+i+1, line)
	}
	if res.MoreLines {
		fmt.Fprintf(&b, "... more lines follow; continue with offset=%d\n", res.Offset+len(res.Lines))
	}
	return b.String()
}

// WriteFile replaces a file atomically, creating parent directories. An
// existing file keeps its mode; a new one gets DefaultFileMode.
func (l *LocalFS) WriteFile(ctx context.Context, p, content string) (*WriteResult, error) {
	if int64(len(content)) > l.cfg.maxWriteBytes {
		return nil, tooLarge(fmt.Sprintf("content is %d bytes, more than the %d-byte write limit; nothing was written", len(content), l.cfg.maxWriteBytes))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w, err := l.CreateAtomic(p, 0)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(w, content); err != nil {
		w.Abort()
		return nil, err
	}
	if err := w.Commit(); err != nil {
		return nil, err
	}
	return &WriteResult{Path: w.agent, BytesWritten: len(content)}, nil
}

// EditFile replaces oldText with newText: exactly one occurrence, or every
// occurrence with ReplaceAll. The file is rewritten atomically.
func (l *LocalFS) EditFile(ctx context.Context, p, oldText, newText string, opts ...EditOption) (*EditResult, error) {
	o := ApplyEdit(opts)
	if oldText == "" {
		return nil, invalid("old_text must not be empty")
	}
	data, _, agent, err := l.readAll("edit", p)
	if err != nil {
		return nil, err
	}
	n := bytes.Count(data, []byte(oldText))
	switch {
	case n == 0:
		return nil, &PathError{Op: "edit", Path: agent, Err: invalid("old_text not found in file")}
	case n > 1 && !o.ReplaceAll:
		return nil, &PathError{Op: "edit", Path: agent, Err: invalid(fmt.Sprintf(
			"old_text occurs %d times in file; include more context to make it unique, or set replace_all", n))}
	}
	updated := bytes.ReplaceAll(data, []byte(oldText), []byte(newText))
	if int64(len(updated)) > l.cfg.maxWriteBytes {
		return nil, &PathError{Op: "edit", Path: agent, Err: tooLarge(fmt.Sprintf(
			"the edited file would be %d bytes, more than the %d-byte write limit; nothing was written", len(updated), l.cfg.maxWriteBytes))}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w, err := l.CreateAtomic(p, 0)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(updated); err != nil {
		w.Abort()
		return nil, err
	}
	if err := w.Commit(); err != nil {
		return nil, err
	}
	return &EditResult{Path: agent, Replacements: n}, nil
}

// AtomicFile is a file being written: its bytes go to a temporary file in the
// target's directory and replace the target only on Commit, so readers never
// see a partial file and a failed write leaves the old content.
type AtomicFile struct {
	l      *LocalFS
	f      *os.File
	tmp    string
	rel    string
	agent  string
	mode   fs.FileMode
	closed bool
}

// CreateAtomic starts an atomic write of p, creating parent directories. mode
// is used for a new file (0 means DefaultFileMode); an existing file keeps its
// own mode. Exactly one of Commit or Abort must follow.
func (l *LocalFS) CreateAtomic(p string, mode fs.FileMode) (*AtomicFile, error) {
	rel, agent, err := l.Resolve(p)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return nil, &PathError{Op: "write", Path: agent, Err: invalid("is a directory")}
	}
	if mode == 0 {
		mode = DefaultFileMode
	}
	mode &= fs.ModePerm
	if st, err := l.root.Lstat(rel); err == nil {
		if st.IsDir() {
			return nil, &PathError{Op: "write", Path: agent, Err: invalid("is a directory")}
		}
		if st.Mode().IsRegular() {
			mode = st.Mode().Perm()
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, opError("write", agent, err)
	}
	dir := path.Dir(rel)
	if err := l.root.MkdirAll(dir, 0o755); err != nil {
		return nil, opError("write", agent, err)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(dir, tmpPrefix+hex.EncodeToString(rnd[:]))
	f, err := l.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, opError("write", agent, err)
	}
	return &AtomicFile{l: l, f: f, tmp: tmp, rel: rel, agent: agent, mode: mode}, nil
}

// Path is the agent-facing path being written.
func (w *AtomicFile) Path() string { return w.agent }

// Write appends to the temporary file.
func (w *AtomicFile) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	if err != nil {
		return n, opError("write", w.agent, err)
	}
	return n, nil
}

// Commit gives the file its mode and renames it over the target.
func (w *AtomicFile) Commit() error {
	if w.closed {
		return errors.New("wickfs: atomic file already finished")
	}
	w.closed = true
	err := w.f.Chmod(w.mode)
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.l.root.Rename(w.tmp, w.rel)
	}
	if err != nil {
		_ = w.l.root.Remove(w.tmp)
		return opError("write", w.agent, err)
	}
	return nil
}

// Abort drops the temporary file; the target is untouched. It is a no-op
// after Commit.
func (w *AtomicFile) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	_ = w.f.Close()
	_ = w.l.root.Remove(w.tmp)
}
