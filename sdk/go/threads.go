package wick

import (
	"context"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// ListThreads lists the caller's threads, newest first: of one agent, or
// of all when agentID is empty.
func (c *Client) ListThreads(ctx context.Context, agentID string) ([]*ThreadSummary, error) {
	res, err := c.api.ListThreads(ctx, &agentv1.ListThreadsRequest{AgentId: agentID})
	if err != nil {
		return nil, err
	}
	return res.GetThreads(), nil
}

// GetThread returns a thread's state: its messages, todos and files.
func (c *Client) GetThread(ctx context.Context, threadID string) (*Thread, error) {
	res, err := c.api.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: threadID})
	if err != nil {
		return nil, err
	}
	return res.GetThread(), nil
}

// DeleteThread removes a thread.
func (c *Client) DeleteThread(ctx context.Context, threadID string) error {
	_, err := c.api.DeleteThread(ctx, &agentv1.DeleteThreadRequest{ThreadId: threadID})
	return err
}
