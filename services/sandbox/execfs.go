package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
	"github.com/wick-agent/wick/wickfs"
)

// fallbackExecGrace bounds a `wickfs exec` call beyond the command's own
// timeout, which the CLI enforces: it only covers a wedged engine.
const fallbackExecGrace = 30 * time.Second

// execFS is the Docker-exec fallback: files through the wickfs CLI run with
// docker exec (wickfs.RemoteFS), commands that take stdin and terminals
// through dockerbox's exec streams. A file moves whole through one exec's
// output or input, so it is bounded by maxBytes (Config.FallbackMaxBytes).
type execFS struct {
	*wickfs.RemoteFS
	v        view
	maxBytes int64
}

// execFS builds the fallback file system of a sandbox.
func (s *Service) execFS(v view) *execFS {
	wd := v.set.Params.Workdir
	x := &dockerbox.Executor{
		Engine: v.engine, Container: v.containerID, User: v.cuser.Name, Workdir: wd,
		Env: []string{"WICKFS_ROOT=" + wd, "WICKFS_PREFIX=" + wd},
		// Replies are JSON with base64 for binary files: room for the encoding.
		MaxOutput: s.cfg.FallbackMaxBytes*4/3 + 64<<10,
	}
	fs := wickfs.NewRemoteFS(x, wickfs.WithBinary(path.Join(dockerbox.BinDir, dockerbox.WickfsBinary)))
	return &execFS{RemoteFS: fs, v: v, maxBytes: s.cfg.FallbackMaxBytes}
}

// GrepN caps the CLI's result, which has no cap of its own beyond the default.
func (e *execFS) GrepN(ctx context.Context, pattern, p string, max int) (*wickfs.GrepResult, error) {
	r, err := e.Grep(ctx, pattern, p)
	if err != nil {
		return nil, err
	}
	if max > 0 && len(r.Matches) > max {
		r.Matches, r.Truncated = r.Matches[:max], true
	}
	return r, nil
}

// GlobN caps the CLI's result, which has no cap of its own beyond the default.
func (e *execFS) GlobN(ctx context.Context, pattern, p string, max int) (*wickfs.GlobResult, error) {
	r, err := e.Glob(ctx, pattern, p)
	if err != nil {
		return nil, err
	}
	if max > 0 && len(r.Files) > max {
		r.Files, r.Truncated = r.Files[:max], true
	}
	return r, nil
}

// OpenFile reads the whole file through the CLI; its mode is not known.
func (e *execFS) OpenFile(ctx context.Context, p string) (*wickfs.FileReader, error) {
	content, err := e.ReadFile(ctx, p)
	if err != nil {
		return nil, err
	}
	data, err := wickfs.DecodeContent(content)
	if err != nil {
		return nil, fmt.Errorf("wickfs read %s: %w", p, err)
	}
	return &wickfs.FileReader{ReadCloser: io.NopCloser(bytes.NewReader(data)), Size: int64(len(data))}, nil
}

// Upload gathers r, up to maxBytes, and writes it through the CLI; the CLI
// keeps an existing file's mode and gives a new one the default.
func (e *execFS) Upload(ctx context.Context, p string, _ fs.FileMode, r io.Reader) (*wickfs.WriteResult, error) {
	data, err := io.ReadAll(io.LimitReader(r, e.maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > e.maxBytes {
		return nil, wickfs.NewError(wickfs.ErrTooLarge, fmt.Sprintf(
			"file is more than the %d bytes the Docker-exec fallback can move; retry when the daemon is back", e.maxBytes))
	}
	return e.WriteFile(ctx, p, string(data))
}

// ExecStream runs the command through `wickfs exec`, which enforces timeout
// and output cap inside the container and answers with the whole output, or,
// when the call carries stdin (which the CLI does not pass on), as `sh -c`
// with the output streamed.
func (e *execFS) ExecStream(ctx context.Context, command string, stdout, stderr io.Writer, opts ...wickfs.ExecOption) (*wickfs.ExitStatus, error) {
	o := wickfs.ApplyExec(opts)
	start := time.Now()
	if len(o.Stdin) == 0 {
		cctx, cancel := context.WithTimeout(ctx, o.Timeout+fallbackExecGrace)
		defer cancel()
		res, err := e.Exec(cctx, command, opts...)
		if err != nil {
			return nil, err
		}
		for _, out := range []struct {
			w    io.Writer
			text string
		}{{stdout, res.Stdout}, {stderr, res.Stderr}} {
			if out.text == "" {
				continue
			}
			if _, err := io.WriteString(out.w, out.text); err != nil {
				return nil, err
			}
		}
		return &wickfs.ExitStatus{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Truncated: res.Truncated, Duration: time.Since(start)}, nil
	}
	v := e.v
	dir, err := containerDir(v.set.Params.Workdir, o.Workdir)
	if err != nil {
		return nil, err
	}
	env := make([]string, 0, len(o.Env))
	for k, val := range o.Env {
		env = append(env, k+"="+val)
	}
	sort.Strings(env)
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	code, truncated, err := dockerbox.Stream(cctx, v.engine, v.containerID, dockerbox.RunOptions{
		User: v.cuser.Name, Cmd: []string{"sh", "-c", command}, Env: env, WorkingDir: dir,
		Stdin: bytes.NewReader(o.Stdin), MaxOutput: o.MaxOutputBytes, KillOnCancel: v.set.DockerHost == "",
	}, stdout, stderr)
	timedOut := errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
	if err != nil && !timedOut {
		return nil, err
	}
	return &wickfs.ExitStatus{ExitCode: code, TimedOut: timedOut, Truncated: truncated, Duration: time.Since(start)}, nil
}

// containerDir maps an agent-facing working directory to the container,
// refusing one outside the workspace.
func containerDir(workdir, dir string) (string, error) {
	if dir == "" {
		return workdir, nil
	}
	if !path.IsAbs(dir) {
		dir = path.Join(workdir, dir)
	}
	dir = path.Clean(dir)
	if dir != workdir && !strings.HasPrefix(dir, workdir+"/") {
		return "", fmt.Errorf("%w: workdir %q is outside the workspace", errInvalid, dir)
	}
	return dir, nil
}

// Terminal is docker exec with a TTY.
func (e *execFS) Terminal(ctx context.Context, o wickfs.TerminalOptions, recv func() (wickfs.TerminalInput, error), send func([]byte) error) (*wickfs.ExitStatus, error) {
	v := e.v
	cmd := []string{"sh"}
	if o.Command != "" {
		cmd = []string{"sh", "-c", o.Command}
	}
	start := time.Now()
	tty, err := dockerbox.OpenTTY(ctx, v.engine, v.containerID, dockerbox.RunOptions{
		User: v.cuser.Name, Cmd: cmd, Env: []string{"TERM=" + wickfs.DefaultTerm}, WorkingDir: v.set.Params.Workdir,
	}, uint(o.Rows), uint(o.Cols))
	if err != nil {
		return nil, err
	}
	defer tty.Close()
	go func() {
		for {
			in, err := recv()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					tty.Close()
				}
				return
			}
			if in.Resize {
				_ = tty.Resize(ctx, uint(in.Rows), uint(in.Cols))
			} else if _, err := tty.Write(in.Data); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := tty.Read(buf)
		if n > 0 {
			if serr := send(buf[:n]); serr != nil {
				return nil, serr
			}
		}
		if err != nil {
			break
		}
	}
	code, err := tty.ExitCode(ctx)
	if err != nil {
		return nil, err
	}
	return &wickfs.ExitStatus{ExitCode: code, Duration: time.Since(start)}, nil
}
