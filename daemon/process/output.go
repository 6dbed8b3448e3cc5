package process

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/wick-agent/wick/wickfs"
)

// proc is one process and its output: stdout and stderr in one sequence of
// chunks covering the offsets [start, end). While a caller is attached
// nothing it has not yet received is dropped, and a process more than the
// buffer ahead of its slowest caller waits, as on a full pipe; with nobody
// attached only the last buffer's worth is kept.
type proc struct {
	table   *Table
	id      string
	spec    Spec
	pid     int
	started time.Time

	stdinMu     sync.Mutex
	stdin       *os.File
	stdinClosed bool

	mu sync.Mutex
	// changed is closed, and replaced, whenever output, readers or the exit
	// change: the broadcast attachments and a waiting producer select on.
	changed    chan struct{}
	chunks     []chunk
	start, end int64
	readers    map[*reader]struct{}
	exit       *wickfs.ExitStatus
	// finished is set once the exit is known and all output was read.
	finished bool
}

type chunk struct {
	off    int64
	stream Stream
	data   []byte
}

// reader is one attached caller; pos is the offset it has received up to.
type reader struct{ pos int64 }

// notify wakes everything waiting on p; p.mu is held.
func (p *proc) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *proc) info() *Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	return &Info{ID: p.id, Tag: p.spec.Tag, Argv: p.spec.Argv, Cwd: p.spec.Cwd, PID: p.pid, Started: p.started,
		Exit: p.exit, OutputEnd: p.end}
}

func (p *proc) hasExited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit != nil
}

// copy reads one output pipe into the buffer until it ends.
func (p *proc) copy(r io.Reader, s Stream) {
	buf := make([]byte, readChunk)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			// A chunk of its own size: a short read must not pin a whole
			// read buffer, or the buffer limit would not bound memory.
			p.append(s, bytes.Clone(buf[:n]))
		}
		if err != nil {
			return
		}
	}
}

// minPos is the offset the slowest attached caller has received up to; p.mu
// is held and a caller is attached.
func (p *proc) minPos() int64 {
	m := p.end
	for r := range p.readers {
		m = min(m, r.pos)
	}
	return m
}

func (p *proc) append(s Stream, data []byte) {
	limit := p.table.cfg.bufferBytes
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.readers) > 0 && p.end-p.minPos() >= limit {
		wait := p.changed
		p.mu.Unlock()
		<-wait
		p.mu.Lock()
	}
	p.chunks = append(p.chunks, chunk{off: p.end, stream: s, data: data})
	p.end += int64(len(data))
	floor := p.end - limit
	if len(p.readers) > 0 {
		floor = min(floor, p.minPos())
	}
	if floor > p.start {
		i := 0
		for i < len(p.chunks) && p.chunks[i].off+int64(len(p.chunks[i].data)) <= floor {
			i++
		}
		p.chunks = append(p.chunks[:0:0], p.chunks[i:]...)
		if len(p.chunks) > 0 && p.chunks[0].off < floor {
			c := &p.chunks[0]
			c.data, c.off = c.data[floor-c.off:], floor
		}
		p.start = floor
	}
	p.notify()
}

func (p *proc) attach(offset int64) (*reader, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if offset < 0 || offset > p.end {
		return nil, invalid(fmt.Sprintf("offset %d is outside the output written so far (0 to %d)", offset, p.end))
	}
	if len(p.readers) >= p.table.cfg.maxAttached {
		return nil, fmt.Errorf("%w: %d callers are attached to process %s, the limit", ErrExhausted, len(p.readers), p.id)
	}
	r := &reader{pos: offset}
	p.readers[r] = struct{}{}
	return r, nil
}

func (p *proc) detach(r *reader) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.readers, r)
	p.notify()
}

// advance records that r received everything before off.
func (p *proc) advance(r *reader, off int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.pos = off
	p.notify()
}

// maxBatch bounds the events one next hands out.
const maxBatch = 16

// next returns the events r has not received yet or, when there are none, a
// channel closed when there may be.
func (p *proc) next(r *reader) ([]Event, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var evs []Event
	pos := r.pos
	if pos < p.start {
		evs = append(evs, Event{Offset: p.start, Dropped: p.start - pos})
		pos = p.start
	}
	for _, c := range p.chunks {
		cend := c.off + int64(len(c.data))
		if cend <= pos {
			continue
		}
		if len(evs) == maxBatch {
			return evs, nil
		}
		evs = append(evs, Event{Offset: cend, Stream: c.stream, Data: c.data[pos-c.off:]})
		pos = cend
	}
	if pos == p.end && p.finished {
		evs = append(evs, Event{Offset: p.end, Exit: p.exit})
	}
	return evs, p.changed
}

// wait reaps the process, kills what it left in its group, and reads what
// remains in the pipes, for at most the drain delay when processes that left
// the group still hold them.
func (p *proc) wait(cmd *exec.Cmd, copying *sync.WaitGroup, pipes ...*os.File) {
	_ = cmd.Wait()
	_ = wickfs.KillGroup(p.pid)
	p.table.exited(p, &wickfs.ExitStatus{ExitCode: cmd.ProcessState.ExitCode(), Duration: time.Since(p.started)})
	p.closeStdin()
	drained := make(chan struct{})
	go func() { copying.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(p.table.cfg.drainDelay):
	}
	for _, f := range pipes {
		f.Close()
	}
	<-drained
	p.mu.Lock()
	p.finished = true
	p.notify()
	p.mu.Unlock()
}

func (p *proc) write(in Input) error {
	p.stdinMu.Lock()
	f, closed := p.stdin, p.stdinClosed
	if in.Close {
		p.stdin, p.stdinClosed = nil, true
	}
	p.stdinMu.Unlock()
	switch {
	case closed:
		return invalid("stdin was closed")
	case f == nil:
		return fmt.Errorf("%w: %s", ErrExited, p.id)
	case in.Close:
		return f.Close()
	}
	// The write happens outside the lock: it may wait on a full pipe, and
	// the exit must still be able to close stdin.
	if _, err := f.Write(in.Data); err != nil {
		if errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) {
			return fmt.Errorf("%w: %s", ErrExited, p.id)
		}
		return fmt.Errorf("process: write stdin: %w", err)
	}
	return nil
}

// closeStdin closes stdin once the process exited.
func (p *proc) closeStdin() {
	p.stdinMu.Lock()
	f := p.stdin
	p.stdin = nil
	p.stdinMu.Unlock()
	if f != nil {
		f.Close()
	}
}
