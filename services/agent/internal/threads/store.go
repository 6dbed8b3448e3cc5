// Package threads keeps conversation state (loop.AgentState) per user and
// thread: in memory for a single process, in Redis when replicas share it.
// Saves are versioned so a stale writer gets ErrConflict instead of silently
// overwriting a newer state, and Locker gives each thread one run at a time
// across replicas.
package threads

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/errcode"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/quota"
)

// Defaults of the thread stores.
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
	ErrNotFound = errcode.New(codes.NotFound, "thread not found")
	// ErrConflict means the thread was saved by someone else since it was
	// loaded; the caller must reload instead of overwriting.
	ErrConflict = errcode.New(codes.Aborted, "thread was changed by another writer")
	// ErrBusy means another run holds the thread.
	ErrBusy = errcode.New(codes.FailedPrecondition, "thread is busy with another run")
	// ErrLeaseLost means a lock's lease expired or was taken over.
	ErrLeaseLost = errcode.New(codes.Aborted, "thread lock lease lost")
	// ErrInvalidHistory means Save was given messages that break
	// loop.Messages.ValidateHistory; the loop never produces such a
	// history, so it is a bug of the caller, and nothing is stored.
	ErrInvalidHistory = errcode.New(codes.Internal, "refusing to save an invalid thread history")
	// ErrCorrupt means a stored thread cannot be decoded or its history
	// breaks loop.Messages.ValidateHistory (tool calls without results
	// aside, which a run repairs); it cannot be continued, only
	// deleted.
	ErrCorrupt = errcode.New(codes.DataLoss, "stored thread is corrupted")
	// errMoved means a save meant to append found another messages array
	// than the one it appends to; it is then written whole.
	errMoved = errors.New("stored messages were replaced")
)

// Summary describes a thread without its messages.
type Summary struct {
	ThreadID     string
	AgentID      string
	MessageCount int
	UpdatedAt    time.Time
	// Title is the title the user gave (Store.Rename), else the first
	// user message, cut (see title); "" for threads saved before titles
	// were kept.
	Title string
	// Status is one of the Status constants.
	Status string
	// ActiveRunID is the run holding the thread (Status running or
	// interrupted), as it marked itself (Store.MarkRun); "" otherwise.
	ActiveRunID string
}

// Statuses of a Summary: what the thread is doing, known from its run lock
// and the mark its last run left (Store.MarkRun), so List never decodes a
// state.
const (
	StatusIdle    = "idle"
	StatusRunning = "running"
	// StatusInterrupted is a run that holds the thread and waits for
	// approval of tool calls. The saved state never shows it (the loop
	// saves only answered tool calls), so the run marks it.
	StatusInterrupted = "interrupted"
	// StatusError is a thread no run holds whose last run failed, or died
	// while waiting for approval.
	StatusError = "error"
)

// Marks a run leaves on its thread with Store.MarkRun.
const (
	// MarkNone clears the mark: the run goes on, or ended well.
	MarkNone = ""
	// MarkWaiting says the run waits for approval.
	MarkWaiting = "waiting"
	// MarkFailed says the run failed.
	MarkFailed = "failed"
)

// statusOf is a thread's Status from whether its run lock is held and its
// run mark. A waiting mark on a thread nobody holds was left by a run that
// died waiting: its run record is closed as failed, so the thread is too.
func statusOf(locked bool, mark string) string {
	switch {
	case locked && mark == MarkWaiting:
		return StatusInterrupted
	case locked:
		return StatusRunning
	case mark == MarkFailed || mark == MarkWaiting:
		return StatusError
	default:
		return StatusIdle
	}
}

// MaxTitleRunes bounds a Summary's Title, the "…" that ends a cut one
// included: enough for a list row.
const MaxTitleRunes = 80

// title is the thread's title: its first user message's text with runs of
// whitespace collapsed to one space, cut on a rune boundary to
// MaxTitleRunes; "" when there is no user message.
func title(msgs []llm.Message) string {
	for _, m := range msgs {
		if m.Role != llm.RoleUser {
			continue
		}
		t := strings.Join(strings.Fields(m.Content), " ")
		if utf8.RuneCountInString(t) <= MaxTitleRunes {
			return t
		}
		r := []rune(t)[:MaxTitleRunes-1]
		return strings.TrimRight(string(r), " ") + "…"
	}
	return ""
}

// listTitle is the title List shows: the one the user gave, else the one
// taken from the messages.
func listTitle(named, derived string) string {
	if named != "" {
		return named
	}
	return derived
}

// Store persists thread states per user. States returned are the caller's
// own copies. Every access refreshes the thread's sliding TTL.
type Store interface {
	// LoadOrCreate returns the thread, or a new empty state with Version 0.
	LoadOrCreate(ctx context.Context, user, threadID string) (*loop.AgentState, error)
	// Get returns the thread or ErrNotFound.
	Get(ctx context.Context, user, threadID string) (*loop.AgentState, error)
	// Save stores state if the stored version still equals state.Version (0
	// for a thread that does not exist yet) and the thread's run lock is held
	// by fence, a Lease's token ("" when the writer holds none: then nobody
	// may hold it). It then increments state.Version and sets
	// state.UpdatedAt. Otherwise it returns ErrConflict (another version) or
	// ErrLeaseLost (another holder) and stores nothing: a run whose lease
	// passed to another replica can never overwrite what that replica wrote,
	// even with the version it loaded.
	//
	// b bounds the save: a save that would create a thread beyond
	// b.Threads is b.Threads.Refuse, and one whose encoded state is larger
	// than b.MaxBytes is a *TooLargeError; either stores nothing.
	Save(ctx context.Context, user string, state *loop.AgentState, fence string, b Bounds) error
	// Count returns how many threads the user has (expired ones are not
	// counted).
	Count(ctx context.Context, user string) (int64, error)
	// Delete removes the thread; deleting a missing thread is not an error.
	Delete(ctx context.Context, user, threadID string) error
	// List returns one page of the user's threads in the list order
	// (Cursor), those q keeps.
	List(ctx context.Context, user string, q ListQuery) (Page, error)
	// Summary describes one thread as List would, or returns ErrNotFound.
	Summary(ctx context.Context, user, threadID string) (Summary, error)
	// Rename gives the thread a title that List shows instead of the one
	// taken from its messages, or with "" drops it. The title is kept apart
	// from the state: it changes neither the version nor UpdatedAt, so a
	// run holding the thread saves on without a conflict and without
	// overwriting it. A missing thread is ErrNotFound.
	Rename(ctx context.Context, user, threadID, title string) error
	// MarkRun sets the mark (a Mark constant) and the id of the run
	// holding the thread's lock with fence, from which List tells a
	// waiting or failed run, and which run holds the thread. Like Save it
	// writes nothing and returns ErrLeaseLost when fence does not hold the
	// lock; a thread not saved yet is not marked (nil): List does not show
	// it.
	MarkRun(ctx context.Context, user, threadID, fence, runID, mark string) error
}

// Bounds limit one Save; zero values do not limit.
type Bounds struct {
	// Threads bounds the threads of a user: it refuses a save that creates
	// a thread when the user has Threads.Max already.
	Threads quota.Limit
	// MaxBytes bounds one thread's encoded state.
	MaxBytes int64
}

// TooLargeError refuses a save whose encoded state is larger than
// Bounds.MaxBytes. The caller may make the state smaller (cut old tool
// results) and save again.
type TooLargeError struct {
	ThreadID string
	// Size is the encoded state's size; Max the bound.
	Size, Max int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("thread %s would store %d bytes, over its bound of %d", e.ThreadID, e.Size, e.Max)
}

// checkSize refuses an encoded state of size bytes over b.MaxBytes.
func (b Bounds) checkSize(threadID string, size int64) error {
	if b.MaxBytes > 0 && size > b.MaxBytes {
		return &TooLargeError{ThreadID: threadID, Size: size, Max: b.MaxBytes}
	}
	return nil
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

// decodeWhole reads a thread stored whole, as the Redis store wrote them
// before threads were stored in two parts (history.go); such a thread is
// written in two parts by its next save.
func decodeWhole(threadID string, data []byte, version int64) (*loop.AgentState, error) {
	var st loop.AgentState
	if err := unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("load thread %s: %w: %w", threadID, ErrCorrupt, err)
	}
	if _, err := checkLoaded(threadID, &st, version); err != nil {
		return nil, err
	}
	return &st, nil
}

func newState(threadID string) *loop.AgentState {
	return &loop.AgentState{ThreadID: threadID, Messages: []llm.Message{}}
}
