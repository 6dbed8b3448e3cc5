// Package loop is the agent runtime: the message, state and config
// types, the Messages chain, the Tool and Hook interfaces, and the loop that
// runs an LLM ↔ tool conversation through the hooks.
package loop

import (
	"encoding/json"
	"time"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/runevent"
)

// ToolResult is the outcome of executing a tool; it becomes a "tool" message.
type ToolResult struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Output     string `json:"output"`
	Error      string `json:"error,omitempty"` // set only on failure
	// timedOut says the call failed because the loop's tool timeout ended it.
	timedOut bool
}

// Todo is one task item managed by the TodoList hook.
type Todo struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"` // "pending", "in_progress", "done"
}

// Todo statuses.
const (
	TodoPending    = "pending"
	TodoInProgress = "in_progress"
	TodoDone       = "done"
)

// AgentState is the full conversation state of a thread, persisted by the
// thread store between runs.
type AgentState struct {
	ThreadID string            `json:"thread_id"`
	AgentID  string            `json:"agent_id,omitempty"`
	Messages []llm.Message     `json:"messages"`
	Todos    []Todo            `json:"todos,omitempty"`
	Files    map[string]string `json:"files,omitempty"` // path → content of files written by the agent
	// ACPSessionID is the session of the external ACP agent that backs the
	// thread's agent (AgentConfig.ACP), loaded again by the next run.
	ACPSessionID string `json:"acp_session_id,omitempty"`
	// ACPAlways holds the thread's "always" answers to the ACP agent's
	// permission requests: tool kind → the option kind chosen
	// (allow_always or reject_always), answered without asking again.
	ACPAlways map[string]string `json:"acp_always,omitempty"`
	// ApprovalAlways holds the thread's "always" decisions on the calls of
	// an interactive agent: tool name → ActionApprove or ActionReject,
	// applied to later calls of that tool without asking again.
	ApprovalAlways map[string]string `json:"approval_always,omitempty"`
	// Version is the store's optimistic-concurrency version.
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updated_at"`
	// Stored is the thread store's own note of which messages it holds
	// for this state, set when the store loads or saves it, so that the
	// next save can append only the messages added since instead of
	// rewriting the whole history. Opaque to everyone else; nil for a
	// state the store has not seen. Never serialized.
	Stored any `json:"-"`

	// toolRegistry is rebuilt each run by BeforeAgent hooks, never serialized.
	toolRegistry *toolRegistry
}

// StreamEvent is an event of a run, sent to the client. Its kind is the
// field set in Data (runevent.Kind), so a kind and its data never disagree.
type StreamEvent struct {
	Name     string // tool name or model name
	RunID    string
	Data     *agentv1.RunEventData // its kind is the event's
	ThreadID string                // set on "done"
	// ID is the event's position in the run's log (SSE id), set by the run log.
	ID string
}

// Event is the event's kind: the name of the field set in Data.
func (e StreamEvent) Event() string { return runevent.Kind(e.Data) }

// MarshalJSON writes the event as JSON clients get it, which is also how
// the run log stores it: {event, name, run_id, data, thread_id, id}.
func (e StreamEvent) MarshalJSON() ([]byte, error) {
	return runevent.AppendEvent(nil, &agentv1.StreamEvent{
		Event: e.Event(), Name: e.Name, RunId: e.RunID, Payload: e.Data, ThreadId: e.ThreadID, Id: e.ID,
	})
}

// UnmarshalJSON reads an event MarshalJSON wrote, or one an earlier version
// logged with the same JSON.
func (e *StreamEvent) UnmarshalJSON(b []byte) error {
	ev, err := runevent.UnmarshalEvent(b)
	if err != nil {
		return err
	}
	*e = StreamEvent{Name: ev.GetName(), RunID: ev.GetRunId(), Data: ev.GetPayload(), ThreadID: ev.GetThreadId(), ID: ev.GetId()}
	return nil
}

// DataMap is the event's data as plain JSON values (numbers are float64),
// as JSON clients see it; nil when there is none.
func (e StreamEvent) DataMap() map[string]any {
	if e.Data.GetKind() == nil {
		return nil
	}
	b, err := runevent.MarshalData(e.Data)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}
