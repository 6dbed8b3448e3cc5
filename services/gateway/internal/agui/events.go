package agui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/runevent"
)

// AG-UI's event types that Wick sends.
const (
	typeRunStarted         = "RUN_STARTED"
	typeRunFinished        = "RUN_FINISHED"
	typeRunError           = "RUN_ERROR"
	typeTextStart          = "TEXT_MESSAGE_START"
	typeTextContent        = "TEXT_MESSAGE_CONTENT"
	typeTextEnd            = "TEXT_MESSAGE_END"
	typeToolStart          = "TOOL_CALL_START"
	typeToolArgs           = "TOOL_CALL_ARGS"
	typeToolEnd            = "TOOL_CALL_END"
	typeToolResult         = "TOOL_CALL_RESULT"
	typeStateSnapshot      = "STATE_SNAPSHOT"
	typeStateDelta         = "STATE_DELTA"
	typeReasoningStart     = "REASONING_START"
	typeReasoningMsgStart  = "REASONING_MESSAGE_START"
	typeReasoningMsgDelta  = "REASONING_MESSAGE_CONTENT"
	typeReasoningMsgEnd    = "REASONING_MESSAGE_END"
	typeReasoningEnd       = "REASONING_END"
	typeCustom             = "CUSTOM"
	customPrefix           = "wick."
	interruptReasonApprove = "approval"
	interruptReasonAsk     = "question"
)

// The events' JSON, one type per AG-UI event shape (@ag-ui/core's schemas).
type (
	runStarted struct {
		Type     string    `json:"type"`
		ThreadID string    `json:"threadId"`
		RunID    string    `json:"runId"`
		Metadata *metadata `json:"metadata,omitempty"`
	}
	// metadata carries Wick's own ids, for its REST API (cancel, resume,
	// re-join).
	metadata struct {
		WickRunID    string `json:"wickRunId,omitempty"`
		WickThreadID string `json:"wickThreadId,omitempty"`
	}
	runFinished struct {
		Type     string       `json:"type"`
		ThreadID string       `json:"threadId"`
		RunID    string       `json:"runId"`
		Outcome  *outcome     `json:"outcome,omitempty"`
		Usage    []tokenUsage `json:"usage,omitempty"`
	}
	outcome struct {
		Type       string      `json:"type"`
		Interrupts []interrupt `json:"interrupts,omitempty"`
	}
	interrupt struct {
		ID             string         `json:"id"`
		Reason         string         `json:"reason"`
		Message        string         `json:"message,omitempty"`
		ToolCallID     string         `json:"toolCallId,omitempty"`
		ResponseSchema map[string]any `json:"responseSchema,omitempty"`
		Metadata       map[string]any `json:"metadata,omitempty"`
	}
	tokenUsage struct {
		InputTokens  int64 `json:"inputTokens"`
		OutputTokens int64 `json:"outputTokens"`
		TotalTokens  int64 `json:"totalTokens"`
	}
	runError struct {
		Type    string       `json:"type"`
		Message string       `json:"message"`
		Code    string       `json:"code,omitempty"`
		Usage   []tokenUsage `json:"usage,omitempty"`
	}
	textStart struct {
		Type      string `json:"type"`
		MessageID string `json:"messageId"`
		Role      string `json:"role,omitempty"`
	}
	// messageDelta is TEXT_MESSAGE_CONTENT and REASONING_MESSAGE_CONTENT.
	messageDelta struct {
		Type      string `json:"type"`
		MessageID string `json:"messageId"`
		Delta     string `json:"delta"`
	}
	// messageMark is TEXT_MESSAGE_END and the reasoning span's marks.
	messageMark struct {
		Type      string `json:"type"`
		MessageID string `json:"messageId"`
		Role      string `json:"role,omitempty"`
	}
	toolStart struct {
		Type            string `json:"type"`
		ToolCallID      string `json:"toolCallId"`
		ToolCallName    string `json:"toolCallName"`
		ParentMessageID string `json:"parentMessageId,omitempty"`
	}
	toolArgs struct {
		Type       string `json:"type"`
		ToolCallID string `json:"toolCallId"`
		Delta      string `json:"delta"`
	}
	toolEnd struct {
		Type       string `json:"type"`
		ToolCallID string `json:"toolCallId"`
	}
	toolResult struct {
		Type       string `json:"type"`
		MessageID  string `json:"messageId"`
		ToolCallID string `json:"toolCallId"`
		Content    string `json:"content"`
		Role       string `json:"role"`
	}
	stateSnapshot struct {
		Type     string `json:"type"`
		Snapshot state  `json:"snapshot"`
	}
	stateDelta struct {
		Type  string    `json:"type"`
		Delta []patchOp `json:"delta"`
	}
	custom struct {
		Type  string          `json:"type"`
		Name  string          `json:"name"`
		Value json.RawMessage `json:"value"`
	}
)

// state is the AG-UI state of a Wick run: its todo list.
type state struct {
	Todos []todo `json:"todos"`
}

// todo is one item of the todo list, as Wick's API writes it.
type todo struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

// translator turns one Wick run's events into AG-UI events. Wick streams an
// assistant turn as text deltas, then one on_tool_start per call of the
// turn, then their on_tool_end; AG-UI wants each message and call opened
// and closed, so the translator keeps which are open.
type translator struct {
	threadID, runID string // the client's ids, echoed
	wickRunID       string

	started, ended bool
	n              int // for message ids
	// turn is the assistant message of the model's current turn (its text
	// and its tool calls); empty until the turn says something.
	turn     string
	textOpen bool
	// afterTools is set once a tool call of the turn ended: the next text
	// or call belongs to the model's next turn.
	afterTools bool
	reasoning  string // the open reasoning message, if any
	todos      []todo
	haveTodos  bool
	usage      tokenUsage
	haveUsage  bool
	// announced are tool calls whose start the client already has: the
	// calls a resumed run was suspended on.
	announced map[string]bool
	// round is the calls of the current tool round, in the order the model
	// made them; held are results that ended before an earlier call's. The
	// thread records a round's results in call order, and so does the
	// client, which appends them as they come.
	round []string
	held  map[string]toolResult
}

func newTranslator(threadID, runID string) *translator {
	return &translator{threadID: threadID, runID: runID}
}

// frames appends the AG-UI events of ev, as SSE frames, to b.
func (t *translator) frames(b []byte, ev *agentv1.StreamEvent) ([]byte, error) {
	if t.ended {
		return b, nil
	}
	var err error
	add := func(v any) {
		if err == nil {
			b, err = appendFrame(b, v)
		}
	}
	if !t.started {
		t.started = true
		if t.wickRunID == "" {
			t.wickRunID = ev.GetRunId()
		}
		add(runStarted{Type: typeRunStarted, ThreadID: t.threadID, RunID: t.runID,
			Metadata: &metadata{WickRunID: t.wickRunID, WickThreadID: ev.GetThreadId()}})
	}
	switch k := ev.GetPayload().GetKind().(type) {
	case *agentv1.RunEventData_OnRunStart:
		// RUN_STARTED went out above.
	case *agentv1.RunEventData_OnChatModelStream:
		d := k.OnChatModelStream.GetDelta()
		if d == "" {
			break
		}
		t.closeReasoning(add)
		t.openText(add)
		add(messageDelta{Type: typeTextContent, MessageID: t.turn, Delta: d})
	case *agentv1.RunEventData_OnThoughtStream:
		d := k.OnThoughtStream.GetDelta()
		if d == "" {
			break
		}
		t.closeText(add)
		if t.reasoning == "" {
			t.reasoning = t.newID("reasoning")
			add(messageMark{Type: typeReasoningStart, MessageID: t.reasoning})
			add(messageMark{Type: typeReasoningMsgStart, MessageID: t.reasoning, Role: "reasoning"})
		}
		add(messageDelta{Type: typeReasoningMsgDelta, MessageID: t.reasoning, Delta: d})
	case *agentv1.RunEventData_OnToolStart:
		t.closeReasoning(add)
		t.closeText(add)
		id := k.OnToolStart.GetToolCallId()
		if t.afterTools {
			t.flushResults(add, true)
		}
		t.round = append(t.round, id)
		if t.announced[id] {
			break
		}
		t.startTurn()
		t.announceCall(add, id, ev.GetName(), k.OnToolStart.GetArgs())
	case *agentv1.RunEventData_OnToolEnd:
		t.closeReasoning(add)
		t.closeText(add)
		t.afterTools = true
		id := k.OnToolEnd.GetToolCallId()
		if t.held == nil {
			t.held = make(map[string]toolResult)
		}
		t.held[id] = toolResult{Type: typeToolResult, MessageID: t.newID("tool"), ToolCallID: id, Content: toolContent(k.OnToolEnd), Role: "tool"}
		if !slices.Contains(t.round, id) {
			// A result without a start in this stream: nothing to wait for.
			t.round = append(t.round, id)
		}
		t.flushResults(add, false)
	case *agentv1.RunEventData_OnTodos:
		next := make([]todo, len(k.OnTodos.GetTodos()))
		for i, td := range k.OnTodos.GetTodos() {
			next[i] = todo{ID: td.GetId(), Title: td.GetTitle(), Status: td.GetStatus()}
		}
		if !t.haveTodos {
			add(stateSnapshot{Type: typeStateSnapshot, Snapshot: state{Todos: next}})
		} else if ops := todoPatch(t.todos, next); len(ops) > 0 {
			add(stateDelta{Type: typeStateDelta, Delta: ops})
		}
		t.todos, t.haveTodos = next, true
	case *agentv1.RunEventData_OnUsage:
		u := k.OnUsage
		t.usage.InputTokens += int64(u.GetInputTokens())
		t.usage.OutputTokens += int64(u.GetOutputTokens())
		t.usage.TotalTokens = t.usage.InputTokens + t.usage.OutputTokens
		t.haveUsage = true
	case *agentv1.RunEventData_OnInterrupt:
		t.closeAll(add)
		t.ended = true
		add(runFinished{Type: typeRunFinished, ThreadID: t.threadID, RunID: t.runID,
			Outcome: &outcome{Type: "interrupt", Interrupts: t.interrupts(add, k.OnInterrupt)}, Usage: t.usageList()})
	case *agentv1.RunEventData_Done:
		t.closeAll(add)
		t.ended = true
		add(runFinished{Type: typeRunFinished, ThreadID: t.threadID, RunID: t.runID, Outcome: &outcome{Type: "success"}, Usage: t.usageList()})
	case *agentv1.RunEventData_Error:
		t.closeAll(add)
		t.ended = true
		if k.Error.GetCode() == "cancelled" {
			// Cancelled by its user (POST /runs/{run_id}/cancel): stopped,
			// not failed.
			add(runFinished{Type: typeRunFinished, ThreadID: t.threadID, RunID: t.runID, Outcome: &outcome{Type: "cancelled"}, Usage: t.usageList()})
			break
		}
		add(runError{Type: typeRunError, Message: k.Error.GetMessage(), Code: k.Error.GetCode(), Usage: t.usageList()})
	case nil:
		// An event without data (none is sent today) says nothing to map.
	default:
		// Kinds AG-UI has no event for (knowledge retrieval, sub-agents,
		// background tasks) go out as CUSTOM events named wick.<kind>, with
		// the data Wick's own stream gives them.
		data, derr := runevent.AppendData(nil, ev.GetPayload())
		if derr != nil {
			return b, derr
		}
		add(custom{Type: typeCustom, Name: customPrefix + runevent.Kind(ev.GetPayload()), Value: data})
	}
	return b, err
}

// fail ends the stream with RUN_ERROR for a failure of the stream itself
// (the agent service went away), unless the run already ended.
func (t *translator) fail(b []byte, msg, code string) ([]byte, error) {
	if t.ended {
		return b, nil
	}
	var err error
	add := func(v any) {
		if err == nil {
			b, err = appendFrame(b, v)
		}
	}
	if !t.started {
		t.started = true
		add(runStarted{Type: typeRunStarted, ThreadID: t.threadID, RunID: t.runID})
	}
	t.closeAll(add)
	t.ended = true
	add(runError{Type: typeRunError, Message: msg, Code: code, Usage: t.usageList()})
	return b, err
}

func (t *translator) newID(kind string) string {
	t.n++
	return t.wickRunID + "-" + kind + "-" + strconv.Itoa(t.n)
}

// startTurn gives the model's turn its assistant message id.
func (t *translator) startTurn() {
	if t.turn == "" || t.afterTools {
		t.turn = t.newID("msg")
		t.afterTools = false
	}
}

func (t *translator) openText(add func(any)) {
	if t.textOpen && !t.afterTools {
		return
	}
	t.startTurn()
	t.textOpen = true
	add(textStart{Type: typeTextStart, MessageID: t.turn, Role: "assistant"})
}

func (t *translator) closeText(add func(any)) {
	if t.textOpen {
		t.textOpen = false
		add(messageMark{Type: typeTextEnd, MessageID: t.turn})
	}
}

func (t *translator) closeReasoning(add func(any)) {
	if t.reasoning != "" {
		add(messageMark{Type: typeReasoningMsgEnd, MessageID: t.reasoning})
		add(messageMark{Type: typeReasoningEnd, MessageID: t.reasoning})
		t.reasoning = ""
	}
}

func (t *translator) closeAll(add func(any)) {
	t.closeReasoning(add)
	t.closeText(add)
	t.flushResults(add, true)
}

// flushResults sends the held results of the round's first calls, up to
// the first call still running; all of them with all, when the round is
// over (a call that never ended has no result to wait for).
func (t *translator) flushResults(add func(any), all bool) {
	for len(t.round) > 0 {
		res, ok := t.held[t.round[0]]
		if ok {
			add(res)
			delete(t.held, t.round[0])
		} else if !all {
			return
		}
		t.round = t.round[1:]
	}
}

// announceCall sends a tool call's start, arguments and end.
func (t *translator) announceCall(add func(any), id, name string, args *structpb.Struct) {
	add(toolStart{Type: typeToolStart, ToolCallID: id, ToolCallName: name, ParentMessageID: t.turn})
	add(toolArgs{Type: typeToolArgs, ToolCallID: id, Delta: argsJSON(args)})
	add(toolEnd{Type: typeToolEnd, ToolCallID: id})
}

// interrupts are the AG-UI interrupts of a Wick run waiting for its user.
// The pending calls have had no on_tool_start yet (they run once approved),
// so they are announced here, on the turn that made them; each interrupt
// names its call, and its id names the run and the call, which is all a
// resume needs.
func (t *translator) interrupts(add func(any), d *agentv1.InterruptData) []interrupt {
	t.startTurn()
	if d.GetKind() == "question" {
		callID := d.GetToolCallId()
		for _, c := range d.GetToolCalls() {
			if c.GetId() == callID {
				t.announceCall(add, c.GetId(), c.GetName(), c.GetArgs())
			}
		}
		schema := map[string]any{"type": "string"}
		if len(d.GetChoices()) > 0 {
			schema["examples"] = d.GetChoices()
		}
		md := map[string]any{"wickRunId": t.wickRunID}
		if len(d.GetChoices()) > 0 {
			md["choices"] = d.GetChoices()
		}
		return []interrupt{{ID: interruptID(t.wickRunID, callID), Reason: interruptReasonAsk, Message: d.GetQuestion(),
			ToolCallID: callID, ResponseSchema: schema, Metadata: md}}
	}
	out := make([]interrupt, 0, len(d.GetToolCalls()))
	for _, c := range d.GetToolCalls() {
		t.announceCall(add, c.GetId(), c.GetName(), c.GetArgs())
		out = append(out, interrupt{
			ID: interruptID(t.wickRunID, c.GetId()), Reason: interruptReasonApprove,
			Message:    fmt.Sprintf("Approve the call of %s?", c.GetName()),
			ToolCallID: c.GetId(), ResponseSchema: decisionSchema,
			Metadata: map[string]any{"wickRunId": t.wickRunID, "tool": c.GetName(), "always": d.GetAlways()},
		})
	}
	return out
}

// decisionSchema describes the payload of a resume entry that answers an
// approval (all optional: a resolved entry without one approves).
var decisionSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"action":  map[string]any{"type": "string", "enum": []string{"approve", "reject", "edit"}},
		"args":    map[string]any{"type": "object"},
		"message": map[string]any{"type": "string"},
		"always":  map[string]any{"type": "boolean"},
	},
}

func (t *translator) usageList() []tokenUsage {
	if !t.haveUsage {
		return nil
	}
	return []tokenUsage{t.usage}
}

// toolContent is a tool result as the thread records it for the model.
func toolContent(d *agentv1.ToolEndData) string {
	if d.GetError() == "" {
		return d.GetOutput()
	}
	s := "Error: " + d.GetError()
	if d.GetOutput() != "" {
		s += "\n" + d.GetOutput()
	}
	return s
}

// appendFrame appends v as one SSE frame: `data: <json>` and a blank line.
func appendFrame(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return b, fmt.Errorf("agui: encode %T: %w", v, err)
	}
	b = append(b, "data: "...)
	b = append(b, j...)
	return append(b, '\n', '\n'), nil
}

// argsJSON is a call's arguments as the JSON text AG-UI streams them in.
func argsJSON(args *structpb.Struct) string {
	if args == nil {
		return "{}"
	}
	// encoding/json sorts the keys: the same call always reads the same.
	b, err := json.Marshal(args.AsMap())
	if err != nil {
		return "{}"
	}
	return string(b)
}
