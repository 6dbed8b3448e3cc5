package acp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// Defaults of a Pool; each has an option.
const (
	// DefaultPoolIdle is how long a thread's agent process is kept alive
	// after its run, waiting for the thread's next message.
	DefaultPoolIdle = 10 * time.Minute
	// DefaultPoolSize bounds the processes a pool keeps alive at once; the
	// one idle the longest is stopped to make room.
	DefaultPoolSize = 32
)

// Pool keeps ACP agent processes alive between the runs of a thread on
// this replica: the thread's next message reuses the process and its open
// session, with no start, initialize or session/load. A kept process is
// stopped gracefully (DefaultStopGrace) when it has been idle too long,
// to make room, or when the next run finds it unusable: its process died,
// the agent's configuration changed, or the thread moved on without it (a
// run on another replica). Safe for concurrent use.
type Pool struct {
	idle  time.Duration
	size  int
	grace time.Duration

	mu     sync.Mutex
	kept   map[string]*kept
	closed bool
	// stopping are the stops in flight, which Close waits for.
	stopping sync.WaitGroup
}

// kept is a process a pool holds, with what its next run must match.
type kept struct {
	l *live
	// fp is the configuration's fingerprint.
	fp string
	// msgs is the thread's length after the run, session its session id:
	// a thread that has grown since ran elsewhere.
	msgs    int
	session string
	at      time.Time
	timer   *time.Timer
}

// PoolOption configures a Pool.
type PoolOption func(*Pool)

// WithPoolIdle sets how long an idle process is kept.
func WithPoolIdle(d time.Duration) PoolOption { return func(p *Pool) { p.idle = d } }

// WithPoolSize bounds the processes kept at once.
func WithPoolSize(n int) PoolOption { return func(p *Pool) { p.size = n } }

// WithPoolStopGrace sets the grace of the stop of a process the pool
// lets go of (DefaultStopGrace).
func WithPoolStopGrace(d time.Duration) PoolOption { return func(p *Pool) { p.grace = d } }

// NewPool returns an empty pool; Close stops what it keeps.
func NewPool(opts ...PoolOption) *Pool {
	p := &Pool{idle: DefaultPoolIdle, size: DefaultPoolSize, grace: DefaultStopGrace, kept: map[string]*kept{}}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Len is how many processes the pool keeps.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.kept)
}

// take hands the process kept under key to a run, when it is alive, was
// started with the configuration fp and the thread is as its last run
// left it (msgs messages before the new input, the same session); a
// process that does not match is stopped. nil: start a new one.
func (p *Pool) take(key, fp string, msgs int, session string) *live {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	k := p.kept[key]
	if k != nil {
		delete(p.kept, key)
		k.timer.Stop()
	}
	p.mu.Unlock()
	if k == nil {
		return nil
	}
	if k.fp != fp || k.msgs != msgs || k.session != session || !k.l.alive() {
		// Stopped before the run starts another process, which may load
		// the session this one still has to write.
		k.l.proc.Stop(p.grace)
		return nil
	}
	return k.l
}

// put keeps a process for the thread's next run under key; past the
// pool's size, the process idle the longest is stopped.
func (p *Pool) put(key string, k *kept) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.stop(k)
		return
	}
	var evict []*kept
	if old := p.kept[key]; old != nil {
		old.timer.Stop()
		evict = append(evict, old)
	}
	k.at = time.Now()
	p.kept[key] = k
	k.timer = time.AfterFunc(p.idle, func() { p.expire(key, k) })
	for len(p.kept) > p.size {
		oldest := ""
		for key, c := range p.kept {
			if oldest == "" || c.at.Before(p.kept[oldest].at) {
				oldest = key
			}
		}
		c := p.kept[oldest]
		c.timer.Stop()
		delete(p.kept, oldest)
		evict = append(evict, c)
	}
	p.mu.Unlock()
	for _, c := range evict {
		p.stop(c)
	}
}

// expire stops a process idle for the pool's idle time, unless a run has
// taken it since.
func (p *Pool) expire(key string, k *kept) {
	p.mu.Lock()
	if p.kept[key] != k {
		p.mu.Unlock()
		return
	}
	delete(p.kept, key)
	p.mu.Unlock()
	p.stop(k)
}

// stop stops a process the pool lets go of, in the background: nobody
// waits for it but Close.
func (p *Pool) stop(k *kept) {
	p.mu.Lock()
	if p.closed {
		// Close waits only for the stops it knows of: this one is waited
		// for by its caller.
		p.mu.Unlock()
		k.l.proc.Stop(p.grace)
		return
	}
	p.stopping.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.stopping.Done()
		k.l.proc.Stop(p.grace)
	}()
}

// Close stops every kept process and waits for the stops; a process put
// after Close is stopped at once.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	all := make([]*kept, 0, len(p.kept))
	for key, k := range p.kept {
		k.timer.Stop()
		all = append(all, k)
		delete(p.kept, key)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range all {
		wg.Go(func() { k.l.proc.Stop(p.grace) })
	}
	wg.Wait()
	p.stopping.Wait()
}

// poolKey names the thread's kept process: the owner the runner was given
// and the thread.
func (r *Runner) poolKey(state *loop.AgentState) string {
	return r.opts.poolKey + "\x00" + r.agentID + "\x00" + state.ThreadID
}

// fingerprint identifies what the agent's process was started with; a
// kept process started otherwise is not reused. It is a hash, so the
// resolved secrets of the environment are not kept twice.
func (r *Runner) fingerprint() string {
	b, _ := json.Marshal(struct {
		ACP     *loop.ACPCfg
		Backend *loop.BackendCfg
		MCP     []loop.MCPServerCfg
	}{r.cfg.ACP, r.cfg.Backend, r.cfg.MCPServers})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// stderrLog logs the agent's standard error line by line at debug level:
// an agent that retries a provider it cannot reach says so only there.
type stderrLog struct {
	logger *slog.Logger
	mu     sync.Mutex
	buf    []byte
}

// maxStderrLine bounds a line kept while its end has not come.
const maxStderrLine = 4 << 10

func (w *stderrLog) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		if line := bytes.TrimSpace(w.buf[:i]); len(line) > 0 {
			w.logger.Debug("ACP agent stderr", "line", string(line))
		}
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > maxStderrLine {
		w.logger.Debug("ACP agent stderr", "line", string(w.buf))
		w.buf = w.buf[:0]
	}
	return len(b), nil
}
