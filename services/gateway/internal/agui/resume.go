package agui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// askUserTool is the tool whose pending call is a question to the user.
const askUserTool = "ask_user"

// interruptID names a pending call of a run: "<run id>:<tool call id>".
// Run ids have no colon, so the first one splits it.
func interruptID(runID, toolCallID string) string { return runID + ":" + toolCallID }

// decisionPayload is the payload of a resume entry: what a Wick
// ApprovalDecision holds, and answer for a question.
type decisionPayload struct {
	Action  string         `json:"action"`
	Args    map[string]any `json:"args"`
	Message string         `json:"message"`
	Always  bool           `json:"always"`
	Answer  string         `json:"answer"`
}

// resume decides the pending calls of the run the resume entries name
// (ResumeRun) and follows the rest of it (JoinRun). Every entry names a
// call of one run, on the request's thread and agent; a pending call
// without an entry is rejected, as ResumeRun rejects it.
func (h *Handler) resume(ctx context.Context, agentID string, req request, t *translator) (eventSource, error) {
	runID := ""
	for i, e := range req.resume {
		r, _, ok := strings.Cut(e.InterruptID, ":")
		field := fmt.Sprintf("resume[%d].interruptId", i)
		if !ok || r == "" {
			return nil, badInput(field, "%q is not an interrupt id of this endpoint", e.InterruptID)
		}
		if runID != "" && r != runID {
			return nil, badInput(field, "names run %s; every entry must answer the same run (%s)", r, runID)
		}
		runID = r
	}
	got, err := h.agent.GetRun(ctx, &agentv1.GetRunRequest{RunId: runID})
	if err != nil {
		return nil, err
	}
	run := got.GetRun()
	if run.GetThreadId() != req.threadID || run.GetAgentId() != agentID {
		return nil, badInput("resume[0].interruptId", "names a run of another thread or agent than threadId %s of agent %s", req.threadID, agentID)
	}
	pending := make(map[string]*agentv1.ToolCall, len(run.GetPending()))
	for _, c := range run.GetPending() {
		pending[c.GetId()] = c
	}
	decisions := make([]*agentv1.ApprovalDecision, 0, len(req.resume))
	for i, e := range req.resume {
		_, callID, _ := strings.Cut(e.InterruptID, ":")
		call, ok := pending[callID]
		if !ok {
			return nil, badInput(fmt.Sprintf("resume[%d].interruptId", i), "run %s has no pending call %s (its status is %s)", runID, callID, run.GetStatus())
		}
		d, err := decision(fmt.Sprintf("resume[%d].payload", i), call, e)
		if err != nil {
			return nil, err
		}
		decisions = append(decisions, d)
	}
	if _, err := h.agent.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: runID, Decisions: decisions}); err != nil {
		return nil, err
	}
	// The events after the interrupt; the suspended calls were announced
	// with it, so their on_tool_start adds nothing.
	st, err := h.agent.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: runID, AfterEventId: run.GetLastEventId()})
	if err != nil {
		return nil, err
	}
	t.wickRunID = runID
	t.announced = make(map[string]bool, len(pending))
	for id := range pending {
		t.announced[id] = true
	}
	return func() (*agentv1.StreamEvent, error) {
		m, err := st.Recv()
		return m.GetEvent(), err
	}, nil
}

// decision is the Wick decision of a resume entry on a pending call. A
// cancelled entry rejects the call; a resolved one approves it unless its
// payload says otherwise, and answers a question with its payload (a
// string, or {"answer": …}).
func decision(field string, call *agentv1.ToolCall, e resumeEntry) (*agentv1.ApprovalDecision, error) {
	var p decisionPayload
	raw := bytes.TrimSpace(e.Payload)
	isString := len(raw) > 0 && raw[0] == '"'
	if isString {
		if err := json.Unmarshal(raw, &p.Answer); err != nil {
			return nil, badInput(field, "is not a JSON string")
		}
	} else if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, badInput(field, "must be a string or an object {action, args, message, always, answer}")
		}
	}
	d := &agentv1.ApprovalDecision{ToolCallId: call.GetId()}
	if call.GetName() == askUserTool {
		if e.Status == "cancelled" {
			return nil, badInput(field, "a question cannot be cancelled; answer it, or cancel the run")
		}
		answer := p.Answer
		if answer == "" {
			answer = p.Message
		}
		if strings.TrimSpace(answer) == "" {
			return nil, badInput(field, "the answer to the question is required")
		}
		d.Action, d.Message = "answer", answer
		return d, nil
	}
	if isString {
		d.Message = p.Answer
	}
	switch {
	case e.Status == "cancelled":
		d.Action = "reject"
	case p.Action == "":
		d.Action = "approve"
	case p.Action == "approve" || p.Action == "reject" || p.Action == "edit":
		d.Action = p.Action
	default:
		return nil, badInput(field+".action", "must be approve, reject or edit")
	}
	if p.Message != "" {
		d.Message = p.Message
	}
	d.Always = p.Always
	if d.Action == "edit" {
		args, err := structpb.NewStruct(p.Args)
		if err != nil || p.Args == nil {
			return nil, badInput(field+".args", "an object of the call's new arguments is required with edit")
		}
		d.Args = args
	}
	return d, nil
}
