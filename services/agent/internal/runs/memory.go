package runs

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// Memory is the single-process Store and Log. Finished runs are dropped
// after the retention, checked whenever a run is added.
type Memory struct {
	retention time.Duration
	maxEvents int
	now       func() time.Time

	mu     sync.Mutex
	runs   map[string]*memRun
	nudges []chan string
	// evicted is when finished runs were last dropped: a scan of every run
	// per new run made starting 1,000 runs quadratic.
	evicted time.Time
}

type memRun struct {
	rec       *Run
	events    []loop.StreamEvent
	keys      []eventID // parsed ids of events, increasing
	next      uint64    // sequence of the next self-assigned id
	ended     bool
	endedAt   time.Time
	changed   chan struct{} // closed and replaced on every append or end
	cancel    bool
	stop      bool
	decisions []loop.Decision
}

// evictEvery is how often adding a run looks for finished runs to drop.
const evictEvery = time.Second

// MemoryOption configures Memory.
type MemoryOption func(*Memory)

// WithMemoryRetention sets how long finished runs are kept.
func WithMemoryRetention(d time.Duration) MemoryOption { return func(m *Memory) { m.retention = d } }

// WithMemoryMaxEvents caps each run's log; the oldest events are dropped.
func WithMemoryMaxEvents(n int) MemoryOption { return func(m *Memory) { m.maxEvents = n } }

// NewMemory returns an empty Memory.
func NewMemory(opts ...MemoryOption) *Memory {
	m := &Memory{retention: DefaultRetention, maxEvents: DefaultMaxEvents, now: time.Now, runs: map[string]*memRun{}}
	for _, o := range opts {
		o(m)
	}
	return m
}

func (m *Memory) entry(runID string, create bool) *memRun {
	r, ok := m.runs[runID]
	if !ok && create {
		m.evict()
		r = &memRun{changed: make(chan struct{}), next: 1}
		m.runs[runID] = r
	}
	return r
}

func (m *Memory) evict() {
	now := m.now()
	if now.Sub(m.evicted) < evictEvery {
		return
	}
	m.evicted = now
	for id, r := range m.runs {
		if !r.ended || now.Sub(r.endedAt) <= m.retention {
			continue
		}
		if r.rec != nil && r.rec.Status == StatusStopped && now.Sub(r.endedAt) <= DefaultStoppedRetention {
			// A stopped run stays continuable; its log goes as any run's.
			r.events, r.keys = nil, nil
			continue
		}
		delete(m.runs, id)
	}
}

func (r *memRun) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func copyRun(r *Run) *Run {
	c := *r
	c.Pending = append([]llm.ToolCall(nil), r.Pending...)
	return &c
}

// Put implements Store.
func (m *Memory) Put(_ context.Context, r *Run) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entry(r.ID, true).rec = copyRun(r)
	return nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, runID string) (*Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.entry(runID, false)
	if r == nil || r.rec == nil {
		return nil, ErrNotFound
	}
	return copyRun(r.rec), nil
}

// Unfinished implements Store.
func (m *Memory) Unfinished(_ context.Context, user, agentID string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id, r := range m.runs {
		if r.rec != nil && r.rec.User == user && r.rec.AgentID == agentID && !Terminal(r.rec.Status) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Finish implements Store.
func (m *Memory) Finish(_ context.Context, runID, status, msg, code string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.entry(runID, false)
	if r == nil || r.rec == nil {
		return false, ErrNotFound
	}
	if Terminal(r.rec.Status) {
		return false, nil
	}
	r.rec.Status, r.rec.Error, r.rec.Code, r.rec.Pending = status, msg, code, nil
	return true, nil
}

func (m *Memory) nudge(runID string) {
	for _, ch := range m.nudges {
		select {
		case ch <- runID:
		default: // owners poll as well, so a full channel loses nothing
		}
	}
}

// RequestCancel implements Store.
func (m *Memory) RequestCancel(_ context.Context, runID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.entry(runID, false); r != nil {
		r.cancel = true
	}
	m.nudge(runID)
	return nil
}

// CancelRequested implements Store.
func (m *Memory) CancelRequested(_ context.Context, runID string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.entry(runID, false)
	return r != nil && r.cancel, nil
}

// RequestStop implements Store.
func (m *Memory) RequestStop(_ context.Context, runID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.entry(runID, false); r != nil {
		r.stop = true
	}
	return nil
}

// StopRequested implements Store.
func (m *Memory) StopRequested(_ context.Context, runID string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.entry(runID, false)
	return r != nil && r.stop, nil
}

// PutDecisions implements Store.
func (m *Memory) PutDecisions(_ context.Context, runID string, d []loop.Decision) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entry(runID, true).decisions = append([]loop.Decision(nil), d...)
	m.nudge(runID)
	return nil
}

// TakeDecisions implements Store.
func (m *Memory) TakeDecisions(_ context.Context, runID string) ([]loop.Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.entry(runID, false)
	if r == nil {
		return nil, nil
	}
	d := r.decisions
	r.decisions = nil
	return d, nil
}

// Nudges implements Store.
func (m *Memory) Nudges(ctx context.Context) (<-chan string, error) {
	ch := make(chan string, 64)
	m.mu.Lock()
	m.nudges = append(m.nudges, ch)
	m.mu.Unlock()
	go func() {
		<-ctx.Done()
		m.mu.Lock()
		defer m.mu.Unlock()
		for i, c := range m.nudges {
			if c == ch {
				m.nudges = append(m.nudges[:i], m.nudges[i+1:]...)
				break
			}
		}
	}()
	return ch, nil
}

// Append implements Log. An event that already has an id (given by a shared
// log) keeps it, so a local copy answers with the ids clients saw; the id
// must then be greater than the previous one. An event without one gets an
// id after the last, also in a copy of a shared log.
func (m *Memory) Append(_ context.Context, runID string, ev loop.StreamEvent) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.entry(runID, true)
	if r.ended {
		return "", fmt.Errorf("append to run %s: log has ended", runID)
	}
	var key eventID
	if ev.ID == "" {
		key = eventID{r.next, 0}
		if n := len(r.keys); n > 0 && !r.keys[n-1].less(key) {
			key = eventID{r.keys[n-1].hi, r.keys[n-1].lo + 1}
		}
		r.next++
		ev.ID = key.String()
	} else {
		k, err := parseEventID(ev.ID)
		if err != nil {
			return "", err
		}
		if n := len(r.keys); n > 0 && !r.keys[n-1].less(k) {
			return "", fmt.Errorf("append to run %s: id %s is not after %s", runID, ev.ID, r.keys[n-1])
		}
		key = k
	}
	r.events = append(r.events, ev)
	r.keys = append(r.keys, key)
	if over := len(r.events) - m.maxEvents; over > 0 {
		r.events = append([]loop.StreamEvent(nil), r.events[over:]...)
		r.keys = append([]eventID(nil), r.keys[over:]...)
	}
	r.notify()
	return ev.ID, nil
}

// AppendClosing implements Log.
func (m *Memory) AppendClosing(ctx context.Context, runID string, ev loop.StreamEvent) (string, error) {
	return m.Append(ctx, runID, ev)
}

// End implements Log.
func (m *Memory) End(_ context.Context, runID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.entry(runID, true)
	if !r.ended {
		r.ended, r.endedAt = true, m.now()
		r.notify()
	}
	return nil
}

// eventID is a parsed "<ms>-<seq>" id, the form of Redis stream ids.
type eventID struct{ hi, lo uint64 }

func (e eventID) less(o eventID) bool { return e.hi < o.hi || (e.hi == o.hi && e.lo < o.lo) }
func (e eventID) String() string {
	return strconv.FormatUint(e.hi, 10) + "-" + strconv.FormatUint(e.lo, 10)
}

func parseEventID(s string) (eventID, error) {
	a, b, ok := strings.Cut(s, "-")
	hi, err1 := strconv.ParseUint(a, 10, 64)
	lo, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return eventID{}, fmt.Errorf("%w: %q", ErrBadEventID, truncateID(s))
	}
	return eventID{hi, lo}, nil
}

func truncateID(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// parseAfter parses a reader's position; "" is before every event.
func parseAfter(after string) (eventID, error) {
	if after == "" {
		return eventID{}, nil
	}
	return parseEventID(after)
}

// Read implements Log.
func (m *Memory) Read(ctx context.Context, runID, after string, max int, block time.Duration) ([]loop.StreamEvent, bool, error) {
	pos, err := parseAfter(after)
	if err != nil {
		return nil, false, err
	}
	var timer <-chan time.Time
	for {
		m.mu.Lock()
		r := m.entry(runID, false)
		if r == nil {
			m.mu.Unlock()
			return nil, false, ErrNotFound
		}
		start := sort.Search(len(r.keys), func(i int) bool { return pos.less(r.keys[i]) })
		if start < len(r.events) {
			end := min(len(r.events), start+max)
			// Logged events are never changed in place (Append appends,
			// trimming copies), so the reader gets them without a copy; the
			// capacity stops its appends from reaching the log's array.
			out := r.events[start:end:end]
			ended := r.ended && end == len(r.events)
			m.mu.Unlock()
			return out, ended, nil
		}
		if r.ended || block <= 0 {
			ended := r.ended
			m.mu.Unlock()
			return nil, ended, nil
		}
		changed := r.changed
		m.mu.Unlock()
		if timer == nil {
			t := time.NewTimer(block)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-timer:
			return nil, false, nil
		case <-changed:
		}
	}
}

// Last implements Log.
func (m *Memory) Last(_ context.Context, runID string) (*loop.StreamEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.entry(runID, false)
	if r == nil || len(r.events) == 0 {
		return nil, nil
	}
	ev := r.events[len(r.events)-1]
	return &ev, nil
}

// CheckEventID validates an event id given by a client ("" is valid: the start).
func CheckEventID(id string) error {
	_, err := parseAfter(id)
	return err
}
