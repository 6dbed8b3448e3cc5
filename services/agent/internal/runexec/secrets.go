package runexec

import (
	"fmt"

	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/secrets"
)

// WithSecrets resolves the ${secret:NAME} references of agents' MCP server
// env and headers and ACP env from d, at each run's start: the resolved
// values live only in the run, never in the stored agent.
func WithSecrets(d secrets.Dir) Option { return func(c *config) { c.secrets = d } }

// mcpWithSecrets returns a copy of servers with their references
// resolved.
func (e *Executor) mcpWithSecrets(servers []loop.MCPServerCfg) ([]loop.MCPServerCfg, error) {
	out := make([]loop.MCPServerCfg, len(servers))
	for i, m := range servers {
		env, err := e.cfg.secrets.ExpandMap(m.Env)
		if err != nil {
			return nil, fmt.Errorf("mcp server %s env %w", m.Name, err)
		}
		headers, err := e.cfg.secrets.ExpandMap(m.Headers)
		if err != nil {
			return nil, fmt.Errorf("mcp server %s header %w", m.Name, err)
		}
		m.Env, m.Headers = env, headers
		out[i] = m
	}
	return out, nil
}

// acpWithSecrets returns a copy of an ACP agent's configuration with the
// references of its env and of the MCP servers it hands on resolved.
func (e *Executor) acpWithSecrets(cfg *loop.AgentConfig) (*loop.AgentConfig, error) {
	c := *cfg
	a := *cfg.ACP
	env, err := e.cfg.secrets.ExpandMap(a.Env)
	if err != nil {
		return nil, fmt.Errorf("acp env %w", err)
	}
	a.Env = env
	c.ACP = &a
	if c.MCPServers, err = e.mcpWithSecrets(cfg.MCPServers); err != nil {
		return nil, err
	}
	return &c, nil
}
