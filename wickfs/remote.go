package wickfs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Executor abstracts command execution on a remote target (e.g. docker exec):
// it runs a shell command line and returns its stdout and exit code.
type Executor interface {
	Run(ctx context.Context, command string) (stdout string, exitCode int, err error)
	RunWithStdin(ctx context.Context, command, stdin string) (stdout string, exitCode int, err error)
}

// Response is the JSON envelope every wickfs CLI command prints on stdout:
// {"ok":true,"data":…} or {"ok":false,"error":"…"}.
type Response struct {
	OK    bool            `json:"ok"`
	Data  json.RawMessage `json:"data,omitempty"`
	Error string          `json:"error,omitempty"`
	// Kind classifies a failure ("not_found", "outside_workspace",
	// "permission", "invalid_argument", "too_large") so a client can rebuild
	// the error's sentinel; empty for other failures.
	Kind string `json:"kind,omitempty"`
}

// WickfsResponse is Response.
//
// Deprecated: use Response.
type WickfsResponse = Response

// EditInput is the JSON the edit command reads on stdin.
type EditInput struct {
	OldText    string `json:"old_text"`
	NewText    string `json:"new_text"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

// Error kinds of the envelope, one per sentinel.
var kinds = []struct {
	name string
	err  error
}{
	{"not_found", ErrNotFound},
	{"outside_workspace", ErrOutsideWorkspace},
	{"permission", ErrPermission},
	{"invalid_argument", ErrInvalidArgument},
	{"too_large", ErrTooLarge},
}

// ErrorKind names the sentinel err wraps, for the envelope.
func ErrorKind(err error) string {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return ""
}

// Err turns a failed response into an error that matches its kind's sentinel.
func (r Response) Err() error {
	if r.OK {
		return nil
	}
	msg := r.Error
	if msg == "" {
		msg = "wickfs failed without a message"
	}
	for _, k := range kinds {
		if k.name == r.Kind {
			return NewError(k.err, msg)
		}
	}
	return errors.New(msg)
}

// ErrNoResponse: the output held no wickfs envelope (the CLI is missing, or
// crashed before answering).
var ErrNoResponse = errors.New("no wickfs response in output")

// ParseResponse finds the envelope in a command's output. The whole output is
// tried first; otherwise each line that starts with '{' is tried in turn, so
// noise that a shell, a login profile or docker prints around the JSON is
// ignored.
func ParseResponse(output string) (Response, error) {
	var r Response
	trimmed := strings.TrimSpace(output)
	if strings.HasPrefix(trimmed, "{") && decodeEnvelope([]byte(trimmed), &r) {
		return r, nil
	}
	rest := output
	for len(rest) > 0 {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "{") && decodeEnvelope([]byte(line), &r) {
			return r, nil
		}
	}
	return Response{}, fmt.Errorf("%w: %q", ErrNoResponse, snippet(output))
}

// ParseWickfsResponse is ParseResponse.
//
// Deprecated: use ParseResponse.
func ParseWickfsResponse(output string) (Response, error) { return ParseResponse(output) }

// decodeEnvelope accepts one JSON object that has an "ok" field; trailing
// bytes after the object are noise.
func decodeEnvelope(b []byte, r *Response) bool {
	var probe struct {
		OK *bool `json:"ok"`
		Response
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&probe); err != nil || probe.OK == nil {
		return false
	}
	*r = probe.Response
	r.OK = *probe.OK
	return true
}

func snippet(s string) string {
	const n = 200
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// ShellQuote quotes s as one POSIX shell word with single quotes.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// RemoteFS is a FileSystem that runs the wickfs CLI through an Executor and
// parses its JSON envelope: the fallback when no daemon answers in a
// container.
type RemoteFS struct {
	exec Executor
	bin  string
}

var _ FileSystem = (*RemoteFS)(nil)

// RemoteOption configures a RemoteFS.
type RemoteOption func(*RemoteFS)

// WithBinary sets the wickfs command name or path on the target (default "wickfs").
func WithBinary(bin string) RemoteOption { return func(r *RemoteFS) { r.bin = bin } }

// NewRemoteFS returns a RemoteFS that runs commands with exec.
func NewRemoteFS(exec Executor, opts ...RemoteOption) *RemoteFS {
	r := &RemoteFS{exec: exec, bin: "wickfs"}
	for _, o := range opts {
		o(r)
	}
	return r
}

// cmdline builds `wickfs <args…>` with every argument quoted.
func (r *RemoteFS) cmdline(args ...string) string {
	var b strings.Builder
	b.WriteString(ShellQuote(r.bin))
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(ShellQuote(a))
	}
	return b.String()
}

// call runs one CLI command and decodes its data into out.
func (r *RemoteFS) call(ctx context.Context, stdin *string, out any, args ...string) error {
	cmd := r.cmdline(args...)
	var (
		stdout string
		code   int
		err    error
	)
	if stdin != nil {
		stdout, code, err = r.exec.RunWithStdin(ctx, cmd, *stdin)
	} else {
		stdout, code, err = r.exec.Run(ctx, cmd)
	}
	if err != nil {
		return fmt.Errorf("wickfs %s: %w", args[0], err)
	}
	resp, perr := ParseResponse(stdout)
	if perr != nil {
		return fmt.Errorf("wickfs %s (exit %d): %w", args[0], code, perr)
	}
	if !resp.OK {
		return resp.Err()
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(resp.Data, out); err != nil {
		return fmt.Errorf("wickfs %s: decode data: %w", args[0], err)
	}
	return nil
}

// Ls lists a directory.
func (r *RemoteFS) Ls(ctx context.Context, path string) ([]DirEntry, error) {
	var out []DirEntry
	if err := r.call(ctx, nil, &out, "ls", path); err != nil {
		return nil, err
	}
	if out == nil {
		out = []DirEntry{}
	}
	return out, nil
}

// ReadFile reads a whole file.
func (r *RemoteFS) ReadFile(ctx context.Context, path string) (string, error) {
	var out string
	err := r.call(ctx, nil, &out, "read", path)
	return out, err
}

// ReadLines reads a window of lines.
func (r *RemoteFS) ReadLines(ctx context.Context, path string, offset, limit int) (*LinesResult, error) {
	var out LinesResult
	err := r.call(ctx, nil, &out, "read", "-offset", strconv.Itoa(offset), "-limit", strconv.Itoa(limit), "--", path)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// WriteFile writes content (sent on stdin).
func (r *RemoteFS) WriteFile(ctx context.Context, path, content string) (*WriteResult, error) {
	var out WriteResult
	if err := r.call(ctx, &content, &out, "write", path); err != nil {
		return nil, err
	}
	return &out, nil
}

// EditFile edits a file (old and new text sent as JSON on stdin).
func (r *RemoteFS) EditFile(ctx context.Context, path, oldText, newText string, opts ...EditOption) (*EditResult, error) {
	o := ApplyEdit(opts)
	in, err := json.Marshal(EditInput{OldText: oldText, NewText: newText, ReplaceAll: o.ReplaceAll})
	if err != nil {
		return nil, err
	}
	stdin := string(in)
	var out EditResult
	if err := r.call(ctx, &stdin, &out, "edit", path); err != nil {
		return nil, err
	}
	return &out, nil
}

// Grep searches file contents.
func (r *RemoteFS) Grep(ctx context.Context, pattern, path string) (*GrepResult, error) {
	var out GrepResult
	if err := r.call(ctx, nil, &out, "grep", "--", pattern, path); err != nil {
		return nil, err
	}
	return &out, nil
}

// Glob finds files by pattern.
func (r *RemoteFS) Glob(ctx context.Context, pattern, path string) (*GlobResult, error) {
	var out GlobResult
	if err := r.call(ctx, nil, &out, "glob", "--", pattern, path); err != nil {
		return nil, err
	}
	return &out, nil
}

// Exec runs a command through the CLI's exec, which applies the options.
func (r *RemoteFS) Exec(ctx context.Context, command string, opts ...ExecOption) (*ExecResult, error) {
	o := ApplyExec(opts)
	args := []string{"exec"}
	if o.Timeout > 0 {
		args = append(args, "-timeout", o.Timeout.String())
	}
	if o.MaxOutputBytes > 0 {
		args = append(args, "-max-output", strconv.FormatInt(o.MaxOutputBytes, 10))
	}
	if o.Workdir != "" {
		args = append(args, "-workdir", o.Workdir)
	}
	keys := make([]string, 0, len(o.Env))
	for k := range o.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, "-env", k+"="+o.Env[k])
	}
	args = append(args, "--", command)
	var out ExecResult
	if err := r.call(ctx, nil, &out, args...); err != nil {
		return nil, err
	}
	return &out, nil
}
