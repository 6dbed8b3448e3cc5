package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/threads"
)

// ListThreads implements agentv1.AgentServiceServer: one page of the
// caller's threads (thread_pages.go), sub-agents' threads left out (the
// user did not start them; GetThread reads them).
func (s *Service) ListThreads(ctx context.Context, req *agentv1.ListThreadsRequest) (*agentv1.ListThreadsResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	q, err := threadListQuery(user, req)
	if err != nil {
		return nil, err
	}
	page, err := s.st.Threads.List(ctx, user, q)
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	out := &agentv1.ListThreadsResponse{NextPageToken: encodePageToken(user, q, page.Next)}
	for _, t := range page.Threads {
		out.Threads = append(out.Threads, summaryToProto(t))
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
	out := &agentv1.GetThreadResponse{Thread: stateToProto(st)}
	// Read after the state: a thread deleted in between has no summary.
	if sum, err := s.st.Threads.Summary(ctx, user, req.GetThreadId()); err == nil {
		out.Summary = summaryToProto(sum)
	} else if !errors.Is(err, threads.ErrNotFound) {
		return nil, rpcErr(ctx, err)
	}
	return out, nil
}

// MaxThreadTitleRunes bounds a title given with UpdateThread: room for a
// sentence, not for a message.
const MaxThreadTitleRunes = 200

// UpdateThread implements agentv1.AgentServiceServer. It needs no run lock:
// the title is stored beside the thread's state, which a run goes on
// saving.
func (s *Service) UpdateThread(ctx context.Context, req *agentv1.UpdateThreadRequest) (*agentv1.UpdateThreadResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkID("thread_id", req.GetThreadId()); err != nil {
		return nil, err
	}
	var title string
	switch {
	case req.ResetTitle && req.Title != nil:
		return nil, invalid("title", "set it or reset it (reset_title), not both")
	case req.ResetTitle:
	case req.Title == nil:
		return nil, invalid("title", "missing: give a new title, or reset_title to go back to the first message")
	default:
		if title, err = checkTitle(req.GetTitle()); err != nil {
			return nil, err
		}
	}
	err = s.st.Threads.Rename(ctx, user, req.GetThreadId(), title)
	if errors.Is(err, threads.ErrNotFound) {
		return nil, status.Errorf(codes.NotFound, "thread %s not found", req.GetThreadId())
	}
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	sum, err := s.st.Threads.Summary(ctx, user, req.GetThreadId())
	if errors.Is(err, threads.ErrNotFound) {
		// Deleted or expired between the rename and the read.
		return nil, status.Errorf(codes.NotFound, "thread %s not found", req.GetThreadId())
	}
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	return &agentv1.UpdateThreadResponse{Thread: summaryToProto(sum)}, nil
}

// checkTitle returns a title given by a user as it is stored, trimmed, or
// an InvalidArgument naming the field.
func checkTitle(t string) (string, error) {
	if !utf8.ValidString(t) {
		return "", invalid("title", "not valid UTF-8")
	}
	t = strings.TrimSpace(t)
	switch {
	case t == "":
		return "", invalid("title", "empty; to go back to the first message as the title, send reset_title instead")
	case utf8.RuneCountInString(t) > MaxThreadTitleRunes:
		return "", invalid("title", fmt.Sprintf("%d characters, over the limit of %d", utf8.RuneCountInString(t), MaxThreadTitleRunes))
	case strings.ContainsFunc(t, unicode.IsControl):
		return "", invalid("title", "contains a control character (a line break or tab is one); use plain text on one line")
	}
	return t, nil
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

func summaryToProto(t threads.Summary) *agentv1.ThreadSummary {
	return &agentv1.ThreadSummary{ThreadId: t.ThreadID, AgentId: t.AgentID, MessageCount: int32(t.MessageCount), UpdatedAt: ts(t.UpdatedAt),
		Title: t.Title, Status: t.Status, ActiveRunId: t.ActiveRunID}
}
