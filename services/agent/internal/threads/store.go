// Package threads keeps conversation state (loop.AgentState) per user and
// thread: in memory for a single process, in Redis when replicas share it.
// Saves are versioned so a stale writer gets ErrConflict instead of silently
// overwriting a newer state, and Locker gives each thread one run at a time
// across replicas.
package threads

import (
	"context"
	"errors"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// Defaults from the seed's thread store.
const (
	// DefaultTTL is how long an untouched thread lives (sliding).
	DefaultTTL = time.Hour
	// DefaultSweepInterval is how often the memory store evicts idle threads.
	DefaultSweepInterval = 5 * time.Minute
	// DefaultLease is how long a run lock lives without renewal, so a crashed
	// holder blocks its thread for at most this long.
	DefaultLease = 15 * time.Second
	// DefaultRetryInterval is how often a waiting Acquire retries.
	DefaultRetryInterval = 50 * time.Millisecond
)

// Errors of the stores.
var (
	ErrNotFound = errors.New("thread not found")
	// ErrConflict means the thread was saved by someone else since it was
	// loaded; the caller must reload instead of overwriting.
	ErrConflict = errors.New("thread was changed by another writer")
	// ErrBusy means another run holds the thread.
	ErrBusy = errors.New("thread is busy with another run")
	// ErrLeaseLost means a lock's lease expired or was taken over.
	ErrLeaseLost = errors.New("thread lock lease lost")
)

// Summary describes a thread without its messages.
type Summary struct {
	ThreadID     string
	AgentID      string
	MessageCount int
	UpdatedAt    time.Time
}

// Store persists thread states per user. States returned are the caller's
// own copies. Every access refreshes the thread's sliding TTL.
type Store interface {
	// LoadOrCreate returns the thread, or a new empty state with Version 0.
	LoadOrCreate(ctx context.Context, user, threadID string) (*loop.AgentState, error)
	// Get returns the thread or ErrNotFound.
	Get(ctx context.Context, user, threadID string) (*loop.AgentState, error)
	// Save stores state if the stored version still equals state.Version (0
	// for a thread that does not exist yet), then increments state.Version and
	// sets state.UpdatedAt. Otherwise it returns ErrConflict and stores nothing.
	Save(ctx context.Context, user string, state *loop.AgentState) error
	// Delete removes the thread; deleting a missing thread is not an error.
	Delete(ctx context.Context, user, threadID string) error
	// List returns the user's threads, newest first, limited to agentID when set.
	List(ctx context.Context, user, agentID string) ([]Summary, error)
}

// Lease is a held run lock.
type Lease interface {
	// Token identifies the holder.
	Token() string
	// Lost is closed when the lease could not be renewed: another replica may
	// now hold the thread, so the run must stop writing.
	Lost() <-chan struct{}
	// Release gives the lock up if this lease still holds it.
	Release(ctx context.Context) error
}

// Locker hands out per-thread run locks.
type Locker interface {
	// Acquire takes the thread's lock. With wait it retries until ctx ends;
	// without, it returns ErrBusy at once when the lock is held.
	Acquire(ctx context.Context, user, threadID string, wait bool) (Lease, error)
	// Holder returns the token of the lock's current holder, or "".
	Holder(ctx context.Context, user, threadID string) (string, error)
}

func newState(threadID string) *loop.AgentState {
	return &loop.AgentState{ThreadID: threadID, Messages: []llm.Message{}}
}
