// Package loop is the agent runtime: the message, state and config
// types, the Messages chain, the Tool and Hook interfaces, and the loop that
// runs an LLM ↔ tool conversation through the hooks.
package loop

import (
	"time"

	"github.com/wick-agent/wick/llm"
)

// ToolResult is the outcome of executing a tool; it becomes a "tool" message.
type ToolResult struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Output     string `json:"output"`
	Error      string `json:"error,omitempty"` // set only on failure
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

// StreamEvent is an event of a run, sent to the client.
type StreamEvent struct {
	Event    string `json:"event"`
	Name     string `json:"name,omitempty"` // tool name or model name
	RunID    string `json:"run_id,omitempty"`
	Data     any    `json:"data,omitempty"`
	ThreadID string `json:"thread_id,omitempty"` // set on "done"
	// ID is the event's position in the run's log (SSE id), set by the run log.
	ID string `json:"id,omitempty"`
}

// Event names. Clients switch on them, so a name is added, never renamed.
const (
	EventChatModelStream = "on_chat_model_stream"
	// EventThoughtStream is a piece of the agent's reasoning, shown apart
	// from its answer (an ACP agent's thought chunks).
	EventThoughtStream = "on_thought_stream"
	EventToolStart     = "on_tool_start"
	EventToolEnd       = "on_tool_end"
	EventDone          = "done"
	EventError         = "error"
	EventTodos         = "on_todos"
	// EventKnowledge reports the knowledge chunks injected before a model call.
	EventKnowledge = "on_knowledge_retrieval"
	EventInterrupt = "on_interrupt"
	EventUsage     = "on_usage"
)
