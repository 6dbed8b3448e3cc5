package dockerbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
)

// RunOptions describe one docker exec.
type RunOptions struct {
	User       string
	Privileged bool
	Cmd        []string
	Env        []string
	WorkingDir string
	// Stdin, when set, is copied to the command's standard input, which is then closed.
	Stdin io.Reader
	// MaxOutput caps stdout plus stderr; the rest is read and dropped.
	MaxOutput int64
	// KillOnCancel kills the exec'd process by its host pid when ctx ends
	// first. Only meaningful when the engine runs on this host.
	KillOnCancel bool
}

// RunResult is a finished exec with collected output.
type RunResult struct {
	Stdout, Stderr []byte
	ExitCode       int
	Truncated      bool
}

// exitPollInterval paces the wait for Docker to record an exec's exit code
// after its output closed; Docker offers no event for it.
const exitPollInterval = 2 * time.Millisecond

// Run runs a command and collects its output.
func Run(ctx context.Context, e Engine, id string, o RunOptions) (RunResult, error) {
	var out, errb bytes.Buffer
	code, truncated, err := Stream(ctx, e, id, o, &out, &errb)
	return RunResult{Stdout: out.Bytes(), Stderr: errb.Bytes(), ExitCode: code, Truncated: truncated}, err
}

// Stream runs a command, writing its output to stdout and stderr as it
// arrives (capped by o.MaxOutput), and returns its exit code.
func Stream(ctx context.Context, e Engine, id string, o RunOptions, stdout, stderr io.Writer) (code int, truncated bool, err error) {
	ex, err := e.ContainerExecCreate(ctx, id, container.ExecOptions{
		User: o.User, Privileged: o.Privileged, Cmd: o.Cmd, Env: o.Env, WorkingDir: o.WorkingDir,
		AttachStdout: true, AttachStderr: true, AttachStdin: o.Stdin != nil,
	})
	if err != nil {
		return -1, false, execCreateErr(err)
	}
	hr, err := e.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return -1, false, fmt.Errorf("docker exec attach: %w", err)
	}
	defer hr.Close()
	if o.Stdin != nil {
		go func() {
			_, _ = io.Copy(hr.Conn, o.Stdin)
			_ = hr.CloseWrite()
		}()
	}
	limit := &capped{left: o.MaxOutput, unlimited: o.MaxOutput <= 0}
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(limit.writer(stdout), limit.writer(stderr), hr.Reader)
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		if o.KillOnCancel {
			killExec(e, ex.ID)
		}
		hr.Close()
		<-done
		return -1, limit.truncated(), ctx.Err()
	}
	if err != nil {
		return -1, limit.truncated(), fmt.Errorf("docker exec output: %w", err)
	}
	code, err = ExitCode(ctx, e, ex.ID)
	return code, limit.truncated(), err
}

// ErrNotRunning is returned when a container cannot take a docker exec
// because it stopped or is gone.
var ErrNotRunning = errcode.New(codes.Unavailable, "sandbox container is not running")

func execCreateErr(err error) error {
	if cerrdefs.IsConflict(err) || IsNotFound(err) {
		return fmt.Errorf("%w: %v", ErrNotRunning, err)
	}
	return fmt.Errorf("docker exec create: %w", err)
}

// ExitCode waits for Docker to record the exec's exit and returns its code.
func ExitCode(ctx context.Context, e Engine, execID string) (int, error) {
	for {
		in, err := e.ContainerExecInspect(ctx, execID)
		if err != nil {
			return -1, fmt.Errorf("docker exec inspect: %w", err)
		}
		if !in.Running {
			return in.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(exitPollInterval):
		}
	}
}

func killExec(e Engine, execID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if in, err := e.ContainerExecInspect(ctx, execID); err == nil && in.Running && in.Pid > 0 {
		_ = syscall.Kill(in.Pid, syscall.SIGKILL)
	}
}

// capped shares one output budget between stdout and stderr.
type capped struct {
	mu        sync.Mutex
	left      int64
	unlimited bool
	cut       bool
}

func (c *capped) writer(w io.Writer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		n := len(p)
		if !c.unlimited {
			c.mu.Lock()
			if int64(len(p)) > c.left {
				p = p[:c.left]
				c.cut = true
			}
			c.left -= int64(len(p))
			c.mu.Unlock()
		}
		if len(p) > 0 {
			if _, err := w.Write(p); err != nil {
				return 0, err
			}
		}
		return n, nil
	})
}

func (c *capped) truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TTY is an interactive docker exec on a pseudo-terminal.
type TTY struct {
	e      Engine
	execID string
	hr     types.HijackedResponse
	once   sync.Once
}

// OpenTTY starts cmd on a terminal of rows×cols.
func OpenTTY(ctx context.Context, e Engine, id string, o RunOptions, rows, cols uint) (*TTY, error) {
	size := &[2]uint{rows, cols}
	if rows == 0 || cols == 0 {
		size = nil
	}
	ex, err := e.ContainerExecCreate(ctx, id, container.ExecOptions{
		User: o.User, Cmd: o.Cmd, Env: o.Env, WorkingDir: o.WorkingDir, Tty: true, ConsoleSize: size,
		AttachStdin: true, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, execCreateErr(err)
	}
	hr, err := e.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{Tty: true, ConsoleSize: size})
	if err != nil {
		return nil, fmt.Errorf("docker exec attach: %w", err)
	}
	return &TTY{e: e, execID: ex.ID, hr: hr}, nil
}

// Read reads terminal output.
func (t *TTY) Read(p []byte) (int, error) { return t.hr.Reader.Read(p) }

// Write sends keyboard input.
func (t *TTY) Write(p []byte) (int, error) { return t.hr.Conn.Write(p) }

// Resize changes the terminal size.
func (t *TTY) Resize(ctx context.Context, rows, cols uint) error {
	return t.e.ContainerExecResize(ctx, t.execID, container.ResizeOptions{Height: rows, Width: cols})
}

// Close ends the session's connection.
func (t *TTY) Close() { t.once.Do(func() { t.hr.Close() }) }

// ExitCode returns the shell's exit code once it ended.
func (t *TTY) ExitCode(ctx context.Context) (int, error) { return ExitCode(ctx, t.e, t.execID) }

// Executor runs `sh -c` commands in a container through docker exec. When the
// daemon is unreachable, RemoteFS drives the wickfs CLI through it.
type Executor struct {
	Engine    Engine
	Container string
	User      string
	Workdir   string
	Env       []string
	// MaxOutput caps what one command may print; wickfs replies carry whole
	// files, so this bounds the fallback's memory use.
	MaxOutput int64
}

// ErrOutputTooLarge is returned when a fallback command printed more than MaxOutput.
var ErrOutputTooLarge = errcode.New(codes.ResourceExhausted, "docker exec output exceeds the fallback limit")

// Run runs command with `sh -c`.
func (x *Executor) Run(ctx context.Context, command string) (string, int, error) {
	return x.run(ctx, command, nil)
}

// RunWithStdin runs command with stdin as its standard input.
func (x *Executor) RunWithStdin(ctx context.Context, command, stdin string) (string, int, error) {
	return x.run(ctx, command, bytes.NewReader([]byte(stdin)))
}

func (x *Executor) run(ctx context.Context, command string, stdin io.Reader) (string, int, error) {
	o := RunOptions{User: x.User, Cmd: []string{"sh", "-c", command}, Env: x.Env, WorkingDir: x.Workdir, MaxOutput: x.MaxOutput}
	if stdin != nil {
		o.Stdin = stdin
	}
	res, err := Run(ctx, x.Engine, x.Container, o)
	if err != nil {
		return "", -1, err
	}
	if res.Truncated {
		return "", res.ExitCode, ErrOutputTooLarge
	}
	return string(res.Stdout), res.ExitCode, nil
}
