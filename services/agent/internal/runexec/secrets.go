package runexec

import (
	"context"
	"fmt"

	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/secrets"
)

// WithSecrets resolves the ${secret:NAME} references of agents' MCP server
// env and headers and ACP env from d, at each run's start: the resolved
// values live only in the run, never in the stored agent.
func WithSecrets(d secrets.Dir) Option { return func(c *config) { c.secrets = d } }

// mcpWithSecrets returns a copy of servers with their references
// resolved. The user's right to each reference is checked again here, as
// at create and update: an agent stored before a grant was withdrawn, or
// before references were checked at all, must not reach a secret.
func (e *Executor) mcpWithSecrets(ctx context.Context, user, agentID string, servers []loop.MCPServerCfg) ([]loop.MCPServerCfg, error) {
	if err := e.agents.CheckSecrets(ctx, user, agentID, &loop.AgentConfig{MCPServers: servers}); err != nil {
		return nil, err
	}
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
func (e *Executor) acpWithSecrets(ctx context.Context, user, agentID string, cfg *loop.AgentConfig) (*loop.AgentConfig, error) {
	if err := e.agents.CheckSecrets(ctx, user, agentID, &loop.AgentConfig{ACP: cfg.ACP}); err != nil {
		return nil, err
	}
	c := *cfg
	a := *cfg.ACP
	env, err := e.cfg.secrets.ExpandMap(a.Env)
	if err != nil {
		return nil, fmt.Errorf("acp env %w", err)
	}
	a.Env = env
	c.ACP = &a
	if c.MCPServers, err = e.mcpWithSecrets(ctx, user, agentID, cfg.MCPServers); err != nil {
		return nil, err
	}
	return &c, nil
}
