package langgraph

import (
	"encoding/json"
	"fmt"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/runevent"
)

// Stream modes of LangGraph's runs that Wick's run events map onto.
const (
	modeValues        = "values"
	modeMessages      = "messages"
	modeMessagesTuple = "messages-tuple"
	modeUpdates       = "updates"
	modeEvents        = "events"
	modeCustom        = "custom"
)

// ignoredModes are LangGraph's modes Wick has nothing for (it keeps no
// checkpoints and runs one loop, not a graph of tasks); asking for them is
// accepted and yields no events, as a graph that never writes them would.
var ignoredModes = map[string]bool{"debug": true, "tasks": true, "checkpoints": true}

// Names of the graph's nodes as Wick's loop has them: the model's turn and
// the tools' round.
const (
	nodeAgent = "agent"
	nodeTools = "tools"
)

// frame is one SSE event of LangGraph's stream: its name and its data.
type frame struct {
	event string
	data  any
}

// translator turns one run's Wick events into LangGraph's stream events
// for the modes asked, keeping the thread's messages as the run grows them
// so that values events carry the whole state.
type translator struct {
	threadID, runID, agentID string
	modes                    map[string]bool

	state values
	// cur is the index in state.Messages of the model's message being
	// written; -1 when none.
	cur int
	// curDone says cur was complete and reported (updates, messages/complete).
	curDone bool
	// roundEnded says a tool of cur's round returned: a later tool call
	// belongs to the model's next message.
	roundEnded bool
	// announced holds the messages whose messages/metadata went out.
	announced map[string]bool
	step      int
}

func newTranslator(threadID, runID, agentID string, modes map[string]bool, base values) *translator {
	return &translator{threadID: threadID, runID: runID, agentID: agentID, modes: modes, state: base, cur: -1, announced: map[string]bool{}}
}

// addInput appends the run's input to the state.
func (t *translator) addInput(in []*agentv1.Message) {
	for _, m := range in {
		t.state.Messages = append(t.state.Messages, fromWick(t.threadID, len(t.state.Messages), m))
	}
}

// metadata is what LangGraph attaches to a streamed message: where in the
// graph it was written.
func (t *translator) metadata(node string) map[string]any {
	return map[string]any{
		"langgraph_node": node, "langgraph_step": t.step, "run_id": t.runID, "thread_id": t.threadID,
		"assistant_id": t.agentID, "graph_id": t.agentID,
	}
}

func (t *translator) valuesFrame() frame {
	v := t.state
	v.Messages = append([]message(nil), t.state.Messages...)
	return frame{modeValues, v}
}

// aiChunk is an AIMessageChunk dict: a piece of the model's message.
type aiChunk struct {
	Type             string          `json:"type"`
	Content          string          `json:"content"`
	ID               string          `json:"id"`
	ToolCalls        []toolCall      `json:"tool_calls"`
	ToolCallChunks   []toolCallChunk `json:"tool_call_chunks"`
	InvalidToolCalls []toolCall      `json:"invalid_tool_calls"`
	ResponseMetadata map[string]any  `json:"response_metadata"`
	AdditionalKwargs map[string]any  `json:"additional_kwargs"`
}

type toolCallChunk struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Args  string `json:"args"`
	Index int    `json:"index"`
	Type  string `json:"type"`
}

func newChunk(id, content string) aiChunk {
	return aiChunk{Type: "AIMessageChunk", Content: content, ID: id, ToolCalls: []toolCall{}, ToolCallChunks: []toolCallChunk{},
		InvalidToolCalls: []toolCall{}, ResponseMetadata: map[string]any{}, AdditionalKwargs: map[string]any{}}
}

// openAI returns the model's message that new output belongs to, starting
// one when the last is complete.
func (t *translator) openAI() (int, []frame) {
	if t.cur >= 0 && !t.roundEnded && len(t.state.Messages[t.cur].ToolCalls) == 0 && !t.curDone {
		return t.cur, nil
	}
	fs := t.finishAI()
	t.step++
	t.state.Messages = append(t.state.Messages, message{Type: typeAI, ID: messageID(t.threadID, len(t.state.Messages))})
	t.cur, t.curDone, t.roundEnded = len(t.state.Messages)-1, false, false
	return t.cur, fs
}

// finishAI reports the model's message as complete, once.
func (t *translator) finishAI() []frame {
	if t.cur < 0 || t.curDone {
		return nil
	}
	t.curDone = true
	m := t.state.Messages[t.cur]
	var fs []frame
	if t.modes[modeMessages] {
		fs = append(fs, t.announce(m, nodeAgent)...)
		fs = append(fs, frame{"messages/complete", []message{m}})
	}
	if t.modes[modeUpdates] {
		fs = append(fs, frame{modeUpdates, map[string]any{nodeAgent: map[string]any{"messages": []message{m}}}})
	}
	if t.modes[modeValues] {
		fs = append(fs, t.valuesFrame())
	}
	return fs
}

func (t *translator) announce(m message, node string) []frame {
	if t.announced[m.ID] {
		return nil
	}
	t.announced[m.ID] = true
	return []frame{{"messages/metadata", map[string]any{m.ID: map[string]any{"metadata": t.metadata(node)}}}}
}

// event translates one Wick event; end says the LangGraph run is over
// (done, error, or an interrupt that waits for a Command).
func (t *translator) event(ev *agentv1.StreamEvent) (fs []frame, end bool, err error) {
	p := ev.GetPayload()
	switch k := p.GetKind().(type) {
	case *agentv1.RunEventData_OnRunStart:
		return nil, false, nil
	case *agentv1.RunEventData_OnChatModelStream:
		i, fs := t.openAI()
		delta := k.OnChatModelStream.GetDelta()
		t.state.Messages[i].Content += delta
		m := t.state.Messages[i]
		if t.modes[modeMessagesTuple] {
			fs = append(fs, frame{modeMessages, []any{newChunk(m.ID, delta), t.metadata(nodeAgent)}})
		}
		if t.modes[modeMessages] {
			fs = append(fs, t.announce(m, nodeAgent)...)
			fs = append(fs, frame{"messages/partial", []message{m}})
		}
		if t.modes[modeEvents] {
			fs = append(fs, t.eventsFrame(ev, map[string]any{"chunk": newChunk(m.ID, delta)}))
		}
		return fs, false, nil
	case *agentv1.RunEventData_OnToolStart:
		d := k.OnToolStart
		tc := toolCall{ID: d.GetToolCallId(), Name: ev.GetName(), Args: d.GetArgs().AsMap(), Type: "tool_call"}
		if tc.Args == nil {
			tc.Args = map[string]any{}
		}
		fs := t.addCall(tc)
		if t.modes[modeEvents] {
			fs = append(fs, t.eventsFrame(ev, map[string]any{"input": tc.Args}))
		}
		return fs, false, nil
	case *agentv1.RunEventData_OnToolEnd:
		fs := t.finishAI()
		d := k.OnToolEnd
		name := ev.GetName()
		tm := message{Type: typeTool, Content: d.GetOutput(), ID: messageID(t.threadID, len(t.state.Messages)), ToolCallID: d.GetToolCallId(), Name: &name, Status: "success"}
		if d.GetError() != "" {
			tm.Status = "error"
			if tm.Content == "" {
				tm.Content = d.GetError()
			}
		}
		t.state.Messages = append(t.state.Messages, tm)
		t.roundEnded = true
		if t.modes[modeMessagesTuple] {
			fs = append(fs, frame{modeMessages, []any{tm, t.metadata(nodeTools)}})
		}
		if t.modes[modeMessages] {
			fs = append(fs, t.announce(tm, nodeTools)...)
			fs = append(fs, frame{"messages/complete", []message{tm}})
		}
		if t.modes[modeUpdates] {
			fs = append(fs, frame{modeUpdates, map[string]any{nodeTools: map[string]any{"messages": []message{tm}}}})
		}
		if t.modes[modeValues] {
			fs = append(fs, t.valuesFrame())
		}
		if t.modes[modeEvents] {
			fs = append(fs, t.eventsFrame(ev, map[string]any{"output": tm.Content}))
		}
		return fs, false, nil
	case *agentv1.RunEventData_OnTodos:
		t.state.Todos = todosOf(k.OnTodos.GetTodos())
		fs, err := t.custom(ev)
		if t.modes[modeUpdates] {
			fs = append(fs, frame{modeUpdates, map[string]any{nodeTools: map[string]any{"todos": t.state.Todos}}})
		}
		return fs, false, err
	case *agentv1.RunEventData_OnInterrupt:
		d := k.OnInterrupt
		var fs []frame
		for _, c := range d.GetToolCalls() {
			fs = append(fs, t.addCall(newToolCall(c))...)
		}
		fs = append(fs, t.finishAI()...)
		in := newInterrupt(t.runID, ev.GetId(), d)
		if t.modes[modeUpdates] {
			fs = append(fs, frame{modeUpdates, map[string]any{"__interrupt__": []interrupt{in}}})
		}
		if t.modes[modeValues] {
			vf := t.valuesFrame()
			v := vf.data.(values)
			v.Interrupt = []interrupt{in}
			fs = append(fs, frame{modeValues, v})
		}
		return fs, true, nil
	case *agentv1.RunEventData_Done:
		return t.finishAI(), true, nil
	case *agentv1.RunEventData_Error:
		fs := t.finishAI()
		return append(fs, frame{"error", map[string]string{"error": errorName(k.Error.GetCode()), "message": k.Error.GetMessage()}}), true, nil
	default:
		// Wick's own events that LangGraph has no mode for (reasoning,
		// usage, knowledge, sub-agents, background tasks) go out as custom
		// events with the data Wick's API gives them.
		fs, err := t.custom(ev)
		return fs, false, err
	}
}

// addCall adds a tool call to the model's current message (a new one once
// the last round has results) and streams it as a chunk.
func (t *translator) addCall(tc toolCall) []frame {
	var fs []frame
	if t.cur < 0 || t.roundEnded {
		_, fs = t.openAI()
	}
	m := &t.state.Messages[t.cur]
	for _, c := range m.ToolCalls {
		if c.ID == tc.ID {
			return fs
		}
	}
	m.ToolCalls = append(m.ToolCalls, tc)
	if t.modes[modeMessagesTuple] {
		args, _ := json.Marshal(tc.Args)
		ch := newChunk(m.ID, "")
		ch.ToolCalls = []toolCall{tc}
		ch.ToolCallChunks = []toolCallChunk{{ID: tc.ID, Name: tc.Name, Args: string(args), Index: len(m.ToolCalls) - 1, Type: "tool_call_chunk"}}
		fs = append(fs, frame{modeMessages, []any{ch, t.metadata(nodeAgent)}})
	}
	if t.modes[modeMessages] {
		fs = append(fs, t.announce(*m, nodeAgent)...)
		fs = append(fs, frame{"messages/partial", []message{*m}})
	}
	return fs
}

// custom is the custom event of a Wick event: {event, name, data}.
func (t *translator) custom(ev *agentv1.StreamEvent) ([]frame, error) {
	var fs []frame
	if t.modes[modeCustom] || t.modes[modeEvents] {
		data, err := runevent.MarshalData(ev.GetPayload())
		if err != nil {
			return nil, fmt.Errorf("event %s: %w", ev.GetEvent(), err)
		}
		if t.modes[modeCustom] {
			fs = append(fs, frame{modeCustom, map[string]any{"event": ev.GetEvent(), "name": ev.GetName(), "data": json.RawMessage(data)}})
		}
		if t.modes[modeEvents] {
			fs = append(fs, t.eventsFrame(ev, json.RawMessage(data)))
		}
	}
	return fs, nil
}

// eventsFrame is the events mode's frame: LangChain's astream_events shape
// with Wick's event name.
func (t *translator) eventsFrame(ev *agentv1.StreamEvent, data any) frame {
	name := ev.GetName()
	if name == "" {
		name = nodeAgent
	}
	return frame{modeEvents, map[string]any{"event": ev.GetEvent(), "name": name, "run_id": t.runID, "data": data, "metadata": t.metadata(nodeAgent), "tags": []string{}}}
}

// errorName is the error's class as LangGraph's error event names it.
func errorName(code string) string {
	switch code {
	case "cancelled":
		return "CancelledError"
	case "max_turns":
		return "GraphRecursionError"
	case "":
		return "Error"
	}
	return code
}
