package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/gateway/internal/sse"
)

// runStream is a run's event stream as A2A events.
type runStream struct {
	tr *tracker
	// pending go out before the next received event.
	pending []any
	// held is an event received before the stream was handed on.
	held *agentv1.StreamEvent
	recv func() (*agentv1.StreamEvent, error)
	stop context.CancelFunc
}

// next returns the next A2A event and whether it is the stream's last.
func (s *runStream) next() (any, bool, error) {
	if len(s.pending) > 0 {
		out := s.pending[0]
		s.pending = s.pending[1:]
		return out, false, nil
	}
	for {
		ev := s.held
		s.held = nil
		if ev == nil {
			var err error
			if ev, err = s.recv(); errors.Is(err, io.EOF) {
				// The service ends every run's stream with done or error;
				// without one the run's end is unknown, which A2A cannot say.
				return s.tr.status(StateFailed, s.tr.agentMessage("eof", Part{Kind: "text", Text: "the run's event stream ended before the run did"}), true), true, nil
			} else if err != nil {
				return nil, false, err
			}
		}
		if out, final := s.tr.apply(ev); out != nil {
			return out, final, nil
		}
	}
}

type streamClient interface {
	Recv() (*agentv1.StreamResponse, error)
}

type joinClient interface {
	Recv() (*agentv1.JoinRunResponse, error)
}

// startRun starts the run a message asks for: a new run on the message's
// context (a new thread without one), or, for a message naming a task that
// waits for input, that run resumed with the message as the answer.
func (h *Handler) startRun(ctx context.Context, agentID string, p *SendParams) (*runStream, error) {
	text, decisions, err := readMessage(p.Message)
	if err != nil {
		return nil, err
	}
	if p.Message.TaskID != "" {
		return h.resume(ctx, agentID, p.Message, text, decisions)
	}
	if decisions != nil {
		return nil, &Error{Code: CodeInvalidParams, Message: "decisions answer a task waiting for input: set message.taskId"}
	}
	ctx, stop := context.WithCancel(ctx)
	// Background: an A2A task outlives the request that started it; it is
	// cancelled with tasks/cancel.
	sc, err := h.agent.Stream(ctx, &agentv1.StreamRequest{
		AgentId: agentID, ThreadId: p.Message.ContextID, Background: true,
		Messages: []*agentv1.Message{{Role: "user", Content: text}},
	})
	if err != nil {
		stop()
		return nil, err
	}
	first, err := sc.Recv()
	if err != nil {
		stop()
		return nil, err
	}
	s := &runStream{tr: newTracker("", p.Message.ContextID), recv: recvStream(sc), stop: stop}
	out, _ := s.tr.apply(first.GetEvent())
	if out == nil {
		s.held = first.GetEvent()
		return s, nil
	}
	user := *p.Message
	user.Kind, user.TaskID, user.ContextID = "message", s.tr.task.ID, s.tr.task.ContextID
	s.tr.task.History = []Message{user}
	s.pending = []any{s.tr.snapshot()}
	return s, nil
}

func recvStream(sc streamClient) func() (*agentv1.StreamEvent, error) {
	return func() (*agentv1.StreamEvent, error) {
		m, err := sc.Recv()
		return m.GetEvent(), err
	}
}

func recvJoin(jc joinClient) func() (*agentv1.StreamEvent, error) {
	return func() (*agentv1.StreamEvent, error) {
		m, err := jc.Recv()
		return m.GetEvent(), err
	}
}

// readMessage takes a client's message apart: its text, and the decisions
// of a data part {"decisions": [...]} (ApprovalDecision's JSON), if any.
func readMessage(m *Message) (string, []*agentv1.ApprovalDecision, error) {
	if m == nil {
		return "", nil, &Error{Code: CodeInvalidParams, Message: "params.message is required"}
	}
	if m.Role != "user" {
		return "", nil, &Error{Code: CodeInvalidParams, Message: `message.role must be "user"`}
	}
	if len(m.Parts) == 0 {
		return "", nil, &Error{Code: CodeInvalidParams, Message: "message.parts is empty"}
	}
	var texts []string
	var decisions []*agentv1.ApprovalDecision
	for _, part := range m.Parts {
		switch part.Kind {
		case "text":
			texts = append(texts, part.Text)
		case "data":
			raw, ok := part.Data["decisions"]
			if !ok {
				return "", nil, &Error{Code: CodeContentTypeNotSupported, Message: `a data part must hold "decisions"; send text otherwise`}
			}
			ds, err := parseDecisions(raw)
			if err != nil {
				return "", nil, &Error{Code: CodeInvalidParams, Message: "decisions: " + err.Error()}
			}
			decisions = append(decisions, ds...)
		default:
			return "", nil, &Error{Code: CodeContentTypeNotSupported, Message: fmt.Sprintf("%q parts are not supported: the agents take text", part.Kind)}
		}
	}
	text := strings.Join(texts, "\n")
	if strings.TrimSpace(text) == "" && decisions == nil {
		return "", nil, &Error{Code: CodeInvalidParams, Message: "the message has no text"}
	}
	return text, decisions, nil
}

func parseDecisions(raw any) ([]*agentv1.ApprovalDecision, error) {
	list, ok := raw.([]any)
	if !ok {
		return nil, errors.New("must be a list")
	}
	out := make([]*agentv1.ApprovalDecision, 0, len(list))
	for _, item := range list {
		b, err := json.Marshal(item)
		if err != nil {
			return nil, errors.New("each must be an object")
		}
		var d struct {
			ToolCallID string         `json:"tool_call_id"`
			Action     string         `json:"action"`
			Message    string         `json:"message"`
			Always     bool           `json:"always"`
			Args       map[string]any `json:"args"`
		}
		if err := json.Unmarshal(b, &d); err != nil || d.ToolCallID == "" || d.Action == "" {
			return nil, errors.New("each needs tool_call_id and action")
		}
		dec := &agentv1.ApprovalDecision{ToolCallId: d.ToolCallID, Action: d.Action, Message: d.Message, Always: d.Always}
		if d.Args != nil {
			s, err := structpb.NewStruct(d.Args)
			if err != nil {
				return nil, errors.New("args must be a JSON object")
			}
			dec.Args = s
		}
		out = append(out, dec)
	}
	return out, nil
}

// ownRun returns the run of a task of agentID; a run of another agent, or
// of another user (the service answers NotFound), is no task here.
func (h *Handler) ownRun(ctx context.Context, agentID, taskID string) (*agentv1.Run, error) {
	resp, err := h.agent.GetRun(ctx, &agentv1.GetRunRequest{RunId: taskID})
	if status.Code(err) == codes.NotFound || (err == nil && resp.GetRun().GetAgentId() != agentID) {
		return nil, &Error{Code: CodeTaskNotFound, Message: "task not found: " + taskID}
	}
	if err != nil {
		return nil, err
	}
	return resp.GetRun(), nil
}

// resume answers a task waiting for input and follows the run on.
func (h *Handler) resume(ctx context.Context, agentID string, m *Message, text string, decisions []*agentv1.ApprovalDecision) (*runStream, error) {
	run, err := h.ownRun(ctx, agentID, m.TaskID)
	if err != nil {
		return nil, err
	}
	if m.ContextID != "" && m.ContextID != run.GetThreadId() {
		return nil, &Error{Code: CodeInvalidParams, Message: "message.contextId is not the task's context"}
	}
	if run.GetStatus() != runWaiting {
		return nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("task %s is %s: only an input-required task takes a message; send a new message with its contextId to continue the conversation", run.GetRunId(), StateOf(run.GetStatus()))}
	}
	if decisions == nil {
		decisions = decide(run.GetPending(), text)
	}
	if _, err := h.agent.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: run.GetRunId(), Decisions: decisions}); err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	jc, err := h.agent.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: run.GetRunId(), AfterEventId: run.GetLastEventId()})
	if err != nil {
		stop()
		return nil, err
	}
	s := &runStream{tr: newTracker(run.GetRunId(), run.GetThreadId()), recv: recvJoin(jc), stop: stop}
	s.pending = []any{s.tr.status(StateWorking, nil, false)}
	return s, nil
}

// decide turns a text reply into decisions on the pending calls: the
// answer to an ask_user question, else approval of every call when the
// text says "approve" (or "yes"), and rejection with the text otherwise.
func decide(pending []*agentv1.ToolCall, text string) []*agentv1.ApprovalDecision {
	word := strings.ToLower(strings.Trim(strings.TrimSpace(text), ".!"))
	approve := word == "approve" || word == "approved" || word == "yes" || word == "y" || word == "ok"
	out := make([]*agentv1.ApprovalDecision, 0, len(pending))
	for _, c := range pending {
		d := &agentv1.ApprovalDecision{ToolCallId: c.GetId()}
		switch {
		case c.GetName() == askUserTool:
			d.Action, d.Message = "answer", text
		case approve:
			d.Action = "approve"
		default:
			d.Action, d.Message = "reject", text
		}
		out = append(out, d)
	}
	return out
}

// resubscribe replays a task's events from its start and follows it on.
func (h *Handler) resubscribe(ctx context.Context, agentID, taskID string) (*runStream, error) {
	run, err := h.ownRun(ctx, agentID, taskID)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	jc, err := h.agent.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: run.GetRunId()})
	if err != nil {
		stop()
		return nil, err
	}
	return &runStream{tr: newTracker(run.GetRunId(), run.GetThreadId()), recv: recvJoin(jc), stop: stop}, nil
}

// send runs message/send: it waits for the task to end or to need input,
// unless the client asked not to block; then the task is answered as it
// is when it started.
func (h *Handler) send(ctx context.Context, agentID string, p *SendParams) (*Task, error) {
	s, err := h.startRun(ctx, agentID, p)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	block := p.Configuration == nil || p.Configuration.Blocking == nil || *p.Configuration.Blocking
	for {
		_, final, err := s.next()
		if err != nil {
			return nil, err
		}
		if final || !block {
			return s.tr.snapshot(), nil
		}
	}
}

// stream answers with Server-Sent Events, one JSON-RPC response per event.
// An error before the first event is a plain JSON-RPC error response.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, id json.RawMessage, start func(context.Context) (*runStream, error)) {
	ctx := r.Context()
	s, err := start(ctx)
	if err != nil {
		writeJSON(w, http.StatusOK, Response{JSONRPC: "2.0", ID: id, Error: h.rpcError(ctx, "message/stream", err)})
		return
	}
	defer s.stop()
	sw := sse.NewWriter(w, h.heartbeat)
	defer sw.Close()
	sw.WriteHeader(http.StatusOK)
	for {
		out, final, err := s.next()
		resp := Response{JSONRPC: "2.0", ID: id, Result: out}
		if err != nil {
			if ctx.Err() != nil {
				return // the client left; the task goes on
			}
			resp.Result, resp.Error = nil, h.rpcError(ctx, "message/stream", err)
		}
		if werr := writeFrame(sw, &resp); werr != nil {
			return
		}
		if err != nil || final {
			return
		}
	}
}

// writeFrame writes one SSE frame holding v's JSON and flushes it.
func writeFrame(sw *sse.Writer, v any) error {
	frame, err := encodeFrame(v)
	if err != nil {
		return err
	}
	if _, err := sw.Write(frame); err != nil {
		return err
	}
	return sw.FlushError()
}

// encodeFrame is the SSE frame holding v's JSON.
func encodeFrame(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	frame := make([]byte, 0, len(b)+8)
	frame = append(frame, "data: "...)
	frame = append(frame, b...)
	return append(frame, "\n\n"...), nil
}

// getTask answers a task as its run stands. A finished run's artifacts are
// rebuilt from its event log while the service keeps it (-run-retention);
// a running task has its state only.
func (h *Handler) getTask(ctx context.Context, agentID, taskID string) (*Task, error) {
	run, err := h.ownRun(ctx, agentID, taskID)
	if err != nil {
		return nil, err
	}
	tr := newTracker(run.GetRunId(), run.GetThreadId())
	if terminal(StateOf(run.GetStatus())) {
		h.replay(ctx, tr, run.GetRunId())
	}
	tr.fromRun(run)
	return tr.snapshot(), nil
}

// replay applies a finished run's logged events to tr. A log that is gone
// leaves the task without artifacts, which is no error.
func (h *Handler) replay(ctx context.Context, tr *tracker, runID string) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	jc, err := h.agent.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: runID})
	if err != nil {
		return
	}
	for {
		m, err := jc.Recv()
		if err != nil {
			return
		}
		tr.apply(m.GetEvent())
	}
}

// cancelTask cancels a task that has not ended.
func (h *Handler) cancelTask(ctx context.Context, agentID, taskID string) (*Task, error) {
	run, err := h.ownRun(ctx, agentID, taskID)
	if err != nil {
		return nil, err
	}
	if state := StateOf(run.GetStatus()); terminal(state) {
		return nil, &Error{Code: CodeTaskNotCancelable, Message: fmt.Sprintf("task %s is already %s", taskID, state)}
	}
	resp, err := h.agent.CancelRun(ctx, &agentv1.CancelRunRequest{RunId: run.GetRunId()})
	if err != nil {
		return nil, err
	}
	tr := newTracker(run.GetRunId(), run.GetThreadId())
	tr.fromRun(resp.GetRun())
	return tr.snapshot(), nil
}
