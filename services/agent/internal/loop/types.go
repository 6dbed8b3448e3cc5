// Package loop is the agent runtime: the seed's message, state and config
// types, the Messages chain, the Tool and Hook interfaces, and the loop that
// runs an LLM ↔ tool conversation through the hooks.
package loop

import (
	"encoding/json"
	"fmt"
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

// Approval modes of AgentConfig.Approval.
const (
	ApprovalAutonomous  = "autonomous"
	ApprovalInteractive = "interactive"
)

// Wait strategies of AgentConfig.ToolWait, for a round of several tool
// calls: wait for every call, for the first result, or for more than half
// of them. Calls no longer needed are cancelled and answered as such.
const (
	ToolWaitAll      = "all"
	ToolWaitAny      = "any"
	ToolWaitMajority = "majority"
)

// CheckToolWait reports whether w is a wait strategy ("" is "all").
func CheckToolWait(w string) error {
	switch w {
	case "", ToolWaitAll, ToolWaitAny, ToolWaitMajority:
		return nil
	}
	return fmt.Errorf("%w: tool_wait %q (want %q, %q or %q)", ErrInvalidConfig, w, ToolWaitAll, ToolWaitAny, ToolWaitMajority)
}

// AgentConfig is an agent's YAML/JSON configuration; it decides which hooks
// are active.
type AgentConfig struct {
	Name         string      `yaml:"name" json:"name"`
	Model        any         `yaml:"model" json:"model"` // string | object | list of either
	SystemPrompt string      `yaml:"system_prompt" json:"system_prompt"`
	Tools        []string    `yaml:"tools" json:"tools"`
	Backend      *BackendCfg `yaml:"backend" json:"backend"`
	Skills       *SkillsCfg  `yaml:"skills" json:"skills"`
	Memory       *MemoryCfg  `yaml:"memory" json:"memory"`
	// ContextWindow is in tokens; 0 means DefaultContextWindow.
	ContextWindow int `yaml:"context_window" json:"context_window"`
	// MaxTurns bounds LLM↔tool rounds per run; 0 means DefaultMaxTurns.
	MaxTurns int `yaml:"max_turns" json:"max_turns,omitempty"`
	// Approval is "autonomous" (default) or "interactive" (each tool call is
	// approved by the user).
	Approval string `yaml:"approval" json:"approval,omitempty"`
	// Hooks toggles hooks by name; an absent name is enabled.
	Hooks map[string]bool `yaml:"hooks" json:"hooks,omitempty"`
	// Collections names the knowledge collections searched before each
	// model call and by the search_knowledge tool.
	Collections []string `yaml:"collections" json:"collections,omitempty"`
	// KnowledgeTopK is how many chunks are injected; 0 means 5.
	KnowledgeTopK int `yaml:"knowledge_top_k" json:"knowledge_top_k,omitempty"`
	// KnowledgeMinScore is the lowest score of an injected chunk; nil means
	// the default of the collection's embedding model.
	KnowledgeMinScore *float64 `yaml:"knowledge_min_score" json:"knowledge_min_score,omitempty"`
	// ToolWait is how a round of several tool calls waits for them:
	// "all" (default), "any" or "majority" (see the ToolWait constants).
	ToolWait string `yaml:"tool_wait" json:"tool_wait,omitempty"`
	// TaskFollowUp starts a run on an idle thread when one of its background
	// tasks finishes, so the model reacts to the result while the user is
	// away; otherwise the result waits for the thread's next run.
	TaskFollowUp bool `yaml:"task_follow_up" json:"task_follow_up,omitempty"`
	// Subagents declares the sub-agents the "task" tool can hand a goal
	// to, beside the built-in "general-purpose" one.
	Subagents []SubagentCfg `yaml:"subagents" json:"subagents,omitempty"`
	// MCPServers are Model Context Protocol servers whose tools the agent
	// gets, named "<server>__<tool>".
	MCPServers []MCPServerCfg `yaml:"mcp_servers" json:"mcp_servers,omitempty"`
	// ACP backs the agent with an external coding agent spoken to over the
	// Agent Client Protocol instead of this loop; nil for Wick's own loop.
	ACP *ACPCfg `yaml:"acp" json:"acp,omitempty"`
}

// ACPCfg is an external Agent Client Protocol agent: a program started
// inside the agent's sandbox for each run and spoken to over its stdin and
// stdout. The agent's MCPServers are handed to it.
type ACPCfg struct {
	// Command is the program, looked up in PATH unless it contains a
	// slash; Args are its arguments and Env extra variables (its API key).
	Command string            `yaml:"command" json:"command"`
	Args    []string          `yaml:"args" json:"args,omitempty"`
	Env     map[string]string `yaml:"env" json:"env,omitempty"`
	// StateDir is the agent's HOME, on the workspace volume so that its
	// own session files survive a restart of the container; empty means
	// DefaultACPStateDir/<agent id>.
	StateDir string `yaml:"state_dir" json:"state_dir,omitempty"`
}

// DefaultACPStateDir is the parent of an ACP agent's default state
// directory, on the workspace volume.
const DefaultACPStateDir = "/workspace/.wick/acp"

// MCPServerCfg is one MCP server of an agent: a program started inside the
// agent's sandbox and spoken to over its stdin and stdout (Command), or a
// streamable-HTTP endpoint (URL). Exactly one of the two is set.
type MCPServerCfg struct {
	// Name prefixes the server's tools: "<name>__<tool>".
	Name string `yaml:"name" json:"name"`
	// Command is the program run in the sandbox, looked up in PATH unless
	// it contains a slash; Args are its arguments and Env extra variables.
	Command string            `yaml:"command" json:"command,omitempty"`
	Args    []string          `yaml:"args" json:"args,omitempty"`
	Env     map[string]string `yaml:"env" json:"env,omitempty"`
	// URL is the streamable-HTTP endpoint; Headers are sent with every
	// request to it (an API key, typically).
	URL     string            `yaml:"url" json:"url,omitempty"`
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// Timeout bounds one tool call; 0 means the default (60 s).
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
}

// SubagentCfg declares a sub-agent: a child agent that runs one goal on a
// thread of its own, in the parent's sandbox, and answers the parent's
// "task" call with its final reply.
type SubagentCfg struct {
	// Name is what the task tool's subagent_type names.
	Name string `yaml:"name" json:"name"`
	// Description tells the parent's model when to use it.
	Description string `yaml:"description" json:"description"`
	// Prompt is the sub-agent's system prompt.
	Prompt string `yaml:"prompt" json:"prompt,omitempty"`
	// Model is a model spec like AgentConfig.Model; nil uses the parent's.
	Model any `yaml:"model" json:"model,omitempty"`
	// Tools names the sub-agent's tools, as AgentConfig.Tools does.
	Tools []string `yaml:"tools" json:"tools,omitempty"`
	// Timeout bounds one run of the sub-agent; 0 uses the service's
	// default (300 s).
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
}

// BackendCfg is where the agent's files and commands live.
type BackendCfg struct {
	Type           string        `yaml:"type" json:"type"` // "local" or "docker"
	Image          string        `yaml:"image" json:"image,omitempty"`
	Workdir        string        `yaml:"workdir" json:"workdir,omitempty"`
	SandboxURL     string        `yaml:"sandbox_url" json:"sandbox_url,omitempty"`
	Timeout        time.Duration `yaml:"timeout" json:"timeout,omitempty"`
	MaxOutputBytes int64         `yaml:"max_output_bytes" json:"max_output_bytes,omitempty"`
	Network        string        `yaml:"network" json:"network,omitempty"`
	MemoryBytes    int64         `yaml:"memory_bytes" json:"memory_bytes,omitempty"`
	NanoCPUs       int64         `yaml:"nano_cpus" json:"nano_cpus,omitempty"`
	// WorkspaceBytes is the size of the agent's workspace, fixed when the
	// workspace is made; 0 takes the sandbox service's default, and more
	// than its maximum is refused.
	WorkspaceBytes int64 `yaml:"workspace_bytes" json:"workspace_bytes,omitempty"`
}

// SkillsCfg lists the directories searched for SKILL.md files.
type SkillsCfg struct {
	Paths []string `yaml:"paths" json:"paths"`
}

// MemoryCfg lists the AGENTS.md files loaded as memory.
type MemoryCfg struct {
	Paths []string `yaml:"paths" json:"paths"`
}

// HookEnabled reports whether the toggles leave the named hook on.
func (c *AgentConfig) HookEnabled(name string) bool {
	if c == nil || c.Hooks == nil {
		return true
	}
	on, ok := c.Hooks[name]
	return !ok || on
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
