// Package tasks runs tool calls in the background: the call answers a task
// id at once and the loop goes on, while this replica runs the tool (a
// native Go tool) or polls the status URL an HTTP tool answered, under a
// lease kept in a shared store. Another replica takes over a task whose
// lease ran out (its replica died): native tools start again, HTTP tasks are
// polled again. A finished task's result reaches its thread as a note, once.
package tasks

import (
	"time"

	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
)

// Statuses of a task; every one but StatusRunning is final.
const (
	StatusRunning   = "running"
	StatusDone      = "done"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Kinds of a task: how it is carried on.
const (
	// KindNative is a Go tool of the embedding program run in a goroutine;
	// a replica that takes it over runs it again from the start.
	KindNative = "native"
	// KindHTTP is an external tool registered async: its call answered a
	// status URL, which the poller reads until the task is finished.
	KindHTTP = "http"
	// KindSubagent is a call of the task tool with background set: a child
	// run, carried on by the run executor (Manager.Carry); a replica that
	// takes it over runs the child again on the child's own thread.
	KindSubagent = "subagent"
)

// Defaults; each has an option.
const (
	// DefaultLease is how long a replica owns a running task without
	// renewing it; a replica that dies loses its tasks after this.
	DefaultLease = 15 * time.Second
	// DefaultMaxAttempts is how many times a task is started (taken over
	// included) before it fails.
	DefaultMaxAttempts = 3
	// DefaultPollMin and DefaultPollMax bound the poller's backoff of an
	// HTTP task: the first poll after 0.5 s, doubling to 30 s.
	DefaultPollMin = 500 * time.Millisecond
	DefaultPollMax = 30 * time.Second
	// DefaultRetention is how long a finished task is kept.
	DefaultRetention = 24 * time.Hour
	// DefaultMaxResultChars cuts a task's result kept in the store and in
	// the thread's note.
	DefaultMaxResultChars = 80_000
	// DefaultMaxRunning bounds the running tasks of one user.
	DefaultMaxRunning = 32
)

// Errors of the store and the manager.
var (
	// ErrNotFound: no task with that id for this user (another user's task
	// is not found either).
	ErrNotFound = errcode.New(codes.NotFound, "task not found")
	// ErrTooMany: the user has DefaultMaxRunning (or the configured bound)
	// tasks running.
	ErrTooMany = errcode.New(codes.ResourceExhausted, "too many background tasks running")
)

// Task is one background tool call and its state.
type Task struct {
	ID         string         `json:"id"`
	User       string         `json:"user"`
	ThreadID   string         `json:"thread_id"`
	RunID      string         `json:"run_id"`
	ToolCallID string         `json:"tool_call_id"`
	Tool       string         `json:"tool"`
	Kind       string         `json:"kind"`
	Args       map[string]any `json:"args,omitempty"`
	// StatusURL is what an HTTP task's call answered; the poller reads it.
	StatusURL string `json:"status_url,omitempty"`
	// Subagent is the child of a KindSubagent task.
	Subagent  *Subagent `json:"subagent,omitempty"`
	CreatedAt time.Time `json:"created_at"`

	// The fields below change while the task lives; the store keeps them
	// apart from the fixed part above.
	Status string `json:"-"`
	// Result is the tool's output once done, or why it failed or was cancelled.
	Result string `json:"-"`
	// Attempts counts the starts of the task (1, then one per take-over).
	Attempts int `json:"-"`
	// Owner is the replica running it (empty once finished).
	Owner string `json:"-"`
	// Delivered is set once the result has been given to the thread.
	Delivered bool      `json:"-"`
	UpdatedAt time.Time `json:"-"`
}

// Subagent is a sub-agent run as a task (KindSubagent): all that any
// replica needs to run it, first or again after a take-over.
type Subagent struct {
	// AgentID is the parent's agent: the child's configuration is read from
	// it, and the child works in its sandbox.
	AgentID string `json:"agent_id"`
	// Orgs are the user's organisations when the task started: the child
	// searches their knowledge collections as a run of the user would.
	Orgs []string `json:"orgs,omitempty"`
	// Name is the sub-agent type (general-purpose or a declared one).
	Name string `json:"name"`
	// Goal is the child's only input message.
	Goal string `json:"goal"`
	// Depth is the child's depth (1 for a child of a top-level run).
	Depth int `json:"depth"`
	// ThreadID is the child's thread, which a take-over continues.
	ThreadID string `json:"thread_id"`
	// RunID names the child in its events.
	RunID string `json:"run_id"`
}

// Finished reports whether the task reached a final status.
func (t *Task) Finished() bool { return t.Status != StatusRunning }

func (t *Task) clone() *Task {
	c := *t
	return &c
}
