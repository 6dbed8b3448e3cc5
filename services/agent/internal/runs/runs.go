// Package runs keeps what other replicas need to know about a run: its
// record (status, pending approvals), its event log (so a client can re-join
// from the last event id it saw, on any replica), and the requests addressed
// to the replica running it (cancel, approval decisions). In memory for one
// process; Redis hashes, streams and pub/sub when replicas share them.
package runs

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/errcode"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// Run statuses.
const (
	StatusRunning = "running"
	StatusWaiting = "waiting_approval"
	StatusDone    = "done"
	// StatusStopped is a run stopped gracefully at a step boundary, which a
	// new run may continue.
	StatusStopped   = "stopped"
	StatusCancelled = "cancelled"
	StatusFailed    = "failed"
)

// Defaults of the run log.
const (
	// DefaultMaxEvents caps one run's log (Redis trims approximately).
	DefaultMaxEvents = 100_000
	// DefaultRetention is how long a finished run and its log are kept: long
	// enough to re-join after a disconnect; token-level logs are too large to
	// keep for long (the thread keeps the conversation).
	DefaultRetention = 10 * time.Minute
	// DefaultLiveTTL bounds how long a running run's keys live without an event.
	DefaultLiveTTL = 24 * time.Hour
	// DefaultStoppedRetention is how long a stopped run's record is kept, so
	// that it can still be continued (its event log goes after
	// DefaultRetention, as any run's; its thread may expire sooner).
	DefaultStoppedRetention = 24 * time.Hour
)

// Errors of the package.
var (
	ErrNotFound   = errcode.New(codes.NotFound, "run not found")
	ErrBadEventID = errcode.New(codes.InvalidArgument, "invalid event id")
)

// Terminal reports whether status is final.
func Terminal(status string) bool {
	return status == StatusDone || status == StatusStopped || status == StatusCancelled || status == StatusFailed
}

// What a run waiting for the user waits for (Run.Awaiting).
const (
	AwaitApproval = "approval"
	AwaitAnswer   = "answer"
)

// Run is a run's record.
type Run struct {
	ID        string         `json:"id"`
	User      string         `json:"user"`
	ThreadID  string         `json:"thread_id"`
	AgentID   string         `json:"agent_id"`
	Status    string         `json:"status"`
	Pending   []llm.ToolCall `json:"pending,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
	// LeaseToken is the thread lock token the run holds: while the lock is
	// held by another token (or nobody), a "running" run is dead.
	LeaseToken string `json:"lease_token"`
	// Error is the failure message of a failed run.
	Error string `json:"error,omitempty"`
	// Code is the data.code of the error event that ended a failed or
	// cancelled run, from which a reader gives a log that lacks that event
	// its end.
	Code string `json:"code,omitempty"`
	// Awaiting says what a waiting run waits for: AwaitApproval of its
	// pending calls, or AwaitAnswer to its pending ask_user call.
	Awaiting string `json:"awaiting,omitempty"`
	// ThreadVersion is the thread's version as a stopped run saved it; a
	// run continues it only while the thread is still at that version.
	ThreadVersion int64 `json:"thread_version,omitempty"`
}

// Store keeps run records and the requests addressed to a run's owner.
type Store interface {
	// Put writes the record.
	Put(ctx context.Context, r *Run) error
	// Get returns the record or ErrNotFound.
	Get(ctx context.Context, runID string) (*Run, error)
	// Finish sets status, with the error message and code of a run that
	// failed, on a run that has not ended yet, and reports whether it did:
	// of the replicas that may close a run (its owner, one that found the
	// owner dead), one does.
	Finish(ctx context.Context, runID, status, msg, code string) (bool, error)
	// RequestCancel records a cancel request and nudges the owner.
	RequestCancel(ctx context.Context, runID string) error
	// CancelRequested reports whether a cancel was requested.
	CancelRequested(ctx context.Context, runID string) (bool, error)
	// RequestStop records a graceful stop request, which the run's owner
	// reads at its next step boundary.
	RequestStop(ctx context.Context, runID string) error
	// StopRequested reports whether a graceful stop was requested.
	StopRequested(ctx context.Context, runID string) (bool, error)
	// PutDecisions stores approval decisions for the owner and nudges it.
	PutDecisions(ctx context.Context, runID string, decisions []loop.Decision) error
	// TakeDecisions returns and removes stored decisions (nil when none).
	TakeDecisions(ctx context.Context, runID string) ([]loop.Decision, error)
	// Nudges delivers run ids that got a cancel or decisions, until ctx ends.
	// Delivery is best effort: owners also poll.
	Nudges(ctx context.Context) (<-chan string, error)
	// Unfinished returns the ids of the user's runs of agentID that were put
	// with a status that is not Terminal, on any replica. It may include runs
	// that ended since; callers check each record.
	Unfinished(ctx context.Context, user, agentID string) ([]string, error)
}

// Log is the per-run event log. Ids increase within a run.
type Log interface {
	// Append adds ev and returns its id.
	Append(ctx context.Context, runID string, ev loop.StreamEvent) (string, error)
	// End marks the log complete; readers stop after the last event.
	End(ctx context.Context, runID string) error
	// Read returns up to max events after the id after ("" = from the
	// start), waiting up to block for the first one. ended is true when the
	// log is complete and every event was returned.
	Read(ctx context.Context, runID, after string, max int, block time.Duration) (events []loop.StreamEvent, ended bool, err error)
	// Last returns the latest event, or nil when the log has none.
	Last(ctx context.Context, runID string) (*loop.StreamEvent, error)
	// AppendClosing adds the final event of a run closed by Finish (Append
	// may refuse events of a finished run).
	AppendClosing(ctx context.Context, runID string, ev loop.StreamEvent) (string, error)
}
