package langgraph

import (
	"sync"
	"time"
)

// What the API remembers that Wick's threads do not hold: threads created
// but not yet run (Wick makes a thread at its first run) and the interrupt
// a thread's run waits at (so a Command without the interrupt's id finds
// its run). It lives in this gateway's memory: behind several gateway
// replicas, a client that reaches another replica reads a created thread
// as unknown until its first run, and resumes with the interrupt's id
// (which names its run) instead of a bare value.
const (
	memoTTL = time.Hour
	memoMax = 10000
)

type memoKey struct{ user, threadID string }

type memoEntry struct {
	at        time.Time
	created   bool
	metadata  map[string]any
	interrupt string // interruptID of the run waiting on the thread
}

type memo struct {
	ttl time.Duration
	max int

	mu sync.Mutex
	m  map[memoKey]*memoEntry
}

func newMemo(ttl time.Duration, max int) *memo {
	return &memo{ttl: ttl, max: max, m: map[memoKey]*memoEntry{}}
}

// update changes (or adds) the thread's entry under the lock.
func (m *memo) update(user, threadID string, f func(*memoEntry)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	k := memoKey{user, threadID}
	e := m.m[k]
	if e == nil {
		if len(m.m) >= m.max {
			m.evict(now)
		}
		e = &memoEntry{}
		m.m[k] = e
	}
	e.at = now
	f(e)
}

// evict drops expired entries, and the oldest when none has expired.
func (m *memo) evict(now time.Time) {
	var oldest memoKey
	var oldestAt time.Time
	for k, e := range m.m {
		if now.Sub(e.at) > m.ttl {
			delete(m.m, k)
			continue
		}
		if oldestAt.IsZero() || e.at.Before(oldestAt) {
			oldest, oldestAt = k, e.at
		}
	}
	if len(m.m) >= m.max {
		delete(m.m, oldest)
	}
}

func (m *memo) get(user, threadID string) (memoEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.m[memoKey{user, threadID}]
	if e == nil || time.Since(e.at) > m.ttl {
		return memoEntry{}, false
	}
	return *e, true
}

func (m *memo) forget(user, threadID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, memoKey{user, threadID})
}
