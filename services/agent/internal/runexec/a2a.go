package runexec

import (
	"context"
	"fmt"
	"slices"

	"github.com/wick-agent/wick/platform/a2aclient"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/subagent"
)

// a2aRemote calls the remote A2A sub-agents (subagent.Remote) with the
// client of external tools, so they reach only what the tool network
// guard allows.
type a2aRemote struct{ c *a2aclient.Client }

func (r a2aRemote) Call(ctx context.Context, a *loop.A2ACfg, goal string) (string, error) {
	res, err := r.c.Send(ctx, a.URL, a.Token, goal)
	if err != nil {
		return "", err
	}
	return res.Text, nil
}

// subagentTool is the task tool of the user's agent agentID configured by
// cfg, its remote sub-agents' token references resolved for this run only.
// The user's right to each reference is checked again here, as for MCP
// servers.
func (e *Executor) subagentTool(ctx context.Context, user, agentID string, cfg *loop.AgentConfig, opts ...subagent.Option) (*subagent.Tool, error) {
	if slices.ContainsFunc(cfg.Subagents, func(s loop.SubagentCfg) bool { return s.A2A != nil }) {
		if err := e.agents.CheckSecrets(ctx, user, agentID, &loop.AgentConfig{Subagents: cfg.Subagents}); err != nil {
			return nil, err
		}
		c := *cfg
		c.Subagents = slices.Clone(cfg.Subagents)
		for i, s := range c.Subagents {
			if s.A2A == nil {
				continue
			}
			a := *s.A2A
			token, err := e.cfg.secrets.Expand(a.Token)
			if err != nil {
				return nil, fmt.Errorf("sub-agent %s a2a token %w", s.Name, err)
			}
			a.Token = token
			c.Subagents[i].A2A = &a
		}
		cfg = &c
	}
	// The remote goes first, so that options given to the executor win.
	opts = append([]subagent.Option{subagent.WithRemote(a2aRemote{c: a2aclient.New(e.cfg.httpClient)})}, opts...)
	return subagent.NewTool(cfg, spawner{e: e, user: user, agentID: agentID}, opts...), nil
}
