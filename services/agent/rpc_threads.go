package agent

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/subagent"
	"github.com/wick-agent/wick/services/agent/internal/threads"
)

// ListThreads implements agentv1.AgentServiceServer.
func (s *Service) ListThreads(ctx context.Context, req *agentv1.ListThreadsRequest) (*agentv1.ListThreadsResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	if id := req.GetAgentId(); id != "" {
		if err := checkID("agent_id", id); err != nil {
			return nil, err
		}
	}
	list, err := s.st.Threads.List(ctx, user, req.GetAgentId())
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	out := &agentv1.ListThreadsResponse{}
	for _, t := range list {
		if strings.HasPrefix(t.ThreadID, subagent.ThreadPrefix) {
			continue // a sub-agent's thread: the user did not start it (GetThread reads it)
		}
		out.Threads = append(out.Threads, &agentv1.ThreadSummary{ThreadId: t.ThreadID, AgentId: t.AgentID, MessageCount: int32(t.MessageCount), UpdatedAt: ts(t.UpdatedAt),
			Title: t.Title, Status: t.Status})
	}
	return out, nil
}

// GetThread implements agentv1.AgentServiceServer.
func (s *Service) GetThread(ctx context.Context, req *agentv1.GetThreadRequest) (*agentv1.GetThreadResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkID("thread_id", req.GetThreadId()); err != nil {
		return nil, err
	}
	st, err := s.st.Threads.Get(ctx, user, req.GetThreadId())
	if errors.Is(err, threads.ErrNotFound) {
		return nil, status.Errorf(codes.NotFound, "thread %s not found", req.GetThreadId())
	}
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	return &agentv1.GetThreadResponse{Thread: stateToProto(st)}, nil
}

// DeleteThread implements agentv1.AgentServiceServer. A thread with a run
// going is not deleted under it.
func (s *Service) DeleteThread(ctx context.Context, req *agentv1.DeleteThreadRequest) (*agentv1.DeleteThreadResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkID("thread_id", req.GetThreadId()); err != nil {
		return nil, err
	}
	if _, err := s.st.Threads.Get(ctx, user, req.GetThreadId()); errors.Is(err, threads.ErrNotFound) {
		return nil, status.Errorf(codes.NotFound, "thread %s not found", req.GetThreadId())
	} else if err != nil {
		return nil, rpcErr(ctx, err)
	}
	lease, err := s.st.Locker.Acquire(ctx, user, req.GetThreadId(), false)
	if errors.Is(err, threads.ErrBusy) {
		return nil, status.Errorf(codes.FailedPrecondition, "thread %s has a run going; cancel it first", req.GetThreadId())
	}
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	defer lease.Release(context.WithoutCancel(ctx))
	if err := s.st.Threads.Delete(ctx, user, req.GetThreadId()); err != nil {
		return nil, rpcErr(ctx, err)
	}
	return &agentv1.DeleteThreadResponse{}, nil
}
