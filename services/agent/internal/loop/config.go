package loop

import (
	"fmt"

	"github.com/wick-agent/wick/services/agent/agentconfig"
)

// The agent configuration is defined in the public agentconfig package, so
// that a program embedding Wick can build one; these names keep the
// runtime's many uses of it short.
type (
	AgentConfig  = agentconfig.AgentConfig
	ACPCfg       = agentconfig.ACPCfg
	MCPServerCfg = agentconfig.MCPServerCfg
	SubagentCfg  = agentconfig.SubagentCfg
	A2ACfg       = agentconfig.A2ACfg
	BackendCfg   = agentconfig.BackendCfg
	SkillsCfg    = agentconfig.SkillsCfg
	MemoryCfg    = agentconfig.MemoryCfg
)

// Approval modes and tool wait strategies of an AgentConfig.
const (
	ApprovalAutonomous  = agentconfig.ApprovalAutonomous
	ApprovalInteractive = agentconfig.ApprovalInteractive
	ToolWaitAll         = agentconfig.ToolWaitAll
	ToolWaitAny         = agentconfig.ToolWaitAny
	ToolWaitMajority    = agentconfig.ToolWaitMajority
)

// CheckToolWait reports whether w is a wait strategy ("" is "all").
func CheckToolWait(w string) error {
	switch w {
	case "", ToolWaitAll, ToolWaitAny, ToolWaitMajority:
		return nil
	}
	return fmt.Errorf("%w: tool_wait %q (want %q, %q or %q)", ErrInvalidConfig, w, ToolWaitAll, ToolWaitAny, ToolWaitMajority)
}
