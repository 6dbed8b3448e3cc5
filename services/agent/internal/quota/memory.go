package quota

import (
	"context"
	"sync"
	"time"
)

// Memory is the Store of one process: its counts die with it, so members
// need no lease.
type Memory struct {
	mu   sync.Mutex
	sets map[string]map[string]struct{}
	// events are the times of counted events (Rates) by user and kind.
	events map[string][]time.Time
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{sets: map[string]map[string]struct{}{}} }

func memKey(user, kind string) string { return user + "\x00" + kind }

// Take implements Store.
func (m *Memory) Take(_ context.Context, user, kind, id string, max int64) (int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := m.sets[memKey(user, kind)]
	if _, held := set[id]; held {
		return int64(len(set)), true, nil
	}
	if max > 0 && int64(len(set)) >= max {
		return int64(len(set)), false, nil
	}
	if set == nil {
		set = map[string]struct{}{}
		m.sets[memKey(user, kind)] = set
	}
	set[id] = struct{}{}
	return int64(len(set)), true, nil
}

// Renew implements Store; members of one process do not expire.
func (m *Memory) Renew(context.Context, string, string, string) error { return nil }

// Drop implements Store.
func (m *Memory) Drop(_ context.Context, user, kind, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey(user, kind)
	delete(m.sets[k], id)
	if len(m.sets[k]) == 0 {
		delete(m.sets, k)
	}
	return nil
}

// Lease implements Store.
func (m *Memory) Lease() time.Duration { return 0 }

// Count implements Rates: the times of a user's events of a kind, oldest
// first, trimmed to the window at each count.
func (m *Memory) Count(_ context.Context, user, kind string, max int64, window time.Duration) (int64, bool, time.Duration, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string][]time.Time{}
	}
	k := memKey(user, kind)
	ev := m.events[k]
	i := 0
	for i < len(ev) && !ev[i].After(now.Add(-window)) {
		i++
	}
	ev = ev[i:]
	if max > 0 && int64(len(ev)) >= max {
		m.events[k] = ev
		return int64(len(ev)), false, ev[0].Add(window).Sub(now), nil
	}
	ev = append(ev, now)
	m.events[k] = ev
	return int64(len(ev)), true, 0, nil
}
