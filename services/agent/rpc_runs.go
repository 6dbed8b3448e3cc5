package agent

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/runs"
	"github.com/wick-agent/wick/services/agent/internal/threads"
)

// followBatch is how many events one log read returns.
const followBatch = 256

// Invoke implements agentv1.AgentServiceServer.
func (s *Service) Invoke(ctx context.Context, req *agentv1.InvokeRequest) (*agentv1.InvokeResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	r, err := s.startRun(ctx, user, runRequest{agentID: req.GetAgentId(), threadID: req.GetThreadId(), input: messagesFromProto(req.GetMessages()), enqueue: req.GetEnqueue()})
	if err != nil {
		return nil, err
	}
	select {
	case <-r.done:
	case <-r.waiting:
	case <-ctx.Done():
		r.cancel(errClientGone)
		return nil, rpcErr(ctx.Err())
	}
	rec := r.record()
	if rec.Status == runs.StatusFailed && r.err != nil {
		return nil, rpcErr(r.err)
	}
	resp := &agentv1.InvokeResponse{ThreadId: rec.ThreadID, RunId: rec.ID, Status: rec.Status, Interrupt: toolCallsToProto(rec.Pending, true)}
	st, err := s.st.Threads.Get(ctx, user, rec.ThreadID)
	if errors.Is(err, threads.ErrNotFound) && rec.Status == runs.StatusWaiting {
		return resp, nil // a new thread is first saved after its first tool round
	}
	if err != nil {
		return nil, rpcErr(err)
	}
	if from := r.baseLen + r.inputLen; from < len(st.Messages) {
		added := st.Messages[from:]
		resp.Messages = messagesToProto(added)
		for i := len(added) - 1; i >= 0; i-- {
			if added[i].Role == llm.RoleAssistant && added[i].Content != "" {
				resp.Content = resp.Messages[i].Content
				break
			}
		}
	}
	resp.Todos = todosToProto(st.Todos)
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
	r, err := s.startRun(ctx, user, runRequest{agentID: req.GetAgentId(), threadID: req.GetThreadId(), input: messagesFromProto(req.GetMessages()), enqueue: req.GetEnqueue()})
	if err != nil {
		return err
	}
	if !req.GetBackground() {
		go func() {
			select {
			case <-ctx.Done():
				r.cancel(errClientGone)
			case <-r.done:
			}
		}()
	}
	return s.follow(ctx, user, r.rec.ID, "", func(ev loop.StreamEvent) error {
		return stream.Send(&agentv1.StreamResponse{Event: eventToProto(ev)})
	})
}

// JoinRun implements agentv1.AgentServiceServer.
func (s *Service) JoinRun(req *agentv1.JoinRunRequest, stream agentv1.AgentService_JoinRunServer) error {
	ctx := stream.Context()
	user, err := identity.Require(ctx)
	if err != nil {
		return err
	}
	if _, err := s.ownRun(ctx, user, req.GetRunId()); err != nil {
		return err
	}
	if err := runs.CheckEventID(req.GetAfterEventId()); err != nil {
		return invalid("after_event_id", err.Error())
	}
	if err := s.follow(ctx, user, req.GetRunId(), req.GetAfterEventId(), func(ev loop.StreamEvent) error {
		return stream.Send(&agentv1.JoinRunResponse{Event: eventToProto(ev)})
	}); err != nil {
		if errors.Is(err, runs.ErrBadEventID) {
			return invalid("after_event_id", err.Error())
		}
		return err
	}
	return nil
}

// ownRun returns the caller's run; another user's run is NotFound.
func (s *Service) ownRun(ctx context.Context, user, runID string) (*runs.Run, error) {
	if err := checkID("run_id", runID); err != nil {
		return nil, err
	}
	rec, err := s.st.Runs.Get(ctx, runID)
	if err != nil {
		return nil, rpcErr(err)
	}
	if rec.User != user {
		return nil, status.Errorf(codes.NotFound, "run %s not found", runID)
	}
	return rec, nil
}

// readLog reads the run's events from this replica's copy when it has
// one, and from the shared log otherwise; both carry the same ids.
func (s *Service) readLog(ctx context.Context, runID, after string) ([]loop.StreamEvent, bool, bool, error) {
	evs, ended, err := s.local.Read(ctx, runID, after, followBatch, s.cfg.joinBlock)
	if err == nil || !errors.Is(err, runs.ErrNotFound) || s.local == s.st.Log {
		return evs, ended, true, err
	}
	evs, ended, err = s.st.Log.Read(ctx, runID, after, followBatch, s.cfg.joinBlock)
	return evs, ended, false, err
}

// follow sends a run's events after the id after until the log ends. When
// another replica runs it and stops logging, follow checks that replica is
// alive (it still holds the thread's lease); a dead run is closed with an
// error event so every follower ends.
func (s *Service) follow(ctx context.Context, user, runID, after string, send func(loop.StreamEvent) error) error {
	for {
		evs, ended, local, err := s.readLog(ctx, runID, after)
		if err != nil {
			return rpcErr(err)
		}
		for _, ev := range evs {
			if err := send(ev); err != nil {
				return err
			}
			after = ev.ID
		}
		if ended {
			return nil
		}
		if len(evs) > 0 || local {
			continue
		}
		if err := ctx.Err(); err != nil {
			return rpcErr(err)
		}
		over, err := s.reapIfDead(ctx, user, runID)
		if err != nil {
			return rpcErr(err)
		}
		if over {
			// The record says the run ended but its log has no end marker
			// (its owner died between the two): send what is left and stop.
			evs, _, err := s.st.Log.Read(ctx, runID, after, followBatch, 0)
			if err != nil {
				return rpcErr(err)
			}
			for _, ev := range evs {
				if err := send(ev); err != nil {
					return err
				}
			}
			return nil
		}
	}
}

// reapIfDead closes a run whose owner no longer holds its thread's lease.
// It reports whether the run is over without an end marker to wait for.
func (s *Service) reapIfDead(ctx context.Context, user, runID string) (bool, error) {
	rec, err := s.st.Runs.Get(ctx, runID)
	if err != nil {
		return false, err
	}
	if runs.Terminal(rec.Status) {
		// Every event was logged before the status was written.
		return true, nil
	}
	holder, err := s.st.Locker.Holder(ctx, user, rec.ThreadID)
	if err != nil {
		return false, err
	}
	if holder == rec.LeaseToken {
		return false, nil
	}
	won, err := s.st.Runs.Finish(ctx, runID, runs.StatusFailed, "lost")
	if err != nil || !won {
		return false, err
	}
	s.logger.Warn("run lost its replica", "run_id", runID, "thread_id", rec.ThreadID)
	if _, err := s.st.Log.AppendClosing(ctx, runID, loop.StreamEvent{Event: loop.EventError, RunID: runID, ThreadID: rec.ThreadID, Data: map[string]any{
		"message": "the replica running this run stopped; every completed tool round is saved in the thread",
		"code":    "lost",
	}}); err != nil {
		return false, err
	}
	return false, s.st.Log.End(ctx, runID)
}

// GetRun implements agentv1.AgentServiceServer.
func (s *Service) GetRun(ctx context.Context, req *agentv1.GetRunRequest) (*agentv1.GetRunResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	rec, err := s.ownRun(ctx, user, req.GetRunId())
	if err != nil {
		return nil, err
	}
	if rec, err = s.refresh(ctx, user, rec); err != nil {
		return nil, err
	}
	return &agentv1.GetRunResponse{Run: runToProto(rec, s.lastEventID(ctx, rec.ID))}, nil
}

// refresh closes the run first when its owner (another replica) died, so
// its status never stays "running" for a run nobody runs.
func (s *Service) refresh(ctx context.Context, user string, rec *runs.Run) (*runs.Run, error) {
	if runs.Terminal(rec.Status) {
		return rec, nil
	}
	s.mu.Lock()
	_, local := s.active[rec.ID]
	s.mu.Unlock()
	if local {
		return rec, nil
	}
	if _, err := s.reapIfDead(ctx, user, rec.ID); err != nil {
		return nil, rpcErr(err)
	}
	rec, err := s.st.Runs.Get(ctx, rec.ID)
	if err != nil {
		return nil, rpcErr(err)
	}
	return rec, nil
}

func (s *Service) lastEventID(ctx context.Context, runID string) string {
	if id, err := s.local.Last(ctx, runID); err == nil && id != "" {
		return id
	}
	id, _ := s.st.Log.Last(ctx, runID)
	return id
}

// CancelRun implements agentv1.AgentServiceServer. The request is stored
// and announced, so the replica running the run stops it, whichever it is.
func (s *Service) CancelRun(ctx context.Context, req *agentv1.CancelRunRequest) (*agentv1.CancelRunResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	rec, err := s.ownRun(ctx, user, req.GetRunId())
	if err != nil {
		return nil, err
	}
	if rec, err = s.refresh(ctx, user, rec); err != nil {
		return nil, err
	}
	if !runs.Terminal(rec.Status) {
		if err := s.st.Runs.RequestCancel(ctx, rec.ID); err != nil {
			return nil, rpcErr(err)
		}
		s.mu.Lock()
		r := s.active[rec.ID]
		s.mu.Unlock()
		if r != nil {
			r.cancel(errCancelRequested)
			select {
			case <-r.done:
			case <-ctx.Done():
			}
		}
		if rec, err = s.st.Runs.Get(ctx, rec.ID); err != nil {
			return nil, rpcErr(err)
		}
	}
	return &agentv1.CancelRunResponse{Run: runToProto(rec, s.lastEventID(ctx, rec.ID))}, nil
}

// ResumeRun implements agentv1.AgentServiceServer.
func (s *Service) ResumeRun(ctx context.Context, req *agentv1.ResumeRunRequest) (*agentv1.ResumeRunResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	rec, err := s.ownRun(ctx, user, req.GetRunId())
	if err != nil {
		return nil, err
	}
	if rec.Status != runs.StatusWaiting {
		return nil, status.Errorf(codes.FailedPrecondition, "run %s is %s, not waiting for approval", rec.ID, rec.Status)
	}
	pending := map[string]bool{}
	for _, c := range rec.Pending {
		pending[c.ID] = true
	}
	var decisions []loop.Decision
	for i, d := range req.GetDecisions() {
		field := fmt.Sprintf("decisions[%d]", i)
		if !pending[d.GetToolCallId()] {
			return nil, invalid(field+".tool_call_id", fmt.Sprintf("%q is not a pending tool call of run %s", d.GetToolCallId(), rec.ID))
		}
		switch d.GetAction() {
		case loop.ActionApprove, loop.ActionReject:
		case loop.ActionEdit:
			if d.GetArgs() == nil {
				return nil, invalid(field+".args", `required when action is "edit"`)
			}
		default:
			return nil, invalid(field+".action", fmt.Sprintf(`%q must be "approve", "reject" or "edit"`, d.GetAction()))
		}
		decisions = append(decisions, loop.Decision{ToolCallID: d.GetToolCallId(), Action: d.GetAction(), Args: d.GetArgs().AsMap(), Message: d.GetMessage()})
	}
	if err := s.st.Runs.PutDecisions(ctx, rec.ID, decisions); err != nil {
		return nil, rpcErr(err)
	}
	s.mu.Lock()
	r := s.active[rec.ID]
	s.mu.Unlock()
	if r != nil {
		select {
		case r.decide <- struct{}{}:
		default:
		}
	}
	return &agentv1.ResumeRunResponse{Run: runToProto(rec, s.lastEventID(ctx, rec.ID))}, nil
}
