package agent

import (
	"github.com/wick-agent/wick/services/agent/agentconfig"
	"github.com/wick-agent/wick/services/agent/internal/registry"
)

// The agent templates' types are those of the agentconfig package; these
// names are the same types, kept so that code which configures agents
// through this package reads as before.
type (
	// AgentConfig is an agent template, the shape of one agent in
	// agents.yaml: name, model, system prompt, tools (built-in, native or
	// external, by name), backend, skills, memory, limits, approval mode,
	// hook toggles, sub-agents, MCP servers and an ACP agent.
	AgentConfig = agentconfig.AgentConfig
	// BackendCfg is where an agent's files and commands live (agents.yaml's
	// "backend").
	BackendCfg = agentconfig.BackendCfg
	// MCPServerCfg is a Model Context Protocol server whose tools an agent
	// uses (agents.yaml's "mcp_servers").
	MCPServerCfg = agentconfig.MCPServerCfg
	// SubagentCfg is a sub-agent the agent's "task" tool hands goals to
	// (agents.yaml's "subagents").
	SubagentCfg = agentconfig.SubagentCfg
	// ACPCfg is an external agent spoken to over the Agent Client Protocol
	// that backs the agent instead of Wick's loop (agents.yaml's "acp").
	ACPCfg = agentconfig.ACPCfg
	// SkillsCfg lists the directories searched for SKILL.md files.
	SkillsCfg = agentconfig.SkillsCfg
	// MemoryCfg lists the AGENTS.md files loaded as memory.
	MemoryCfg = agentconfig.MemoryCfg
)

// DefaultAgentID is the id of the agent that serves when none is
// configured, and of a single-agent agents.yaml without an "id".
const DefaultAgentID = registry.DefaultAgentID

// ValidateAgent checks an agent id and template as New and agents.yaml do;
// the error names the field.
func ValidateAgent(id string, cfg *AgentConfig) error { return registry.Validate(id, cfg) }

// LoadAgentsFile reads and validates an agents.yaml file into templates by
// agent id.
func LoadAgentsFile(path string) (map[string]*AgentConfig, error) { return registry.LoadFile(path) }
