package wick

import (
	"context"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// ListThreads lists the caller's threads, newest first: of one agent, or
// of all when agentID is empty. It reads every page (ListThreadsPage reads
// one).
func (c *Client) ListThreads(ctx context.Context, agentID string) ([]*ThreadSummary, error) {
	var out []*ThreadSummary
	req := &agentv1.ListThreadsRequest{AgentId: agentID, PageSize: maxThreadPage}
	for {
		res, err := c.api.ListThreads(ctx, req)
		if err != nil {
			return nil, err
		}
		out = append(out, res.GetThreads()...)
		if res.GetNextPageToken() == "" {
			return out, nil
		}
		req.PageToken = res.GetNextPageToken()
	}
}

// maxThreadPage is the largest page ListThreads serves.
const maxThreadPage = 200

// ListThreadsPage reads one page of the caller's threads, as req asks
// (agent, page size, page token, title query), and returns them with the
// token of the next page ("" after the last).
func (c *Client) ListThreadsPage(ctx context.Context, req *agentv1.ListThreadsRequest) ([]*ThreadSummary, string, error) {
	res, err := c.api.ListThreads(ctx, req)
	if err != nil {
		return nil, "", err
	}
	return res.GetThreads(), res.GetNextPageToken(), nil
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
