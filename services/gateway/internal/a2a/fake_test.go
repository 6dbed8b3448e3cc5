package a2a_test

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/identity"
)

// fakeAgent scripts runs from the message text:
//
//	"tool"  answers "a", calls the tool echo, answers "b"
//	"ask"   asks the user a question; the answer is echoed
//	"slow"  starts and waits until cancelled
//	"fail"  fails
//	other   answers "Hel" "lo"
type fakeAgent struct {
	agentv1.UnimplementedAgentServiceServer

	mu   sync.Mutex
	runs map[string]*fakeRun
	next int
}

type fakeRun struct {
	user    string
	run     *agentv1.Run
	events  []*agentv1.StreamEvent
	changed chan struct{} // closed and replaced when events or status change
	ended   bool
}

func newFakeAgent() *fakeAgent { return &fakeAgent{runs: map[string]*fakeRun{}} }

func (f *fakeAgent) GetAgent(ctx context.Context, req *agentv1.GetAgentRequest) (*agentv1.GetAgentResponse, error) {
	if req.GetAgentId() != "helper" && req.GetAgentId() != "other" {
		return nil, status.Errorf(codes.NotFound, "agent %q not found", req.GetAgentId())
	}
	return &agentv1.GetAgentResponse{Agent: &agentv1.Agent{
		AgentId: req.GetAgentId(), Name: "Helper", SystemPrompt: "Helps with sums.\nMore details.", Tools: []string{"calculate", "mystery"},
	}}, nil
}

func (f *fakeAgent) ListTools(context.Context, *agentv1.ListToolsRequest) (*agentv1.ListToolsResponse, error) {
	return &agentv1.ListToolsResponse{Tools: []*agentv1.ToolDefinition{{Name: "calculate", Description: "Evaluates arithmetic."}}}, nil
}

func ev(kind string, d *agentv1.RunEventData, name string) *agentv1.StreamEvent {
	return &agentv1.StreamEvent{Event: kind, Name: name, Payload: d}
}

func delta(s string) *agentv1.StreamEvent {
	return ev("on_chat_model_stream", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnChatModelStream{OnChatModelStream: &agentv1.DeltaData{Delta: s}}}, "")
}

func done() *agentv1.StreamEvent {
	return ev("done", &agentv1.RunEventData{Kind: &agentv1.RunEventData_Done{Done: &agentv1.DoneData{}}}, "")
}

func errEvent(msg, reason string) *agentv1.StreamEvent {
	return ev("error", &agentv1.RunEventData{Kind: &agentv1.RunEventData_Error{Error: &agentv1.ErrorData{Message: msg, Code: "x", StopReason: &reason}}}, "")
}

// emit appends events to a run and sets its status; callers hold f.mu.
func (f *fakeAgent) emit(r *fakeRun, st string, evs ...*agentv1.StreamEvent) {
	for _, e := range evs {
		e.RunId, e.ThreadId = r.run.GetRunId(), r.run.GetThreadId()
		e.Id = fmt.Sprint(len(r.events) + 1)
		r.events = append(r.events, e)
		r.run.LastEventId = e.Id
	}
	r.run.Status = st
	if st != "running" && st != "waiting_approval" {
		r.ended = true
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

func (f *fakeAgent) Stream(req *agentv1.StreamRequest, ss agentv1.AgentService_StreamServer) error {
	user, err := identity.Require(ss.Context())
	if err != nil {
		return err
	}
	if req.GetAgentId() != "helper" && req.GetAgentId() != "other" {
		return status.Errorf(codes.NotFound, "agent %q not found", req.GetAgentId())
	}
	f.mu.Lock()
	thread := req.GetThreadId()
	if thread == "" {
		thread = fmt.Sprintf("th_%d", f.next)
	} else if !strings.HasPrefix(thread, "th_") || strings.HasSuffix(thread, "_bob") != (user == "bob") {
		f.mu.Unlock()
		return status.Errorf(codes.NotFound, "thread %q not found", thread)
	}
	f.next++
	id := fmt.Sprintf("run_%d", f.next)
	r := &fakeRun{user: user, run: &agentv1.Run{RunId: id, ThreadId: thread, AgentId: req.GetAgentId()}, changed: make(chan struct{})}
	f.runs[id] = r
	start := ev("on_run_start", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnRunStart{OnRunStart: &agentv1.RunStartData{RunId: id, ThreadId: thread, AgentId: req.GetAgentId()}}}, req.GetAgentId())
	f.emit(r, "running", start)
	switch text := req.GetMessages()[0].GetContent(); text {
	case "tool":
		args, _ := structpb.NewStruct(map[string]any{"text": "x"})
		f.emit(r, "done", delta("a"),
			ev("on_tool_start", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnToolStart{OnToolStart: &agentv1.ToolStartData{ToolCallId: "c1", Args: args}}}, "echo"),
			ev("on_tool_end", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnToolEnd{OnToolEnd: &agentv1.ToolEndData{ToolCallId: "c1", Output: new("x")}}}, "echo"),
			delta("b"), done())
	case "ask":
		args, _ := structpb.NewStruct(map[string]any{"question": "Which colour?"})
		call := &agentv1.ToolCall{Id: "q1", Name: "ask_user", Args: args}
		r.run.Pending = []*agentv1.ToolCall{call}
		f.emit(r, "waiting_approval", ev("on_interrupt", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnInterrupt{OnInterrupt: &agentv1.InterruptData{
			ToolCalls: []*agentv1.ToolCall{call}, Kind: new("question"), Question: new("Which colour?"),
		}}}, ""))
	case "slow":
	case "fail":
		f.emit(r, "failed", errEvent("the model failed", "error"))
	default:
		f.emit(r, "done", delta("Hel"), delta("lo"), done())
	}
	f.mu.Unlock()
	return f.follow(ss.Context(), r, "", func(e *agentv1.StreamEvent) error { return ss.Send(&agentv1.StreamResponse{Event: e}) })
}

// follow sends a run's events after the id after until it ends.
func (f *fakeAgent) follow(ctx context.Context, r *fakeRun, after string, send func(*agentv1.StreamEvent) error) error {
	sent := 0
	if after != "" {
		fmt.Sscan(after, &sent)
	}
	for {
		f.mu.Lock()
		evs := append([]*agentv1.StreamEvent(nil), r.events[sent:]...)
		ended, changed := r.ended, r.changed
		f.mu.Unlock()
		for _, e := range evs {
			if err := send(e); err != nil {
				return err
			}
		}
		sent += len(evs)
		if ended {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *fakeAgent) own(ctx context.Context, runID string) (*fakeRun, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[runID]
	if !ok || r.user != user {
		return nil, status.Errorf(codes.NotFound, "run %q not found", runID)
	}
	return r, nil
}

func (f *fakeAgent) GetRun(ctx context.Context, req *agentv1.GetRunRequest) (*agentv1.GetRunResponse, error) {
	r, err := f.own(ctx, req.GetRunId())
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &agentv1.GetRunResponse{Run: cloneRun(r.run)}, nil
}

func cloneRun(r *agentv1.Run) *agentv1.Run {
	return proto.Clone(r).(*agentv1.Run)
}

func (f *fakeAgent) CancelRun(ctx context.Context, req *agentv1.CancelRunRequest) (*agentv1.CancelRunResponse, error) {
	r, err := f.own(ctx, req.GetRunId())
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !r.ended {
		f.emit(r, "cancelled", errEvent("run cancelled", "cancelled"))
	}
	return &agentv1.CancelRunResponse{Run: cloneRun(r.run)}, nil
}

func (f *fakeAgent) ResumeRun(ctx context.Context, req *agentv1.ResumeRunRequest) (*agentv1.ResumeRunResponse, error) {
	r, err := f.own(ctx, req.GetRunId())
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.run.GetStatus() != "waiting_approval" {
		return nil, status.Error(codes.FailedPrecondition, "run is not waiting")
	}
	d := req.GetDecisions()[0]
	r.run.Pending = nil
	f.emit(r, "running")
	f.emit(r, "done", delta(d.GetAction()+": "+d.GetMessage()), done())
	return &agentv1.ResumeRunResponse{Run: cloneRun(r.run)}, nil
}

func (f *fakeAgent) JoinRun(req *agentv1.JoinRunRequest, ss agentv1.AgentService_JoinRunServer) error {
	r, err := f.own(ss.Context(), req.GetRunId())
	if err != nil {
		return err
	}
	return f.follow(ss.Context(), r, req.GetAfterEventId(), func(e *agentv1.StreamEvent) error { return ss.Send(&agentv1.JoinRunResponse{Event: e}) })
}
