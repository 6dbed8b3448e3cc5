package aisdk

import (
	"encoding/json"
	"strconv"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// Chunk is one part of the UI message stream: the JSON of one SSE data line,
// shaped as the AI SDK's uiMessageChunkSchema has it. Fields a chunk type
// does not have stay empty and are left out.
type Chunk struct {
	Type            string          `json:"type"`
	ID              string          `json:"id,omitempty"`
	Delta           string          `json:"delta,omitempty"`
	ToolCallID      string          `json:"toolCallId,omitempty"`
	ToolName        string          `json:"toolName,omitempty"`
	Title           string          `json:"title,omitempty"`
	Input           json.RawMessage `json:"input,omitempty"`
	Output          any             `json:"output,omitempty"`
	ErrorText       string          `json:"errorText,omitempty"`
	Dynamic         bool            `json:"dynamic,omitempty"`
	ApprovalID      string          `json:"approvalId,omitempty"`
	Data            any             `json:"data,omitempty"`
	Reason          string          `json:"reason,omitempty"`
	FinishReason    string          `json:"finishReason,omitempty"`
	MessageMetadata *Metadata       `json:"messageMetadata,omitempty"`
}

// Metadata is the assistant message's metadata: which Wick run and thread
// it comes from (a client sends it back with the message, which is how a
// later request finds the run to resume), and the tokens it used.
type Metadata struct {
	RunID    string `json:"runId,omitempty"`
	ThreadID string `json:"threadId,omitempty"`
	Usage    *Usage `json:"usage,omitempty"`
}

// Usage is a finished message's token counts, named as the AI SDK's
// LanguageModelUsage names them.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	TotalTokens  int64 `json:"totalTokens"`
}

// todosData is the data of the data-todos part.
type todosData struct {
	Todos []todo `json:"todos"`
}

type todo struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

// todosPartID makes every todos event replace the message's one data-todos
// part instead of adding another.
const todosPartID = "todos"

// Encoder maps one run's events onto UI message chunks. It keeps what the
// protocol needs and Wick's events do not carry: which text or reasoning
// part is open, the step boundaries, which tool calls the client knows.
type Encoder struct {
	runID, threadID string
	started         bool
	inStep          bool
	// afterTools is set by a tool result: the model's next output is a new
	// step, as the AI SDK counts one model call with its tool calls.
	afterTools bool
	textID     string
	reasonID   string
	parts      int
	announced  map[string]bool
	denied     map[string]bool
	usage      Usage
	usageSeen  bool
}

// NewEncoder returns an encoder for a new run's stream.
func NewEncoder() *Encoder {
	return &Encoder{announced: map[string]bool{}, denied: map[string]bool{}}
}

// Continue prepares e for the rest of a run the client already has part of:
// calls are tool calls its message holds (answered approvals), denied those
// of them the user rejected.
func (e *Encoder) Continue(calls, denied []string) {
	for _, id := range calls {
		e.announced[id] = true
	}
	for _, id := range denied {
		e.denied[id] = true
	}
}

// Begin returns the chunks that open the assistant message of run, unless
// they went out already.
func (e *Encoder) Begin(runID, threadID string) []Chunk {
	if e.started {
		return nil
	}
	e.started, e.runID, e.threadID = true, runID, threadID
	e.inStep = true
	return []Chunk{
		{Type: "start", MessageMetadata: &Metadata{RunID: runID, ThreadID: threadID}},
		{Type: "start-step"},
	}
}

// Event returns the chunks of one event, and whether the response ends with
// them: the run ended, or it waits for the user, who answers in the next
// request.
func (e *Encoder) Event(ev *agentv1.StreamEvent) (out []Chunk, last bool) {
	d := ev.GetPayload()
	switch k := d.GetKind().(type) {
	case *agentv1.RunEventData_OnChatModelStream:
		if k.OnChatModelStream.GetDelta() == "" {
			return nil, false
		}
		out = e.startOutput(ev, out)
		out = e.closeReasoning(out)
		if e.textID == "" {
			e.textID = e.nextID("text")
			out = append(out, Chunk{Type: "text-start", ID: e.textID})
		}
		return append(out, Chunk{Type: "text-delta", ID: e.textID, Delta: k.OnChatModelStream.GetDelta()}), false
	case *agentv1.RunEventData_OnThoughtStream:
		if k.OnThoughtStream.GetDelta() == "" {
			return nil, false
		}
		out = e.startOutput(ev, out)
		out = e.closeText(out)
		if e.reasonID == "" {
			e.reasonID = e.nextID("reasoning")
			out = append(out, Chunk{Type: "reasoning-start", ID: e.reasonID})
		}
		return append(out, Chunk{Type: "reasoning-delta", ID: e.reasonID, Delta: k.OnThoughtStream.GetDelta()}), false
	case *agentv1.RunEventData_OnToolStart:
		out = e.startOutput(ev, out)
		out = e.closeOpen(out)
		s := k.OnToolStart
		return e.announce(out, s.GetToolCallId(), ev.GetName(), s.GetArgs().AsMap(), s.GetTitle()), false
	case *agentv1.RunEventData_OnToolEnd:
		out = e.begin(ev, out)
		out = e.closeOpen(out)
		t := k.OnToolEnd
		e.afterTools = true
		id := t.GetToolCallId()
		switch {
		case e.denied[id]:
			return append(out, Chunk{Type: "tool-output-denied", ToolCallID: id}), false
		case t.GetError() != "":
			return append(out, Chunk{Type: "tool-output-error", ToolCallID: id, ErrorText: t.GetError(), Dynamic: true}), false
		}
		return append(out, Chunk{Type: "tool-output-available", ToolCallID: id, Output: t.GetOutput(), Dynamic: true}), false
	case *agentv1.RunEventData_OnTodos:
		out = e.begin(ev, out)
		data := todosData{Todos: make([]todo, 0, len(k.OnTodos.GetTodos()))}
		for _, t := range k.OnTodos.GetTodos() {
			data.Todos = append(data.Todos, todo{ID: t.GetId(), Title: t.GetTitle(), Status: t.GetStatus()})
		}
		return append(out, Chunk{Type: "data-todos", ID: todosPartID, Data: data}), false
	case *agentv1.RunEventData_OnUsage:
		e.usageSeen = true
		e.usage.InputTokens += int64(k.OnUsage.GetInputTokens())
		e.usage.OutputTokens += int64(k.OnUsage.GetOutputTokens())
		e.usage.TotalTokens = e.usage.InputTokens + e.usage.OutputTokens
		return nil, false
	case *agentv1.RunEventData_OnInterrupt:
		out = e.begin(ev, out)
		out = e.closeOpen(out)
		in := k.OnInterrupt
		for _, c := range in.GetToolCalls() {
			out = e.announce(out, c.GetId(), c.GetName(), c.GetArgs().AsMap(), "")
			// A question (ask_user) is answered by the next user message,
			// not approved: the protocol has no part for it.
			if in.GetKind() != "question" {
				out = append(out, Chunk{Type: "tool-approval-request", ApprovalID: c.GetId(), ToolCallID: c.GetId()})
			}
		}
		return e.finish(out, "tool-calls"), true
	case *agentv1.RunEventData_Done:
		out = e.begin(ev, out)
		return e.finish(e.closeOpen(out), "stop"), true
	case *agentv1.RunEventData_Error:
		out = e.begin(ev, out)
		out = e.closeOpen(out)
		msg := k.Error.GetMessage()
		if k.Error.GetCode() == "cancelled" {
			return append(out, Chunk{Type: "abort", Reason: msg}), true
		}
		if msg == "" {
			msg = "the run failed"
		}
		return append(out, Chunk{Type: "error", ErrorText: msg}), true
	case *agentv1.RunEventData_OnRunStart:
		return e.Begin(ev.GetRunId(), ev.GetThreadId()), false
	}
	// Sub-agents, background tasks and knowledge retrieval have no part in
	// the protocol; the task call that runs a sub-agent shows as a tool part.
	return nil, false
}

// begin opens the message when the stream did not start with on_run_start.
func (e *Encoder) begin(ev *agentv1.StreamEvent, out []Chunk) []Chunk {
	return append(out, e.Begin(ev.GetRunId(), ev.GetThreadId())...)
}

// startOutput opens the message, and a new step when the model answers
// after tool results.
func (e *Encoder) startOutput(ev *agentv1.StreamEvent, out []Chunk) []Chunk {
	out = e.begin(ev, out)
	if e.afterTools {
		e.afterTools = false
		out = e.closeOpen(out)
		if e.inStep {
			out = append(out, Chunk{Type: "finish-step"})
		}
		out = append(out, Chunk{Type: "start-step"})
		e.inStep = true
	}
	return out
}

// announce adds a tool call's input parts, once per call.
func (e *Encoder) announce(out []Chunk, id, name string, args map[string]any, title string) []Chunk {
	if e.announced[id] {
		return out
	}
	e.announced[id] = true
	input, err := json.Marshal(args)
	if err != nil || args == nil {
		input = json.RawMessage("{}")
	}
	return append(out,
		Chunk{Type: "tool-input-start", ToolCallID: id, ToolName: name, Title: title, Dynamic: true},
		Chunk{Type: "tool-input-available", ToolCallID: id, ToolName: name, Title: title, Input: input, Dynamic: true},
	)
}

func (e *Encoder) finish(out []Chunk, reason string) []Chunk {
	if e.inStep {
		out = append(out, Chunk{Type: "finish-step"})
		e.inStep = false
	}
	md := &Metadata{RunID: e.runID, ThreadID: e.threadID}
	if e.usageSeen {
		u := e.usage
		md.Usage = &u
	}
	return append(out, Chunk{Type: "finish", FinishReason: reason, MessageMetadata: md})
}

func (e *Encoder) closeOpen(out []Chunk) []Chunk {
	return e.closeReasoning(e.closeText(out))
}

func (e *Encoder) closeText(out []Chunk) []Chunk {
	if e.textID == "" {
		return out
	}
	out = append(out, Chunk{Type: "text-end", ID: e.textID})
	e.textID = ""
	return out
}

func (e *Encoder) closeReasoning(out []Chunk) []Chunk {
	if e.reasonID == "" {
		return out
	}
	out = append(out, Chunk{Type: "reasoning-end", ID: e.reasonID})
	e.reasonID = ""
	return out
}

func (e *Encoder) nextID(kind string) string {
	e.parts++
	return kind + "-" + strconv.Itoa(e.parts)
}

// AppendFrame appends c's SSE frame.
func AppendFrame(b []byte, c Chunk) ([]byte, error) {
	j, err := json.Marshal(c)
	if err != nil {
		return b, err
	}
	b = append(b, "data: "...)
	b = append(b, j...)
	return append(b, '\n', '\n'), nil
}

// doneFrame ends the stream, as the AI SDK's own servers end it.
const doneFrame = "data: [DONE]\n\n"
