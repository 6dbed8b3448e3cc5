// Package process is the process table of one sandbox: programs started with
// pipes (not a PTY), their stdout and stderr kept as one byte sequence with
// offsets, so a caller whose connection dropped attaches again where it left
// off. wick-daemon serves it inside a container; the sandbox service's local
// backend runs the same table in-process. It keeps no global state.
package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
	"github.com/wick-agent/wick/wickfs"
)

// Defaults of a Table's limits; each has an option.
const (
	// DefaultMaxRunning bounds the running processes of one sandbox.
	DefaultMaxRunning = 32
	// DefaultBufferBytes is how much output is kept per process: the most a
	// process may run ahead of an attached caller, and the tail kept while
	// nobody is attached.
	DefaultBufferBytes = 1 << 20
	// DefaultKeepExited is how many exited processes keep their output tail
	// and exit status for List and Attach.
	DefaultKeepExited = 64
	// DefaultMaxAttached bounds the callers attached to one process at once.
	DefaultMaxAttached = 16
	// DefaultDrainDelay bounds how long output pipes held open by processes
	// that left the group are read after the process exited.
	DefaultDrainDelay = time.Second
	// MaxTagBytes bounds a process's tag.
	MaxTagBytes = 256
	// readChunk is the most one output event carries.
	readChunk = 32 << 10
)

// Errors, each declared with the status code a client sees for it.
var (
	ErrNotFound  = errcode.New(codes.NotFound, "no such process")
	ErrInvalid   = errcode.New(codes.InvalidArgument, "invalid argument")
	ErrExhausted = errcode.New(codes.ResourceExhausted, "resource exhausted")
	ErrExited    = errcode.New(codes.FailedPrecondition, "process has exited")
	ErrClosed    = errcode.New(codes.Unavailable, "the process table is closed")
)

// Spec describes a process to start.
type Spec struct {
	// Argv is the program and its arguments; no shell is involved.
	Argv []string
	// Env adds environment variables.
	Env map[string]string
	// Cwd is the agent-facing working directory; empty means the workspace.
	Cwd string
	// Tag is a free label to list processes by.
	Tag string
}

// Info describes a process.
type Info struct {
	ID, Tag string
	Argv    []string
	Cwd     string
	PID     int
	Started time.Time
	// Exit is set once the process has exited.
	Exit *wickfs.ExitStatus
	// OutputEnd is how many output bytes the process wrote so far.
	OutputEnd int64
}

// Stream names an output stream.
type Stream int

// The output streams.
const (
	Stdout Stream = 1
	Stderr Stream = 2
)

// Event is one piece of an attachment: output, a gap, or the exit. Offset is
// the output offset just past the event, the one to attach from to continue.
type Event struct {
	Offset int64
	// Stream and Data are a chunk of output.
	Stream Stream
	Data   []byte
	// Dropped, when positive, is how many bytes before Offset were lost.
	Dropped int64
	// Exit, when set, is the last event.
	Exit *wickfs.ExitStatus
	// Started, when set, is the first event of StartAttachedProcess.
	Started *Info
}

// Input is one message from an attached caller: stdin bytes or, with Close,
// the end of stdin.
type Input struct {
	Data  []byte
	Close bool
}

// Preparer sets a command's working directory and environment and applies
// the sandbox's confinement; *wickfs.LocalFS is one (PrepareCmd).
type Preparer interface {
	PrepareCmd(cmd *exec.Cmd, workdir string, env map[string]string) error
}

type options struct {
	maxRunning, keepExited, maxAttached int
	bufferBytes                         int64
	drainDelay                          time.Duration
}

// Option configures a Table.
type Option func(*options)

// WithMaxRunning bounds the running processes.
func WithMaxRunning(n int) Option { return func(o *options) { o.maxRunning = n } }

// WithBufferBytes sets the output kept per process.
func WithBufferBytes(n int64) Option { return func(o *options) { o.bufferBytes = n } }

// WithKeepExited sets how many exited processes are remembered.
func WithKeepExited(n int) Option { return func(o *options) { o.keepExited = n } }

// WithMaxAttached bounds the callers attached to one process.
func WithMaxAttached(n int) Option { return func(o *options) { o.maxAttached = n } }

// WithDrainDelay bounds the reading of pipes left open after an exit.
func WithDrainDelay(d time.Duration) Option { return func(o *options) { o.drainDelay = d } }

// Table is the processes of one sandbox.
type Table struct {
	prep Preparer
	cfg  options

	mu      sync.Mutex
	procs   map[string]*proc
	order   []string // ids, oldest first
	running int
	closed  bool
}

// NewTable returns a table whose processes prep prepares.
func NewTable(prep Preparer, opts ...Option) *Table {
	cfg := options{maxRunning: DefaultMaxRunning, bufferBytes: DefaultBufferBytes, keepExited: DefaultKeepExited,
		maxAttached: DefaultMaxAttached, drainDelay: DefaultDrainDelay}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.maxRunning = max(cfg.maxRunning, 1)
	cfg.bufferBytes = max(cfg.bufferBytes, readChunk)
	cfg.keepExited = max(cfg.keepExited, 0)
	cfg.maxAttached = max(cfg.maxAttached, 1)
	return &Table{prep: prep, cfg: cfg, procs: map[string]*proc{}}
}

func invalid(msg string) error { return fmt.Errorf("%w: %s", ErrInvalid, msg) }

func check(s Spec) error {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return invalid("argv must name a program")
	}
	for _, a := range s.Argv {
		if !utf8.ValidString(a) || strings.IndexByte(a, 0) >= 0 {
			return invalid("argv must be UTF-8 without NUL bytes")
		}
	}
	if len(s.Tag) > MaxTagBytes || !utf8.ValidString(s.Tag) {
		return invalid(fmt.Sprintf("tag must be UTF-8 of at most %d bytes", MaxTagBytes))
	}
	return nil
}

// StartProcess starts a process as the leader of a session (so of a process group)
// of its own, with stdin, stdout and stderr on pipes.
func (t *Table) StartProcess(ctx context.Context, s Spec) (*Info, error) {
	p, _, err := t.start(ctx, s, false)
	if err != nil {
		return nil, err
	}
	return p.info(), nil
}

// StartAttachedProcess starts a process as StartProcess does and attaches to
// it before it can write anything, so not a byte can be dropped; the first
// event sent carries Started. It returns as AttachProcess does.
func (t *Table) StartAttachedProcess(ctx context.Context, s Spec, input func() (Input, error), send func(Event) error) error {
	p, r, err := t.start(ctx, s, true)
	if err != nil {
		return err
	}
	defer p.detach(r)
	if err := send(Event{Started: p.info()}); err != nil {
		return err
	}
	return p.stream(ctx, r, input, send)
}

// start starts a process, with a caller attached from its first byte when
// attached is set.
func (t *Table) start(ctx context.Context, s Spec, attached bool) (*proc, *reader, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if err := check(s); err != nil {
		return nil, nil, err
	}
	t.mu.Lock()
	switch {
	case t.closed:
		t.mu.Unlock()
		return nil, nil, ErrClosed
	case t.running >= t.cfg.maxRunning:
		t.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: %d processes are running, the sandbox's limit", ErrExhausted, t.running)
	}
	// The slot is taken before the process starts, so concurrent starts
	// cannot pass the limit together.
	t.running++
	t.mu.Unlock()
	p, r, err := t.spawn(s, attached)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.running--
		return nil, nil, err
	}
	t.procs[p.id] = p
	t.order = append(t.order, p.id)
	if t.closed {
		_ = wickfs.KillGroup(p.pid)
	}
	return p, r, nil
}

func (t *Table) spawn(s Spec, attached bool) (*proc, *reader, error) {
	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	if errors.Is(cmd.Err, exec.ErrNotFound) || errors.Is(cmd.Err, exec.ErrDot) {
		return nil, nil, invalid(fmt.Sprintf("program %q: %v", s.Argv[0], cmd.Err))
	}
	if err := t.prep.PrepareCmd(cmd, s.Cwd, s.Env); err != nil {
		return nil, nil, err
	}
	// A session of its own leads a process group (what SignalProcess
	// signals and what is killed when the process exits) and leaves no
	// controlling terminal to reach through /dev/tty. Pdeathsig kills the
	// leader should its starter die, so no process outlives the table.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("process: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, fmt.Errorf("process: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, nil, fmt.Errorf("process: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return nil, nil, invalid(fmt.Sprintf("program %q: %v", s.Argv[0], err))
		}
		return nil, nil, fmt.Errorf("process: start %s: %w", s.Argv[0], err)
	}
	p := &proc{
		table: t, id: newID(), spec: s, pid: cmd.Process.Pid, started: time.Now(),
		stdin: inW, changed: make(chan struct{}), readers: map[*reader]struct{}{},
	}
	var r *reader
	if attached {
		// Registered before the pipes are read: nothing can be dropped.
		r = &reader{}
		p.readers[r] = struct{}{}
	}
	var copying sync.WaitGroup
	copying.Add(2)
	go func() { defer copying.Done(); p.copy(outR, Stdout) }()
	go func() { defer copying.Done(); p.copy(errR, Stderr) }()
	go p.wait(cmd, &copying, outR, errR)
	return p, r, nil
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// exited records a process's exit: its slot is free and the oldest exited
// processes beyond the kept number are forgotten, all before anyone can see
// the exit, so a caller who saw it may start another process at once.
func (t *Table) exited(p *proc, st *wickfs.ExitStatus) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running--
	p.mu.Lock()
	p.exit = st
	p.notify()
	p.mu.Unlock()
	n := 0
	for i := len(t.order) - 1; i >= 0; i-- {
		q := t.procs[t.order[i]]
		if !q.hasExited() {
			continue
		}
		// An attachment of a forgotten process still runs to its end.
		if n++; n > t.cfg.keepExited {
			delete(t.procs, q.id)
			t.order = append(t.order[:i], t.order[i+1:]...)
		}
	}
}

func (t *Table) get(id string) (*proc, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.procs[id]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrNotFound, id)
	}
	return p, nil
}

// ListProcesses returns the processes matching id and tag (empty matches
// any), oldest first.
func (t *Table) ListProcesses(_ context.Context, id, tag string) ([]*Info, error) {
	t.mu.Lock()
	ps := make([]*proc, 0, len(t.order))
	for _, key := range t.order {
		ps = append(ps, t.procs[key])
	}
	t.mu.Unlock()
	var out []*Info
	for _, p := range ps {
		if (id == "" || p.id == id) && (tag == "" || p.spec.Tag == tag) {
			out = append(out, p.info())
		}
	}
	return out, nil
}

// SignalProcess sends sig to a running process's group.
func (t *Table) SignalProcess(_ context.Context, id string, sig syscall.Signal) error {
	p, err := t.get(id)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exit != nil {
		return fmt.Errorf("%w: %s", ErrExited, id)
	}
	// The group's id is the leader's pid; the exit is recorded right after
	// the leader is reaped, long before the kernel could reuse the pid.
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("process: signal %s: %w", id, err)
	}
	return nil
}

// AttachProcess streams a process's output from offset to send, until the
// process exited and everything was sent (nil), ctx ended, or send failed. input,
// when not nil, is read beside it for stdin; its io.EOF stops the reading
// and nothing else.
func (t *Table) AttachProcess(ctx context.Context, id string, offset int64, input func() (Input, error), send func(Event) error) error {
	p, err := t.get(id)
	if err != nil {
		return err
	}
	r, err := p.attach(offset)
	if err != nil {
		return err
	}
	defer p.detach(r)
	return p.stream(ctx, r, input, send)
}

// stream is an attachment of r: stdin from input beside events to send.
func (p *proc) stream(ctx context.Context, r *reader, input func() (Input, error), send func(Event) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if input != nil {
		go func() {
			for {
				in, err := input()
				if err == nil {
					err = p.write(in)
				}
				// Input for a process that exited is dropped; its
				// output is still streamed to the end.
				if errors.Is(err, io.EOF) || errors.Is(err, ErrExited) {
					return
				}
				if err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	for {
		evs, wait := p.next(r)
		for _, ev := range evs {
			if err := send(ev); err != nil {
				return err
			}
			p.advance(r, ev.Offset)
			if ev.Exit != nil {
				return nil
			}
		}
		if len(evs) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-wait:
		}
	}
}

// Close kills every running process's group; the table then refuses starts.
func (t *Table) Close() {
	t.mu.Lock()
	t.closed = true
	ps := make([]*proc, 0, len(t.procs))
	for _, p := range t.procs {
		ps = append(ps, p)
	}
	t.mu.Unlock()
	for _, p := range ps {
		p.mu.Lock()
		if p.exit == nil {
			_ = wickfs.KillGroup(p.pid)
		}
		p.mu.Unlock()
	}
}
