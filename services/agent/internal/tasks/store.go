package tasks

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Store keeps tasks and their leases; MemoryStore serves one process,
// RedisStore every replica. Every change of a running task is conditional on
// its state, so two replicas never both finish, take over or deliver one task.
type Store interface {
	// Create stores a running task owned by t.Owner until now+lease. It
	// refuses (ErrTooMany) when the user already has maxRunning running
	// tasks (0: no bound).
	Create(ctx context.Context, t *Task, lease time.Duration, maxRunning int) error
	// Get returns the user's task; another user's is ErrNotFound.
	Get(ctx context.Context, user, id string) (*Task, error)
	// List returns the tasks of a user's thread, oldest first.
	List(ctx context.Context, user, threadID string) ([]*Task, error)
	// Renew extends the leases of the owner's running tasks and returns the
	// ids it no longer holds (finished, cancelled or taken over).
	Renew(ctx context.Context, owner string, ids []string, lease time.Duration) (lost []string, err error)
	// Claim takes up to limit running tasks whose lease ran out, counting
	// one more attempt each. Those past maxAttempts are failed instead and
	// returned finished, for the caller to announce.
	Claim(ctx context.Context, owner string, lease time.Duration, maxAttempts, limit int) ([]*Task, error)
	// Finish gives the owner's running task its final status and result;
	// false when the owner no longer holds it.
	Finish(ctx context.Context, owner, id, status, result string) (bool, error)
	// Cancel marks the user's running task cancelled and returns it; a
	// finished task is returned as it is.
	Cancel(ctx context.Context, user, id, reason string) (*Task, error)
	// TakeUndelivered returns the finished tasks of a thread whose result
	// was not given to it yet, and marks them given: each result is
	// delivered once, whichever run asks first.
	TakeUndelivered(ctx context.Context, user, threadID string) ([]*Task, error)
}

// MemoryStore is a Store for one process.
type MemoryStore struct {
	mu        sync.Mutex
	tasks     map[string]*memTask
	retention time.Duration
	now       func() time.Time
}

type memTask struct {
	*Task
	expires time.Time // lease end while running; removal time once finished
}

// NewMemoryStore returns an empty store keeping finished tasks for DefaultRetention.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{tasks: map[string]*memTask{}, retention: DefaultRetention, now: time.Now}
}

func (s *MemoryStore) sweep(now time.Time) {
	for id, t := range s.tasks {
		if t.Finished() && now.After(t.expires) {
			delete(s.tasks, id)
		}
	}
}

// Create implements Store.
func (s *MemoryStore) Create(_ context.Context, t *Task, lease time.Duration, maxRunning int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.sweep(now)
	if maxRunning > 0 {
		n := 0
		for _, o := range s.tasks {
			if o.User == t.User && !o.Finished() {
				n++
			}
		}
		if n >= maxRunning {
			return ErrTooMany
		}
	}
	c := t.clone()
	c.Status, c.Attempts, c.UpdatedAt = StatusRunning, 1, now
	s.tasks[t.ID] = &memTask{Task: c, expires: now.Add(lease)}
	return nil
}

// Get implements Store.
func (s *MemoryStore) Get(_ context.Context, user, id string) (*Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok || t.User != user {
		return nil, ErrNotFound
	}
	return t.clone(), nil
}

// List implements Store.
func (s *MemoryStore) List(_ context.Context, user, threadID string) ([]*Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Task
	for _, t := range s.tasks {
		if t.User == user && t.ThreadID == threadID {
			out = append(out, t.clone())
		}
	}
	sortTasks(out)
	return out, nil
}

func sortTasks(ts []*Task) {
	sort.Slice(ts, func(i, j int) bool {
		if !ts[i].CreatedAt.Equal(ts[j].CreatedAt) {
			return ts[i].CreatedAt.Before(ts[j].CreatedAt)
		}
		return ts[i].ID < ts[j].ID
	})
}

// Renew implements Store.
func (s *MemoryStore) Renew(_ context.Context, owner string, ids []string, lease time.Duration) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var lost []string
	for _, id := range ids {
		t, ok := s.tasks[id]
		if !ok || t.Finished() || t.Owner != owner {
			lost = append(lost, id)
			continue
		}
		t.expires = now.Add(lease)
	}
	return lost, nil
}

// Claim implements Store.
func (s *MemoryStore) Claim(_ context.Context, owner string, lease time.Duration, maxAttempts, limit int) ([]*Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var out []*Task
	for _, t := range s.tasks {
		if len(out) >= limit {
			break
		}
		if t.Finished() || !now.After(t.expires) {
			continue
		}
		t.Attempts++
		t.UpdatedAt = now
		if t.Attempts > maxAttempts {
			t.Status, t.Result, t.Owner = StatusFailed, failedAttempts(maxAttempts), ""
			t.expires = now.Add(s.retention)
		} else {
			t.Owner = owner
			t.expires = now.Add(lease)
		}
		out = append(out, t.clone())
	}
	return out, nil
}

// Finish implements Store.
func (s *MemoryStore) Finish(_ context.Context, owner, id, status, result string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok || t.Finished() || t.Owner != owner {
		return false, nil
	}
	now := s.now()
	t.Status, t.Result, t.Owner, t.UpdatedAt = status, result, "", now
	t.expires = now.Add(s.retention)
	return true, nil
}

// Cancel implements Store.
func (s *MemoryStore) Cancel(_ context.Context, user, id, reason string) (*Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok || t.User != user {
		return nil, ErrNotFound
	}
	if !t.Finished() {
		now := s.now()
		t.Status, t.Result, t.Owner, t.UpdatedAt = StatusCancelled, reason, "", now
		t.expires = now.Add(s.retention)
	}
	return t.clone(), nil
}

// TakeUndelivered implements Store.
func (s *MemoryStore) TakeUndelivered(_ context.Context, user, threadID string) ([]*Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Task
	for _, t := range s.tasks {
		if t.User == user && t.ThreadID == threadID && t.Finished() && !t.Delivered {
			t.Delivered = true
			out = append(out, t.clone())
		}
	}
	sortTasks(out)
	return out, nil
}
