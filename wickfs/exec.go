package wickfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/wick-agent/wick/wickfs/confine"
)

// ExecLimits resolves a call's timeout and output cap against the defaults.
func (l *LocalFS) ExecLimits(o ExecOptions) (time.Duration, int64) {
	timeout, max := o.Timeout, o.MaxOutputBytes
	if timeout <= 0 {
		timeout = l.cfg.execTimeout
	}
	if max <= 0 {
		max = l.cfg.maxOutputBytes
	}
	return timeout, max
}

// Command prepares `sh -c command` in the workspace (or o.Workdir inside it)
// as the leader of a new process group, in a cgroup of its own with
// WithCgroup. When ctx ends before the command does, everything it started is
// killed — its whole cgroup, however a process detached, else its process
// group — so nothing it started outlives the call; processes it leaves in the
// background when it ends on its own run on (until the sandbox stops). The
// caller sets Stdin/Stdout/Stderr, applies the timeout to ctx and calls done
// once the command was waited for (or never started).
func (l *LocalFS) Command(ctx context.Context, command string, o ExecOptions) (cmd *exec.Cmd, done func(), err error) {
	if strings.TrimSpace(command) == "" {
		return nil, nil, invalid("command must not be empty")
	}
	if strings.IndexByte(command, 0) >= 0 {
		return nil, nil, invalid("command contains a NUL byte")
	}
	cg, err := l.commandCgroup()
	if err != nil {
		return nil, nil, err
	}
	done = func() { l.releaseCgroup(cg) }
	cmd = exec.CommandContext(ctx, l.cfg.shell, "-c", command)
	if err := l.prepare(cmd, o.Workdir, o.Env, cg); err != nil {
		done()
		return nil, nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if l.cfg.confinement != nil {
		// A session of its own leads a process group too, and leaves the
		// command no controlling terminal to reach through /dev/tty.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	cmd.Cancel = func() error {
		err := KillGroup(cmd.Process.Pid)
		if cg != nil {
			// Processes that left the group (setsid, double fork) are
			// still in the cgroup.
			return cg.Kill()
		}
		return err
	}
	cmd.WaitDelay = l.cfg.waitDelay
	return cmd, done, nil
}

// commandCgroup gives one command a cgroup of its own beneath the
// sandbox's, nil without WithCgroup. Its own, not the sandbox's, so that its
// timeout kills its tree and no other command's.
func (l *LocalFS) commandCgroup() (*confine.Cgroup, error) {
	if l.cfg.cgroup == nil {
		return nil, nil
	}
	l.lingerMu.Lock()
	l.lingering = slices.DeleteFunc(l.lingering, (*confine.Cgroup).RemoveIfEmpty)
	l.lingerMu.Unlock()
	cg, err := l.cfg.cgroup.Child("c" + strconv.FormatUint(l.cgroups.Add(1), 10))
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	return cg, nil
}

// releaseCgroup removes an ended command's cgroup, or keeps it for a later
// attempt while processes it left in the background run on: there are
// never more such cgroups than processes, which the sandbox's cgroup bounds.
func (l *LocalFS) releaseCgroup(cg *confine.Cgroup) {
	if cg == nil || cg.RemoveIfEmpty() {
		return
	}
	l.lingerMu.Lock()
	l.lingering = append(l.lingering, cg)
	l.lingerMu.Unlock()
}

// PrepareCmd sets a command's working directory (agent-facing, confined to
// the workspace; empty means the root) and environment (the process's own, or
// the confinement's, plus env), and wraps it in the confinement's policy and
// the sandbox's cgroup (WithCgroup), for callers that start processes their
// own way. cmd must not be started yet.
func (l *LocalFS) PrepareCmd(cmd *exec.Cmd, workdir string, env map[string]string) error {
	return l.prepare(cmd, workdir, env, l.cfg.cgroup)
}

func (l *LocalFS) prepare(cmd *exec.Cmd, workdir string, env map[string]string, cg *confine.Cgroup) error {
	cmd.Dir = l.dir
	if workdir != "" {
		dir, err := l.HostPath(workdir)
		if err != nil {
			return err
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return &PathError{Op: "exec", Path: workdir, Err: invalid("working directory is not a directory")}
		}
		cmd.Dir = dir
	}
	c := l.cfg.confinement
	if c == nil {
		cmd.Env = os.Environ()
	} else {
		cmd.Env = make([]string, 0, len(c.Env)+len(env))
		for _, k := range slices.Sorted(maps.Keys(c.Env)) {
			cmd.Env = append(cmd.Env, k+"="+c.Env[k])
		}
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := env[k]
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return invalid(fmt.Sprintf("invalid environment variable %q", k))
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var launch confine.Launch
	if c != nil {
		launch.Policy = c.Policy
	}
	if cg != nil {
		launch.Cgroup = cg.Dir()
	}
	if launch.Policy != nil || launch.Cgroup != "" {
		if err := confine.WrapLaunch(cmd, launch); err != nil {
			return fmt.Errorf("exec: %w", err)
		}
	}
	return nil
}

// KillGroup kills the process group led by pid.
func KillGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// Exec runs `sh -c command` and returns its output and exit code. A non-zero
// exit, a timeout and truncated output are results, not errors; the command's
// process group is killed at the timeout or when ctx ends.
func (l *LocalFS) Exec(ctx context.Context, command string, opts ...ExecOption) (*ExecResult, error) {
	var stdout, stderr bytes.Buffer
	st, err := l.ExecStream(ctx, command, &stdout, &stderr, opts...)
	if err != nil {
		return nil, err
	}
	return &ExecResult{
		Stdout:    TextOutput(stdout.Bytes()),
		Stderr:    TextOutput(stderr.Bytes()),
		ExitCode:  st.ExitCode,
		TimedOut:  st.TimedOut,
		Truncated: st.Truncated,
	}, nil
}

// OutputLimit is a byte budget shared by a command's output streams: bytes
// past it are dropped (and counted as truncation) while the command keeps
// running, so a chatty command is neither blocked nor allowed to fill memory.
type OutputLimit struct {
	mu        sync.Mutex
	left      int64
	truncated bool
}

// NewOutputLimit returns a budget of max bytes.
func NewOutputLimit(max int64) *OutputLimit { return &OutputLimit{left: max} }

// Take grants up to n bytes of the budget.
func (o *OutputLimit) Take(n int) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if int64(n) > o.left {
		o.truncated = true
		n = int(o.left)
	}
	o.left -= int64(n)
	return n
}

// Truncated reports whether any bytes were dropped.
func (o *OutputLimit) Truncated() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.truncated
}

// Writer returns a writer into w that spends this budget.
func (o *OutputLimit) Writer(w interface{ Write([]byte) (int, error) }) *LimitedWriter {
	return &LimitedWriter{lim: o, w: w}
}

// LimitedWriter writes what its budget allows and drops the rest, always
// reporting the full length so the command's output pipe keeps draining.
type LimitedWriter struct {
	lim *OutputLimit
	w   interface{ Write([]byte) (int, error) }
}

func (w *LimitedWriter) Write(b []byte) (int, error) {
	n := w.lim.Take(len(b))
	if n > 0 {
		if _, err := w.w.Write(b[:n]); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// TextOutput turns command output into valid UTF-8 text, replacing each
// invalid byte with U+FFFD as encoding/json does: results travel as JSON and
// protobuf strings, which must be UTF-8, and every FileSystem gives the same
// text for the same output.
func TextOutput(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:size])
		}
		b = b[size:]
	}
	return sb.String()
}
