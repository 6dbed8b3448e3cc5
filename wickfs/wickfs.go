// Package wickfs is the filesystem and command layer agents use: one
// FileSystem interface whether the workspace is a local directory (LocalFS),
// a container reached through wick-daemon, or a container reached through
// `docker exec wickfs …` (RemoteFS over an Executor).
//
// Paths are agent-facing ("/workspace/app.py"); each implementation maps them
// onto its root and refuses paths that escape it.
package wickfs

import (
	"context"
	"time"
)

// Limits and defaults; each is configurable where it is used.
const (
	// MaxGrepMatches is the default cap on Grep matches.
	MaxGrepMatches = 200
	// MaxGlobFiles is the default cap on Glob results.
	MaxGlobFiles = 100
	// MaxResults is the ceiling on the Grep or Glob cap a caller may ask for.
	MaxResults = 10_000
	// MaxNameBytes bounds one element of a path: the longest name Linux
	// file systems (ext4, xfs, tmpfs, overlayfs) store.
	MaxNameBytes = 255
	// MaxPathBytes bounds a whole agent-facing path, as Linux's PATH_MAX
	// bounds a path handed to the kernel.
	MaxPathBytes = 4096
)

// FileSystem is the interface for workspace filesystem operations. Options
// add line windows, replace-all and exec limits without changing the plain
// calls.
type FileSystem interface {
	// Ls lists one directory, sorted by name.
	Ls(ctx context.Context, path string) ([]DirEntry, error)
	// ReadFile returns a file's content: UTF-8 text as is, other bytes as
	// "base64:" and the standard base64 encoding.
	ReadFile(ctx context.Context, path string) (string, error)
	// ReadLines returns a window of a text file's lines, for files too large to
	// read whole.
	ReadLines(ctx context.Context, path string, offset, limit int) (*LinesResult, error)
	// WriteFile replaces a file atomically, creating parent directories.
	WriteFile(ctx context.Context, path, content string) (*WriteResult, error)
	// EditFile replaces oldText with newText. Without ReplaceAll, oldText must
	// occur exactly once.
	EditFile(ctx context.Context, path, oldText, newText string, opts ...EditOption) (*EditResult, error)
	// Grep searches files under path line by line with an RE2 pattern.
	Grep(ctx context.Context, pattern, path string) (*GrepResult, error)
	// Glob finds files under path by name pattern, or by path pattern with "**".
	Glob(ctx context.Context, pattern, path string) (*GlobResult, error)
	// Exec runs `sh -c command` and returns its output and exit code. A
	// non-zero exit is a result, not an error.
	Exec(ctx context.Context, command string, opts ...ExecOption) (*ExecResult, error)
}

// DirEntry is one entry of a directory listing.
type DirEntry struct {
	Name string `json:"name"`
	Type string `json:"type"` // "file", "dir", or "symlink"
	Size int64  `json:"size"`
}

// LinesResult is a window of a file's lines.
type LinesResult struct {
	// Lines are the lines of the window, without their line endings.
	Lines []string `json:"lines"`
	// Offset is the 0-based index of the first line returned.
	Offset int `json:"offset"`
	// MoreLines is true when lines remain after the window.
	MoreLines bool `json:"more_lines"`
	// Size is the whole file's size in bytes, so a caller can tell how much
	// of it the window covers.
	Size int64 `json:"size,omitempty"`
	// Mode is the file's permission bits; 0 when the file system cannot tell.
	Mode uint32 `json:"mode,omitempty"`
}

// WriteResult reports a write.
type WriteResult struct {
	Path         string `json:"path"`
	BytesWritten int    `json:"bytes_written"`
}

// EditResult reports an edit.
type EditResult struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
}

// GrepMatch is one matching line.
type GrepMatch struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// GrepResult lists matching lines.
type GrepResult struct {
	Matches   []GrepMatch `json:"matches"`
	Truncated bool        `json:"truncated"`
}

// GlobResult lists matching files.
type GlobResult struct {
	Files     []string `json:"files"`
	Truncated bool     `json:"truncated"`
}

// ExecResult is a finished command.
type ExecResult struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
	// TimedOut is true when the command was killed at its timeout.
	TimedOut bool `json:"timed_out,omitempty"`
	// Truncated is true when output past the cap was dropped.
	Truncated bool `json:"truncated,omitempty"`
}

// EditOptions are the options of EditFile.
type EditOptions struct {
	// ReplaceAll replaces every occurrence instead of requiring exactly one.
	ReplaceAll bool
}

// EditOption sets an EditOptions field.
type EditOption func(*EditOptions)

// ReplaceAll makes EditFile replace every occurrence.
func ReplaceAll() EditOption { return func(o *EditOptions) { o.ReplaceAll = true } }

// ExecOptions are the options of Exec. Zero values take the implementation's defaults.
type ExecOptions struct {
	Timeout        time.Duration
	MaxOutputBytes int64
	Workdir        string
	Env            map[string]string
	// Stdin is written to the command's standard input, which is then closed.
	Stdin []byte
}

// ExecOption sets an ExecOptions field.
type ExecOption func(*ExecOptions)

// WithTimeout bounds the command's run time.
func WithTimeout(d time.Duration) ExecOption { return func(o *ExecOptions) { o.Timeout = d } }

// WithMaxOutput caps stdout plus stderr.
func WithMaxOutput(n int64) ExecOption { return func(o *ExecOptions) { o.MaxOutputBytes = n } }

// WithWorkdir sets the agent-facing working directory.
func WithWorkdir(dir string) ExecOption { return func(o *ExecOptions) { o.Workdir = dir } }

// WithEnv adds environment variables.
func WithEnv(env map[string]string) ExecOption { return func(o *ExecOptions) { o.Env = env } }

// ApplyEdit folds opts into EditOptions.
func ApplyEdit(opts []EditOption) EditOptions {
	var o EditOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// ApplyExec folds opts into ExecOptions.
func ApplyExec(opts []ExecOption) ExecOptions {
	var o ExecOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}
