// Package agentconfig is the configuration of a Wick agent: the shape of
// one agent in agents.yaml, of an agent created through the API, and of one
// registered from Go (wickserver.RegisterAgent). It names the model, tools,
// backend, MCP servers, sub-agents and the ACP agent that may back it.
//
// The package holds the types and their constants only, and imports nothing
// of Wick, so that a program outside this repository can build a
// configuration without reaching into the agent service's internals. The
// rules a configuration must satisfy (model specs, hook names, secret
// references, limits) need the agent service's own packages; they are
// applied by agent.ValidateAgent, by wickserver.RegisterAgent and when
// agents.yaml is loaded.
package agentconfig

import "time"

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

// AgentConfig is an agent's YAML/JSON configuration; it decides which hooks
// are active. agents.yaml decodes into it with unknown keys refused.
type AgentConfig struct {
	Name string `yaml:"name" json:"name"`
	// Model is a model spec: a string ("gpt-4o-mini",
	// "anthropic:claude-sonnet-4-20250514", "script:demo"), an object
	// ({"provider": …, "model": …}) or a list of either, tried in order;
	// nil takes the server's default model.
	Model        any         `yaml:"model" json:"model"`
	SystemPrompt string      `yaml:"system_prompt" json:"system_prompt"`
	Tools        []string    `yaml:"tools" json:"tools"`
	Backend      *BackendCfg `yaml:"backend" json:"backend"`
	Skills       *SkillsCfg  `yaml:"skills" json:"skills"`
	Memory       *MemoryCfg  `yaml:"memory" json:"memory"`
	// ContextWindow is in tokens; 0 means 128,000.
	ContextWindow int `yaml:"context_window" json:"context_window"`
	// MaxTurns bounds LLM↔tool rounds per run; 0 means 25.
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
	// A2A makes the sub-agent a remote Agent2Agent agent, called over
	// JSON-RPC instead of run here; it then has no prompt, model or tools.
	A2A *A2ACfg `yaml:"a2a" json:"a2a,omitempty"`
}

// A2ACfg is a remote A2A agent a sub-agent entry stands for.
type A2ACfg struct {
	// URL is the agent's JSON-RPC endpoint (its card's url).
	URL string `yaml:"url" json:"url"`
	// Token is the bearer token sent to it; may be a ${secret:NAME}
	// reference.
	Token string `yaml:"token" json:"token,omitempty"`
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
	// ModelEndpoint offers the LLM gateway's model API inside the sandbox
	// (ANTHROPIC_BASE_URL/OPENAI_BASE_URL and a token made for the sandbox),
	// for a coding agent that calls its provider itself. Nil: true for an
	// agent backed by ACP, false otherwise (AgentConfig.SandboxBackend).
	ModelEndpoint *bool `yaml:"model_endpoint" json:"model_endpoint,omitempty"`
	// Egress names the destinations ("registry.npmjs.org:443",
	// "*.npmjs.org:443") the sandbox may reach through the sandbox
	// service's egress proxy; each must lie within the bound its operator
	// set (-egress-allow), else the sandbox is refused.
	Egress []string `yaml:"egress" json:"egress,omitempty"`
}

// SandboxBackend is Backend with ModelEndpoint decided: as set, else on
// for an agent backed by ACP, whose external agent calls its model itself
// (but on a remote engine, sandbox_url, where no endpoint can be offered),
// and off for Wick's own loop, which calls the LLM gateway directly. Every
// request for the agent's sandbox is built from it, so they all ask for the
// same sandbox. Nil without a backend.
func (c *AgentConfig) SandboxBackend() *BackendCfg {
	if c == nil || c.Backend == nil || c.Backend.ModelEndpoint != nil {
		return c.backend()
	}
	b := *c.Backend
	on := c.ACP != nil && b.SandboxURL == ""
	b.ModelEndpoint = &on
	return &b
}

func (c *AgentConfig) backend() *BackendCfg {
	if c == nil {
		return nil
	}
	return c.Backend
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
