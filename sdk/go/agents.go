package wick

import (
	"context"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// ListAgents lists the agents the caller can use: its own and the
// configured templates.
func (c *Client) ListAgents(ctx context.Context) ([]*Agent, error) {
	res, err := c.api.ListAgents(ctx, &agentv1.ListAgentsRequest{})
	if err != nil {
		return nil, err
	}
	return res.GetAgents(), nil
}

// GetAgent describes one agent.
func (c *Client) GetAgent(ctx context.Context, agentID string) (*Agent, error) {
	res, err := c.api.GetAgent(ctx, &agentv1.GetAgentRequest{AgentId: agentID})
	if err != nil {
		return nil, err
	}
	return res.GetAgent(), nil
}

// CreateAgent registers an agent for the caller and returns it as stored.
func (c *Client) CreateAgent(ctx context.Context, a *Agent) (*Agent, error) {
	res, err := c.api.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: a})
	if err != nil {
		return nil, err
	}
	return res.GetAgent(), nil
}

// UpdateAgent replaces the configuration of the caller's agent a.AgentId
// with a and returns it as stored. A value a holds as GetAgent showed it
// masked ("[REDACTED]") keeps the stored value.
func (c *Client) UpdateAgent(ctx context.Context, a *Agent) (*Agent, error) {
	res, err := c.api.UpdateAgent(ctx, &agentv1.UpdateAgentRequest{AgentId: a.GetAgentId(), Agent: a})
	if err != nil {
		return nil, err
	}
	return res.GetAgent(), nil
}

// DeleteAgent removes the caller's agent, its sandbox and its runs.
func (c *Client) DeleteAgent(ctx context.Context, agentID string) error {
	_, err := c.api.DeleteAgent(ctx, &agentv1.DeleteAgentRequest{AgentId: agentID})
	return err
}
