package usage

import (
	"context"
	"sync"
	"time"
)

// Memory is the Store of one process. It keeps Retention of days, like the
// Redis store, and forgets older ones as new calls come.
type Memory struct {
	mu sync.Mutex
	// byDay holds day → user → agent, model → counts.
	byDay map[string]map[string]map[[2]string]Counts
}

// NewMemory returns an empty store.
func NewMemory() *Memory { return &Memory{byDay: map[string]map[string]map[[2]string]Counts{}} }

// Record implements Recorder.
func (m *Memory) Record(_ context.Context, c Call) error {
	if err := c.check(); err != nil {
		return err
	}
	day := Day(c.At).Format(DayLayout)
	m.mu.Lock()
	defer m.mu.Unlock()
	users, ok := m.byDay[day]
	if !ok {
		users = map[string]map[[2]string]Counts{}
		m.byDay[day] = users
		m.forget(Day(c.At).Add(-Retention))
	}
	byKey, ok := users[c.User]
	if !ok {
		byKey = map[[2]string]Counts{}
		users[c.User] = byKey
	}
	k := [2]string{agentOf(c.Agent), c.Model}
	byKey[k] = byKey[k].Add(c.Counts)
	return nil
}

// forget drops the days before cutoff.
func (m *Memory) forget(cutoff time.Time) {
	old := cutoff.Format(DayLayout)
	for day := range m.byDay {
		if day < old {
			delete(m.byDay, day)
		}
	}
}

// Rows implements Store.
func (m *Memory) Rows(_ context.Context, user string, from, to time.Time) ([]Row, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var rows []Row
	for _, d := range days(from, to) {
		day := d.Format(DayLayout)
		for u, byKey := range m.byDay[day] {
			if user != "" && u != user {
				continue
			}
			for k, c := range byKey {
				rows = append(rows, Row{Day: day, User: u, Agent: k[0], Model: k[1], Counts: c})
			}
		}
	}
	sortRows(rows)
	return rows, nil
}

// Month implements Store.
func (m *Memory) Month(ctx context.Context, user string, t time.Time) (Counts, error) {
	start := MonthStart(t)
	rows, err := m.Rows(ctx, user, start, start.AddDate(0, 1, -1))
	var sum Counts
	for _, r := range rows {
		sum = sum.Add(r.Counts)
	}
	return sum, err
}
