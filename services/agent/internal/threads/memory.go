package threads

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/wick-agent/wick/services/agent/internal/ids"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// MemoryOption configures a MemoryStore.
type MemoryOption func(*MemoryStore)

// WithTTL sets the sliding TTL of threads.
func WithTTL(d time.Duration) MemoryOption { return func(s *MemoryStore) { s.ttl = d } }

// WithSweepInterval sets how often idle threads are evicted.
func WithSweepInterval(d time.Duration) MemoryOption {
	return func(s *MemoryStore) { s.sweep = d }
}

// MemoryStore is the single-process Store and Locker.
// States are kept as JSON so no caller shares memory with the stored copy.
type MemoryStore struct {
	ttl   time.Duration
	sweep time.Duration
	now   func() time.Time

	mu      sync.Mutex
	threads map[memKey]*memEntry
	locks   map[memKey]string
	stop    chan struct{}
	done    chan struct{}
}

type memKey struct{ user, thread string }

// memEntry is a stored thread in two parts (history.go).
type memEntry struct {
	meta []byte
	// body is the messages array without its closing bracket, so that an
	// append only adds bytes after the end.
	body       []byte
	gen        string
	version    int64
	agentID    string
	count      int
	title      string
	name       string // the title the user gave (Rename), kept across saves
	mark       string // the run's mark (MarkRun), kept across saves
	run        string // the id of the run that marked it last (MarkRun)
	updated    time.Time
	lastAccess time.Time
}

// NewMemoryStore returns a MemoryStore whose sweeper runs until Close.
func NewMemoryStore(opts ...MemoryOption) *MemoryStore {
	s := &MemoryStore{
		ttl: DefaultTTL, sweep: DefaultSweepInterval, now: time.Now,
		threads: map[memKey]*memEntry{}, locks: map[memKey]string{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	go s.sweeper()
	return s
}

// Close stops the sweeper.
func (s *MemoryStore) Close() error {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	return nil
}

func (s *MemoryStore) sweeper() {
	defer close(s.done)
	t := time.NewTicker(s.sweep)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.Sweep()
		}
	}
}

// Sweep evicts threads idle for longer than the TTL.
func (s *MemoryStore) Sweep() {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.threads {
		if now.Sub(e.lastAccess) > s.ttl {
			delete(s.threads, k)
		}
	}
}

func (s *MemoryStore) live(k memKey) (*memEntry, bool) {
	e, ok := s.threads[k]
	if !ok {
		return nil, false
	}
	now := s.now()
	if now.Sub(e.lastAccess) > s.ttl {
		delete(s.threads, k)
		return nil, false
	}
	e.lastAccess = now
	return e, true
}

// LoadOrCreate implements Store.
func (s *MemoryStore) LoadOrCreate(ctx context.Context, user, threadID string) (*loop.AgentState, error) {
	st, err := s.Get(ctx, user, threadID)
	if err == ErrNotFound {
		return newState(threadID), nil
	}
	return st, err
}

// Get implements Store.
func (s *MemoryStore) Get(_ context.Context, user, threadID string) (*loop.AgentState, error) {
	s.mu.Lock()
	e, ok := s.live(memKey{user, threadID})
	s.mu.Unlock()
	if !ok {
		return nil, ErrNotFound
	}
	// A full slice expression makes append copy, so the entry's body is
	// never written here.
	msgs := append(e.body[:len(e.body):len(e.body)], ']')
	return decodeParts(threadID, e.meta, msgs, e.version, e.gen)
}

// Save implements Store.
func (s *MemoryStore) Save(_ context.Context, user string, state *loop.AgentState, fence string, b Bounds) error {
	now := s.now().UTC()
	prevV, prevT := state.Version, state.UpdatedAt
	state.Version, state.UpdatedAt = prevV+1, now
	err := s.save(user, state, prevV, fence, b, now)
	if errors.Is(err, errMoved) {
		// The thread was replaced by a whole write this state never saw
		// (deleted and written again up to the same version): write it
		// whole.
		state.Stored = nil
		err = s.save(user, state, prevV, fence, b, now)
	}
	if err != nil {
		state.Version, state.UpdatedAt = prevV, prevT
	}
	return err
}

// save is one attempt of Save over version prev.
func (s *MemoryStore) save(user string, state *loop.AgentState, prev int64, fence string, b Bounds, now time.Time) error {
	enc, err := encodeSave(state, prev, b)
	if err != nil {
		return err
	}
	k := memKey{user, state.ThreadID}
	s.mu.Lock()
	defer s.mu.Unlock()
	var cur int64
	e, exists := s.live(k)
	if exists {
		cur = e.version
	}
	if s.locks[k] != fence {
		return ErrLeaseLost
	}
	if cur != prev {
		return ErrConflict
	}
	if !exists && b.Threads.Max > 0 {
		if n := s.count(user); !b.Threads.Allows(n + 1) {
			return b.Threads.Refuse(user, n)
		}
	}
	ne := &memEntry{meta: enc.meta, gen: enc.gen, version: prev + 1, agentID: state.AgentID,
		count: len(state.Messages), title: title(state.Messages), updated: now, lastAccess: now}
	switch {
	case enc.from == nil:
		// Room for the rounds that follow, so that their appends do not
		// copy a long history again at once.
		body := enc.msgs[:len(enc.msgs)-1]
		ne.body = slices.Grow(body, len(body)/4)
	case e.gen != enc.from.gen || int64(len(e.body))+1 != enc.from.size:
		return errMoved
	case len(enc.msgs) == 0:
		ne.body = e.body
	default:
		// Readers hold the entry's body only up to its length, so growing
		// it in place changes nothing they see.
		ne.body = append(e.body, enc.msgs[:len(enc.msgs)-1]...)
	}
	if exists {
		ne.mark, ne.name, ne.run = e.mark, e.name, e.run
	}
	s.threads[k] = ne
	state.Stored = enc.note(prev+1, state.Messages)
	return nil
}

// MarkRun implements Store.
func (s *MemoryStore) MarkRun(_ context.Context, user, threadID, fence, runID, mark string) error {
	k := memKey{user, threadID}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locks[k] != fence {
		return ErrLeaseLost
	}
	if e, ok := s.live(k); ok {
		e.mark, e.run = mark, runID
	}
	return nil
}

// Rename implements Store.
func (s *MemoryStore) Rename(_ context.Context, user, threadID, title string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.live(memKey{user, threadID})
	if !ok {
		return ErrNotFound
	}
	e.name = title
	return nil
}

// Count implements Store.
func (s *MemoryStore) Count(_ context.Context, user string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count(user), nil
}

// count is the user's live threads; s.mu is held. It walks every thread,
// which a single process can afford when a thread is created.
func (s *MemoryStore) count(user string) int64 {
	now := s.now()
	var n int64
	for k, e := range s.threads {
		if k.user == user && now.Sub(e.lastAccess) <= s.ttl {
			n++
		}
	}
	return n
}

// Delete implements Store.
func (s *MemoryStore) Delete(_ context.Context, user, threadID string) error {
	s.mu.Lock()
	delete(s.threads, memKey{user, threadID})
	s.mu.Unlock()
	return nil
}

// List implements Store. It walks the user's threads in memory, which a
// single process can afford.
func (s *MemoryStore) List(_ context.Context, user string, q ListQuery) (Page, error) {
	s.mu.Lock()
	var out []Summary
	for k := range s.threads {
		if k.user != user {
			continue
		}
		e, ok := s.live(k)
		if !ok || !q.keeps(k.thread, e.agentID, listTitle(e.name, e.title)) || (q.After != nil && q.After.passed(e.updated, k.thread)) {
			continue
		}
		out = append(out, s.summary(k, e))
	}
	s.mu.Unlock()
	sortSummaries(out)
	var p Page
	if limit := q.limit(); len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		p.Next = &Cursor{At: last.UpdatedAt, ThreadID: last.ThreadID}
	}
	p.Threads = out
	return p, nil
}

// Summary implements Store.
func (s *MemoryStore) Summary(_ context.Context, user, threadID string) (Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := memKey{user, threadID}
	e, ok := s.live(k)
	if !ok {
		return Summary{}, ErrNotFound
	}
	return s.summary(k, e), nil
}

// summary describes a live entry; s.mu is held.
func (s *MemoryStore) summary(k memKey, e *memEntry) Summary {
	_, locked := s.locks[k]
	sum := Summary{ThreadID: k.thread, AgentID: e.agentID, MessageCount: e.count, UpdatedAt: e.updated,
		Title: listTitle(e.name, e.title), Status: statusOf(locked, e.mark)}
	if locked {
		sum.ActiveRunID = e.run
	}
	return sum
}

// sortSummaries puts threads in the list order: updated time, then id,
// both descending (the order of a Redis sorted set read in reverse).
func sortSummaries(out []Summary) {
	sort.Slice(out, func(i, j int) bool {
		if !out[i].UpdatedAt.Equal(out[j].UpdatedAt) {
			return out[i].UpdatedAt.After(out[j].UpdatedAt)
		}
		return out[i].ThreadID > out[j].ThreadID
	})
}

// Acquire implements Locker. In one process a lease cannot be lost, and a
// waiting Acquire polls because the wait is rare and short.
func (s *MemoryStore) Acquire(ctx context.Context, user, threadID string, wait bool) (Lease, error) {
	k := memKey{user, threadID}
	for {
		s.mu.Lock()
		if _, held := s.locks[k]; !held {
			tok := ids.New("lk_")
			s.locks[k] = tok
			s.mu.Unlock()
			return &memLease{s: s, k: k, token: tok, lost: make(chan struct{})}, nil
		}
		s.mu.Unlock()
		if !wait {
			return nil, ErrBusy
		}
		if err := pause(ctx, DefaultRetryInterval); err != nil {
			return nil, err
		}
	}
}

// Holder implements Locker.
func (s *MemoryStore) Holder(_ context.Context, user, threadID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.locks[memKey{user, threadID}], nil
}

type memLease struct {
	s     *MemoryStore
	k     memKey
	token string
	lost  chan struct{}
}

func (l *memLease) Token() string         { return l.token }
func (l *memLease) Lost() <-chan struct{} { return l.lost }
func (l *memLease) Release(context.Context) error {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.s.locks[l.k] == l.token {
		delete(l.s.locks, l.k)
	}
	return nil
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
