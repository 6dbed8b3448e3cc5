package wick

import (
	"context"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// ListTasks returns the background tasks started on a thread, oldest first.
func (c *Client) ListTasks(ctx context.Context, threadID string) ([]*Task, error) {
	res, err := c.api.ListThreadTasks(ctx, &agentv1.ListThreadTasksRequest{ThreadId: threadID})
	if err != nil {
		return nil, err
	}
	return res.GetTasks(), nil
}

// GetTask returns a background task; another user's is NotFound.
func (c *Client) GetTask(ctx context.Context, taskID string) (*Task, error) {
	res, err := c.api.GetTask(ctx, &agentv1.GetTaskRequest{TaskId: taskID})
	if err != nil {
		return nil, err
	}
	return res.GetTask(), nil
}

// CancelTask cancels a running background task and returns it; a finished
// task is returned unchanged.
func (c *Client) CancelTask(ctx context.Context, taskID string) (*Task, error) {
	res, err := c.api.CancelTask(ctx, &agentv1.CancelTaskRequest{TaskId: taskID})
	if err != nil {
		return nil, err
	}
	return res.GetTask(), nil
}
