package agent

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/redact"
	"github.com/wick-agent/wick/services/agent/internal/tasks"
	"github.com/wick-agent/wick/services/agent/internal/threads"
)

// ListThreadTasks implements agentv1.AgentServiceServer.
func (s *Service) ListThreadTasks(ctx context.Context, req *agentv1.ListThreadTasksRequest) (*agentv1.ListThreadTasksResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkID("thread_id", req.GetThreadId()); err != nil {
		return nil, err
	}
	list, err := s.st.Tasks.List(ctx, user, req.GetThreadId())
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	if len(list) == 0 {
		// Tasks are the user's own, so a list that has some proves the
		// thread is; an empty one answers for another user's thread (or
		// none) as GetThread does, not with a 200.
		if _, err := s.st.Threads.Get(ctx, user, req.GetThreadId()); errors.Is(err, threads.ErrNotFound) {
			return nil, status.Errorf(codes.NotFound, "thread %s not found", req.GetThreadId())
		} else if err != nil {
			return nil, rpcErr(ctx, err)
		}
	}
	out := &agentv1.ListThreadTasksResponse{}
	for _, t := range list {
		out.Tasks = append(out.Tasks, taskToProto(t))
	}
	return out, nil
}

// GetTask implements agentv1.AgentServiceServer.
func (s *Service) GetTask(ctx context.Context, req *agentv1.GetTaskRequest) (*agentv1.GetTaskResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkID("task_id", req.GetTaskId()); err != nil {
		return nil, err
	}
	t, err := s.st.Tasks.Get(ctx, user, req.GetTaskId())
	if err != nil {
		return nil, taskErr(ctx, req.GetTaskId(), err)
	}
	return &agentv1.GetTaskResponse{Task: taskToProto(t)}, nil
}

// CancelTask implements agentv1.AgentServiceServer.
func (s *Service) CancelTask(ctx context.Context, req *agentv1.CancelTaskRequest) (*agentv1.CancelTaskResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkID("task_id", req.GetTaskId()); err != nil {
		return nil, err
	}
	t, err := s.tasks.Cancel(ctx, user, req.GetTaskId())
	if err != nil {
		return nil, taskErr(ctx, req.GetTaskId(), err)
	}
	return &agentv1.CancelTaskResponse{Task: taskToProto(t)}, nil
}

func taskErr(ctx context.Context, id string, err error) error {
	if errors.Is(err, tasks.ErrNotFound) {
		return status.Errorf(codes.NotFound, "task %s not found", id)
	}
	return rpcErr(ctx, err)
}

func taskToProto(t *tasks.Task) *agentv1.Task {
	return &agentv1.Task{
		TaskId: t.ID, ThreadId: t.ThreadID, RunId: t.RunID, ToolCallId: t.ToolCallID, Tool: t.Tool, Kind: t.Kind,
		Status: t.Status, Result: redact.String(t.Result), Attempts: int32(t.Attempts), Delivered: t.Delivered,
		CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt),
	}
}
