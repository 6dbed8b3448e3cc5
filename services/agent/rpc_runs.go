package agent

import (
	"context"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/runexec"
)

// Invoke implements agentv1.AgentServiceServer.
func (s *Service) Invoke(ctx context.Context, req *agentv1.InvokeRequest) (*agentv1.InvokeResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	r, err := s.exec.Start(ctx, user, runRequest(req))
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	out, err := s.exec.Await(ctx, r)
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	rec := out.Run
	resp := &agentv1.InvokeResponse{ThreadId: rec.ThreadID, RunId: rec.ID, Status: rec.Status, Interrupt: toolCallsToProto(rec.Pending, true)}
	if out.Thread == nil {
		return resp, nil
	}
	if len(out.Added) > 0 {
		resp.Messages = messagesToProto(out.Added)
		for i := len(out.Added) - 1; i >= 0; i-- {
			if out.Added[i].Role == llm.RoleAssistant && out.Added[i].Content != "" {
				resp.Content = resp.Messages[i].Content
				break
			}
		}
	}
	resp.Todos = todosToProto(out.Thread.Todos)
	return resp, nil
}

// Stream implements agentv1.AgentServiceServer. Unless the request is a
// background run, a client that goes away cancels the run.
func (s *Service) Stream(req *agentv1.StreamRequest, stream agentv1.AgentService_StreamServer) error {
	ctx := stream.Context()
	user, err := identity.Require(ctx)
	if err != nil {
		return err
	}
	r, err := s.exec.Start(ctx, user, runRequest(req))
	if err != nil {
		return rpcErr(ctx, err)
	}
	if !req.GetBackground() {
		r.CancelWith(ctx)
	}
	return rpcErr(ctx, s.exec.Follow(ctx, r, func(ev loop.StreamEvent) error {
		return stream.Send(&agentv1.StreamResponse{Event: eventToProto(ev)})
	}))
}

// runRequest is the run an Invoke or a Stream asks for.
func runRequest(req interface {
	GetAgentId() string
	GetThreadId() string
	GetMessages() []*agentv1.Message
	GetEnqueue() bool
}) runexec.Request {
	return runexec.Request{AgentID: req.GetAgentId(), ThreadID: req.GetThreadId(), Input: messagesFromProto(req.GetMessages()), Enqueue: req.GetEnqueue()}
}

// JoinRun implements agentv1.AgentServiceServer.
func (s *Service) JoinRun(req *agentv1.JoinRunRequest, stream agentv1.AgentService_JoinRunServer) error {
	ctx := stream.Context()
	user, err := identity.Require(ctx)
	if err != nil {
		return err
	}
	release, err := s.holdWatcher(ctx, user)
	if err != nil {
		return err
	}
	defer release()
	return rpcErr(ctx, s.exec.Join(ctx, user, req.GetRunId(), req.GetAfterEventId(), func(ev loop.StreamEvent) error {
		return stream.Send(&agentv1.JoinRunResponse{Event: eventToProto(ev)})
	}))
}

// GetRun implements agentv1.AgentServiceServer.
func (s *Service) GetRun(ctx context.Context, req *agentv1.GetRunRequest) (*agentv1.GetRunResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	snap, err := s.exec.Get(ctx, user, req.GetRunId())
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	return &agentv1.GetRunResponse{Run: runToProto(snap.Run, snap.LastEventID)}, nil
}

// CancelRun implements agentv1.AgentServiceServer.
func (s *Service) CancelRun(ctx context.Context, req *agentv1.CancelRunRequest) (*agentv1.CancelRunResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	snap, err := s.exec.Cancel(ctx, user, req.GetRunId())
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	return &agentv1.CancelRunResponse{Run: runToProto(snap.Run, snap.LastEventID)}, nil
}

// StopRun implements agentv1.AgentServiceServer.
func (s *Service) StopRun(ctx context.Context, req *agentv1.StopRunRequest) (*agentv1.StopRunResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	snap, err := s.exec.Stop(ctx, user, req.GetRunId())
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	return &agentv1.StopRunResponse{Run: runToProto(snap.Run, snap.LastEventID)}, nil
}

// ContinueRun implements agentv1.AgentServiceServer. The new run goes on
// without the caller, who follows it with JoinRun.
func (s *Service) ContinueRun(ctx context.Context, req *agentv1.ContinueRunRequest) (*agentv1.ContinueRunResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	r, err := s.exec.Continue(ctx, user, req.GetRunId())
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	return &agentv1.ContinueRunResponse{Run: runToProto(r.Record(), "")}, nil
}

// ResumeRun implements agentv1.AgentServiceServer.
func (s *Service) ResumeRun(ctx context.Context, req *agentv1.ResumeRunRequest) (*agentv1.ResumeRunResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	var decisions []loop.Decision
	for _, d := range req.GetDecisions() {
		var args map[string]any // nil when absent: an edit requires them
		if d.GetArgs() != nil {
			args = d.GetArgs().AsMap()
		}
		decisions = append(decisions, loop.Decision{ToolCallID: d.GetToolCallId(), Action: d.GetAction(), Args: args, Message: d.GetMessage(), Always: d.GetAlways()})
	}
	snap, err := s.exec.Resume(ctx, user, req.GetRunId(), decisions)
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	return &agentv1.ResumeRunResponse{Run: runToProto(snap.Run, snap.LastEventID)}, nil
}
