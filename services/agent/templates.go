package agent

import (
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/registry"
)

// AgentConfig is an agent template, the shape of one agent in agents.yaml:
// name, model, system prompt, tools (built-in, native or external, by name),
// backend, skills, memory, limits, approval mode and hook toggles.
type AgentConfig = loop.AgentConfig

// BackendCfg is where an agent's files and commands live (agents.yaml's
// "backend").
type BackendCfg = loop.BackendCfg

// MCPServerCfg is a Model Context Protocol server whose tools an agent
// uses (agents.yaml's "mcp_servers").
type MCPServerCfg = loop.MCPServerCfg

// SkillsCfg lists the directories searched for SKILL.md files.
type SkillsCfg = loop.SkillsCfg

// MemoryCfg lists the AGENTS.md files loaded as memory.
type MemoryCfg = loop.MemoryCfg

// DefaultAgentID is the id of the agent that serves when none is
// configured, and of a single-agent agents.yaml without an "id".
const DefaultAgentID = registry.DefaultAgentID

// ValidateAgent checks an agent id and template as New and agents.yaml do;
// the error names the field.
func ValidateAgent(id string, cfg *AgentConfig) error { return registry.Validate(id, cfg) }

// LoadAgentsFile reads and validates an agents.yaml file into templates by
// agent id.
func LoadAgentsFile(path string) (map[string]*AgentConfig, error) { return registry.LoadFile(path) }
