package hooks

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/tools"
	"github.com/wick-agent/wick/wickfs"
)

// Filesystem defaults.
const (
	// DefaultMaxResultChars is the size over which a tool result is evicted,
	// so that one large output does not fill the context window.
	DefaultMaxResultChars = 80_000
	// DefaultEvictKeepChars is how much of an evicted result's head and tail
	// stays in the prompt.
	DefaultEvictKeepChars = 2_000
	// DefaultReadLimit is read_file's default number of lines.
	DefaultReadLimit = 2_000
	// DefaultMaxLineChars cuts very long lines in read_file's output.
	DefaultMaxLineChars = 2_000
	// DefaultWorkdir is the agent-facing workspace, the default of glob and grep.
	DefaultWorkdir = "/workspace"
	// DefaultMaxTrackedFileChars bounds the content kept in state.Files per
	// file: the state is saved after every tool round, so one huge file must
	// not make every save huge. Larger files are dropped from state.Files.
	DefaultMaxTrackedFileChars = 1_000_000
	// DefaultMaxExecTimeout caps the timeout a model may ask execute for; it
	// matches the loop's default per-call timeout.
	DefaultMaxExecTimeout = 10 * time.Minute
)

// Filesystem tool names.
const (
	ToolLs        = "ls"
	ToolReadFile  = "read_file"
	ToolWriteFile = "write_file"
	ToolEditFile  = "edit_file"
	ToolGlob      = "glob"
	ToolGrep      = "grep"
	ToolExecute   = "execute"
)

// evictionExempt are the filesystem tools, whose results are never evicted:
// their output is what the model asked to see, and read_file, grep and glob
// bound it themselves (line window, match and file caps); cutting its middle
// would only make the model ask again.
var evictionExempt = map[string]bool{
	ToolLs: true, ToolGlob: true, ToolGrep: true, ToolReadFile: true, ToolEditFile: true, ToolWriteFile: true,
}

// FilesystemHook registers the seven file tools and evicts oversized results.
type FilesystemHook struct {
	loop.BaseHook
	fs             wickfs.FileSystem
	maxResultChars int
	evictKeepChars int
	readLimit      int
	maxLineChars   int
	workdir        string
	execOpts       []wickfs.ExecOption
	maxTracked     int
	maxExecTimeout time.Duration
}

// FilesystemOption configures a FilesystemHook.
type FilesystemOption func(*FilesystemHook)

// WithMaxResultChars sets the eviction threshold.
func WithMaxResultChars(n int) FilesystemOption {
	return func(h *FilesystemHook) { h.maxResultChars = n }
}

// WithEvictKeepChars sets the head and tail kept on eviction.
func WithEvictKeepChars(n int) FilesystemOption {
	return func(h *FilesystemHook) { h.evictKeepChars = n }
}

// WithReadLimit sets read_file's default number of lines.
func WithReadLimit(n int) FilesystemOption { return func(h *FilesystemHook) { h.readLimit = n } }

// WithMaxLineChars cuts long lines in read_file's output.
func WithMaxLineChars(n int) FilesystemOption { return func(h *FilesystemHook) { h.maxLineChars = n } }

// WithMaxTrackedFileChars bounds the content kept per file in state.Files.
func WithMaxTrackedFileChars(n int) FilesystemOption {
	return func(h *FilesystemHook) { h.maxTracked = n }
}

// WithMaxExecTimeout caps the timeout a model may ask execute for.
func WithMaxExecTimeout(d time.Duration) FilesystemOption {
	return func(h *FilesystemHook) { h.maxExecTimeout = d }
}

// WithWorkdir sets the workspace: the default path of glob and grep, and
// execute's working directory.
func WithWorkdir(dir string) FilesystemOption { return func(h *FilesystemHook) { h.workdir = dir } }

// WithExecTimeout bounds execute's commands.
func WithExecTimeout(d time.Duration) FilesystemOption {
	return func(h *FilesystemHook) { h.execOpts = append(h.execOpts, wickfs.WithTimeout(d)) }
}

// WithExecMaxOutput caps execute's output.
func WithExecMaxOutput(n int64) FilesystemOption {
	return func(h *FilesystemHook) { h.execOpts = append(h.execOpts, wickfs.WithMaxOutput(n)) }
}

// NewFilesystemHook returns the filesystem hook over fs.
func NewFilesystemHook(fs wickfs.FileSystem, opts ...FilesystemOption) *FilesystemHook {
	h := &FilesystemHook{
		fs:             fs,
		maxResultChars: DefaultMaxResultChars,
		evictKeepChars: DefaultEvictKeepChars,
		readLimit:      DefaultReadLimit,
		maxLineChars:   DefaultMaxLineChars,
		workdir:        DefaultWorkdir,
		maxTracked:     DefaultMaxTrackedFileChars,
		maxExecTimeout: DefaultMaxExecTimeout,
	}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Name implements loop.Hook.
func (h *FilesystemHook) Name() string { return NameFilesystem }

// Phases implements loop.Hook.
func (h *FilesystemHook) Phases() []string { return phasesOf(NameFilesystem) }

func schema(required []string, props map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": props, "required": required}
}

func prop(typ, desc string) map[string]any { return map[string]any{"type": typ, "description": desc} }

// BeforeAgent registers ls, read_file, write_file, edit_file, glob, grep and
// execute on the state.
func (h *FilesystemHook) BeforeAgent(_ context.Context, state *loop.AgentState) error {
	for _, t := range h.tools(state) {
		loop.RegisterToolOnState(state, t)
	}
	return nil
}

func (h *FilesystemHook) tools(state *loop.AgentState) []loop.Tool {
	return []loop.Tool{
		&loop.FuncTool{
			ToolName:   ToolLs,
			ToolDesc:   "List files and directories at the given path",
			ToolParams: schema([]string{"path"}, map[string]any{"path": prop("string", "Directory path to list")}),
			Fn: func(ctx context.Context, args map[string]any) (string, error) {
				path, err := stringArg(args, "path", true)
				if err != nil {
					return "", err
				}
				entries, err := h.fs.Ls(ctx, path)
				if err != nil {
					return "", err
				}
				if entries == nil {
					entries = []wickfs.DirEntry{}
				}
				return toJSON(entries)
			},
		},
		&loop.FuncTool{
			ToolName: ToolReadFile,
			ToolDesc: "Read a text file. Lines are numbered from 1. By default reads up to " + strconv.Itoa(h.readLimit) +
				" lines from the start; use offset (lines to skip) and limit to page through longer files.",
			ToolParams: schema([]string{"path"}, map[string]any{
				"path":   prop("string", "File path to read"),
				"offset": prop("integer", "Number of lines to skip before reading (0 = from the first line)"),
				"limit":  prop("integer", "Maximum number of lines to read"),
			}),
			Fn: h.readFile,
		},
		&loop.FuncTool{
			ToolName: ToolWriteFile,
			ToolDesc: "Write a file, replacing it if it exists; parent directories are created",
			ToolParams: schema([]string{"path", "content"}, map[string]any{
				"path":    prop("string", "File path to write"),
				"content": prop("string", "The complete file content"),
			}),
			Fn: func(ctx context.Context, args map[string]any) (string, error) {
				path, err := stringArg(args, "path", true)
				if err != nil {
					return "", err
				}
				content, err := stringArg(args, "content", false)
				if err != nil {
					return "", err
				}
				res, err := h.fs.WriteFile(ctx, path, content)
				if err != nil {
					return "", err
				}
				loop.MutateState(ctx, state, func(s *loop.AgentState) { h.trackFile(s, path, content) })
				return toJSON(res)
			},
		},
		&loop.FuncTool{
			ToolName: ToolEditFile,
			ToolDesc: "Replace old_text with new_text in a file. old_text must match exactly and occur once, " +
				"unless replace_all is true, which replaces every occurrence.",
			ToolParams: schema([]string{"path", "old_text", "new_text"}, map[string]any{
				"path":        prop("string", "File path to edit"),
				"old_text":    prop("string", "Exact text to replace"),
				"new_text":    prop("string", "Replacement text"),
				"replace_all": prop("boolean", "Replace every occurrence instead of exactly one"),
			}),
			Fn: func(ctx context.Context, args map[string]any) (string, error) {
				return h.editFile(ctx, state, args)
			},
		},
		&loop.FuncTool{
			ToolName: ToolGlob,
			ToolDesc: "Find files by name pattern (e.g. \"*.py\") or by path pattern with \"**\" (e.g. \"src/**/*.go\")",
			ToolParams: schema([]string{"pattern"}, map[string]any{
				"pattern": prop("string", "Glob pattern"),
				"path":    prop("string", "Directory to search, default "+h.workdir),
			}),
			Fn: func(ctx context.Context, args map[string]any) (string, error) {
				pattern, path, err := h.patternAndPath(args)
				if err != nil {
					return "", err
				}
				res, err := h.fs.Glob(ctx, pattern, path)
				if err != nil {
					return "", err
				}
				return toJSON(res)
			},
		},
		&loop.FuncTool{
			ToolName: ToolGrep,
			ToolDesc: "Search file contents line by line with a regular expression (RE2 syntax)",
			ToolParams: schema([]string{"pattern"}, map[string]any{
				"pattern": prop("string", "Regular expression"),
				"path":    prop("string", "File or directory to search, default "+h.workdir),
			}),
			Fn: func(ctx context.Context, args map[string]any) (string, error) {
				pattern, path, err := h.patternAndPath(args)
				if err != nil {
					return "", err
				}
				res, err := h.fs.Grep(ctx, pattern, path)
				if err != nil {
					return "", err
				}
				return toJSON(res)
			},
		},
		&loop.FuncTool{
			ToolName: ToolExecute,
			ToolDesc: "Run a shell command (sh -c) in the workspace and return its output and exit code",
			ToolParams: schema([]string{"command"}, map[string]any{
				"command": prop("string", "Shell command"),
				"timeout": prop("integer", "Timeout in seconds (optional, at most "+strconv.Itoa(int(h.maxExecTimeout/time.Second))+")"),
			}),
			Fn: h.execute,
		},
	}
}

func (h *FilesystemHook) patternAndPath(args map[string]any) (string, string, error) {
	pattern, err := stringArg(args, "pattern", true)
	if err != nil {
		return "", "", err
	}
	path, err := stringArg(args, "path", false)
	if err != nil {
		return "", "", err
	}
	if path == "" {
		path = h.workdir
	}
	return pattern, path, nil
}

// readFile returns numbered lines (cat -n style, from 1) and says how to go
// on when lines remain.
func (h *FilesystemHook) readFile(ctx context.Context, args map[string]any) (string, error) {
	path, err := stringArg(args, "path", true)
	if err != nil {
		return "", err
	}
	offset, err := intArg(args, "offset", 0)
	if err != nil {
		return "", err
	}
	limit, err := intArg(args, "limit", h.readLimit)
	if err != nil {
		return "", err
	}
	if limit == 0 {
		limit = h.readLimit
	}
	res, err := h.fs.ReadLines(ctx, path, offset, limit)
	if err != nil {
		return "", err
	}
	if len(res.Lines) == 0 {
		if offset > 0 {
			return "", fmt.Errorf("offset %d is past the end of the file", offset)
		}
		return "System reminder: the file exists but is empty.", nil
	}
	var b strings.Builder
	for i, line := range res.Lines {
		if h.maxLineChars > 0 && len(line) > h.maxLineChars {
			line = prefix(line, h.maxLineChars) + "… (line cut)"
		}
		fmt.Fprintf(&b, "%6d\t%s\n", res.Offset+i+1, line)
	}
	if res.MoreLines {
		next := res.Offset + len(res.Lines)
		fmt.Fprintf(&b, "\n... (more lines remain; call read_file with offset=%d to continue)\n", next)
	}
	return b.String(), nil
}

func (h *FilesystemHook) editFile(ctx context.Context, state *loop.AgentState, args map[string]any) (string, error) {
	path, err := stringArg(args, "path", true)
	if err != nil {
		return "", err
	}
	oldText, err := stringArg(args, "old_text", true)
	if err != nil {
		return "", err
	}
	newText, err := stringArg(args, "new_text", false)
	if err != nil {
		return "", err
	}
	all, err := boolArg(args, "replace_all")
	if err != nil {
		return "", err
	}
	var opts []wickfs.EditOption
	if all {
		opts = append(opts, wickfs.ReplaceAll())
	}
	res, err := h.fs.EditFile(ctx, path, oldText, newText, opts...)
	if err != nil {
		return "", err
	}
	// Track the file as it now is; when it cannot be read back, apply the
	// edit to the copy already tracked.
	content, readErr := h.fs.ReadFile(ctx, path)
	loop.MutateState(ctx, state, func(s *loop.AgentState) {
		if readErr == nil {
			h.trackFile(s, path, content)
		} else if prev, ok := s.Files[path]; ok {
			n := 1
			if all {
				n = -1
			}
			h.trackFile(s, path, strings.Replace(prev, oldText, newText, n))
		}
	})
	return toJSON(res)
}

func (h *FilesystemHook) trackFile(s *loop.AgentState, path, content string) {
	if h.maxTracked > 0 && len(content) > h.maxTracked {
		delete(s.Files, path) // a stale copy would be worse than none
		return
	}
	if s.Files == nil {
		s.Files = map[string]string{}
	}
	s.Files[path] = content
}

// execute runs a command; a non-zero exit is a result the model reads, not
// a tool error.
func (h *FilesystemHook) execute(ctx context.Context, args map[string]any) (string, error) {
	command, err := stringArg(args, "command", true)
	if err != nil {
		return "", err
	}
	secs, err := intArg(args, "timeout", 0)
	if err != nil {
		return "", err
	}
	opts := append([]wickfs.ExecOption{wickfs.WithWorkdir(h.workdir)}, h.execOpts...)
	if secs > 0 {
		d := time.Duration(secs) * time.Second
		if h.maxExecTimeout > 0 && d > h.maxExecTimeout {
			d = h.maxExecTimeout
		}
		opts = append(opts, wickfs.WithTimeout(d))
	}
	res, err := h.fs.Exec(ctx, command, opts...)
	if err != nil {
		return "", err
	}
	return FormatExec(res), nil
}

// FormatExec renders a command's result for the model.
func FormatExec(res *wickfs.ExecResult) string {
	var b strings.Builder
	b.WriteString(res.Stdout)
	if res.Stderr != "" {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
		b.WriteString("[stderr]\n")
		b.WriteString(res.Stderr)
	}
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "[exit code %d]", res.ExitCode)
	if res.TimedOut {
		b.WriteString(" (timed out)")
	}
	if res.Truncated {
		b.WriteString(" (output truncated)")
	}
	return b.String()
}

// WrapToolCall evicts results over the threshold to their head and tail,
// except for the filesystem tools (evictionExempt).
func (h *FilesystemHook) WrapToolCall(ctx context.Context, call llm.ToolCall, next loop.ToolCallFunc) (*loop.ToolResult, error) {
	res, err := next(ctx, call)
	if err != nil || res == nil || evictionExempt[call.Name] {
		return res, err
	}
	res.Output = tools.Evict(res.Output, h.maxResultChars, h.evictKeepChars)
	return res, nil
}

// cutNote tells the model why an old tool result lost its middle and how to
// get it back.
const cutNote = "cut %d characters to keep this thread under its size bound; call the tool again if you need them"

// CutToolResults cuts tool results of msgs, oldest first, to their first and
// last keep characters around a note, until at least need bytes are freed
// or none is left to cut, and returns the bytes freed. Unlike the eviction
// of WrapToolCall it spares no tool: it keeps a thread under its byte bound
// when read_file outputs, which are never evicted, pile up.
func CutToolResults(msgs []llm.Message, need int64, keep int) int64 {
	var freed int64
	for i := range msgs {
		if freed >= need {
			break
		}
		m := &msgs[i]
		if m.Role != llm.RoleTool {
			continue
		}
		cut := tools.EvictWithNote(m.Content, 2*keep+len(cutNote)+16, keep, cutNote)
		if len(cut) < len(m.Content) {
			freed += int64(len(m.Content) - len(cut))
			m.Content = cut
		}
	}
	return freed
}
