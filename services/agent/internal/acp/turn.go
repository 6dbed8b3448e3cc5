package acp

import (
	"encoding/json"
	"fmt"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// PlanToolName is the name of the on_todos events an agent's plan sends.
const PlanToolName = "plan"

// turn maps the session updates of one prompt turn to Wick's stream events
// and keeps what the thread stores of it: the answer's text, the tool calls
// with their results, and the plan as todos. It is not safe for concurrent
// use; the client serializes calls.
type turn struct {
	text  strings.Builder
	calls []*toolCall
	byID  map[string]*toolCall
	// todos is the last plan, nil while the agent sent none.
	todos []loop.Todo
}

// toolCall is a tool call the agent announced.
type toolCall struct {
	id, name, kind string
	args           map[string]any
	ended          bool
	output, err    string
}

func newTurn() *turn { return &turn{byID: map[string]*toolCall{}} }

// apply maps one update to the events it sends; ok is false for an update
// that Wick does not show (available commands, modes, a user message
// chunk, an update of no known kind), which the caller logs.
func (t *turn) apply(u acpsdk.SessionUpdate) (events []loop.StreamEvent, ok bool) {
	switch {
	case u.AgentMessageChunk != nil:
		s := blockText(u.AgentMessageChunk.Content)
		if s == "" {
			return nil, true
		}
		t.text.WriteString(s)
		return []loop.StreamEvent{{Data: loop.DeltaData(s)}}, true
	case u.AgentThoughtChunk != nil:
		s := blockText(u.AgentThoughtChunk.Content)
		if s == "" {
			return nil, true
		}
		return []loop.StreamEvent{{Data: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnThoughtStream{OnThoughtStream: &agentv1.DeltaData{Delta: s}}}}}, true
	case u.ToolCall != nil:
		c := u.ToolCall
		call := t.start(string(c.ToolCallId), c.Title, string(c.Kind), c.RawInput, &events)
		t.finish(call, c.Status, c.Content, c.RawOutput, &events)
		return events, true
	case u.ToolCallUpdate != nil:
		c := u.ToolCallUpdate
		call := t.byID[string(c.ToolCallId)]
		if call == nil {
			// An update of a call never announced still gets its card.
			title, kind := "", ""
			if c.Title != nil {
				title = *c.Title
			}
			if c.Kind != nil {
				kind = string(*c.Kind)
			}
			call = t.start(string(c.ToolCallId), title, kind, c.RawInput, &events)
		} else if c.RawInput != nil && call.args == nil {
			call.args = argsOf(c.RawInput)
		}
		status := acpsdk.ToolCallStatus("")
		if c.Status != nil {
			status = *c.Status
		}
		t.finish(call, status, c.Content, c.RawOutput, &events)
		return events, true
	case u.Plan != nil:
		t.todos = planTodos(u.Plan.Entries)
		return []loop.StreamEvent{{Name: PlanToolName, Data: loop.TodosData(t.todos)}}, true
	}
	return nil, false
}

// start records a call and sends its on_tool_start; a call announced
// twice is started once.
func (t *turn) start(id, title, kind string, rawInput any, events *[]loop.StreamEvent) *toolCall {
	if c := t.byID[id]; c != nil {
		return c
	}
	c := &toolCall{id: id, name: toolName(title, kind), kind: kind, args: argsOf(rawInput)}
	t.calls = append(t.calls, c)
	t.byID[id] = c
	*events = append(*events, loop.StreamEvent{Name: c.name, Data: loop.ToolStartData(llm.ToolCall{ID: c.id, Args: c.args})})
	return c
}

// finish sends the call's on_tool_end when status says it ended.
func (t *turn) finish(c *toolCall, status acpsdk.ToolCallStatus, content []acpsdk.ToolCallContent, rawOutput any, events *[]loop.StreamEvent) {
	if c.ended || (status != acpsdk.ToolCallStatusCompleted && status != acpsdk.ToolCallStatusFailed) {
		return
	}
	out := contentText(content)
	if out == "" && rawOutput != nil {
		out = jsonText(rawOutput)
	}
	c.ended, c.output = true, out
	if status == acpsdk.ToolCallStatusFailed {
		c.err = out
		if c.err == "" {
			c.err = "the tool call failed"
		}
		c.output = ""
	}
	*events = append(*events, endEvent(c))
}

// closeOpen ends every call still open with reason as its error: every
// on_tool_start gets its on_tool_end, also when the turn was cancelled or
// the agent died.
func (t *turn) closeOpen(reason string) []loop.StreamEvent {
	var events []loop.StreamEvent
	for _, c := range t.calls {
		if !c.ended {
			c.ended, c.err = true, reason
			events = append(events, endEvent(c))
		}
	}
	return events
}

// messages are the turn as thread messages: the tool calls (each with its
// result) and then the answer's text. They are for the history, the thread
// list and the priming summary; the ACP agent keeps its own context.
func (t *turn) messages() []llm.Message {
	var out []llm.Message
	if len(t.calls) > 0 {
		ai := llm.Message{Role: llm.RoleAssistant}
		for _, c := range t.calls {
			ai.ToolCalls = append(ai.ToolCalls, llm.ToolCall{ID: c.id, Name: c.name, Args: c.args})
		}
		out = append(out, ai)
		for _, c := range t.calls {
			content := c.output
			if c.err != "" {
				content = "Error: " + c.err
			}
			out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: c.id, Name: c.name, Content: content})
		}
	}
	text := t.text.String()
	if text == "" {
		// An empty reply is still a reply; keep the history valid.
		text = " "
	}
	return append(out, llm.Message{Role: llm.RoleAssistant, Content: text})
}

func endEvent(c *toolCall) loop.StreamEvent {
	return loop.StreamEvent{Name: c.name, Data: loop.ToolEndData(c.id, c.output, c.err)}
}

// toolName is what a call's card is titled: the agent's title, else its
// kind.
func toolName(title, kind string) string {
	switch {
	case title != "":
		return title
	case kind != "":
		return kind
	}
	return string(acpsdk.ToolKindOther)
}

// argsOf is a call's raw input as the arguments of a Wick tool call: an
// object as is, anything else under "input".
func argsOf(raw any) map[string]any {
	if raw == nil {
		return nil
	}
	if m, ok := loop.JSONValue(raw).(map[string]any); ok {
		return m
	}
	return map[string]any{"input": loop.JSONValue(raw)}
}

// blockText is the text of a content block; other blocks are named.
func blockText(b acpsdk.ContentBlock) string {
	switch {
	case b.Text != nil:
		return b.Text.Text
	case b.ResourceLink != nil:
		return fmt.Sprintf("[%s](%s)", b.ResourceLink.Name, b.ResourceLink.Uri)
	case b.Image != nil:
		return "[image]"
	case b.Audio != nil:
		return "[audio]"
	case b.Resource != nil:
		return "[resource]"
	}
	return ""
}

// contentText is a tool call's content as text.
func contentText(content []acpsdk.ToolCallContent) string {
	var parts []string
	for _, c := range content {
		switch {
		case c.Content != nil:
			parts = append(parts, blockText(c.Content.Content))
		case c.Diff != nil:
			parts = append(parts, "edited "+c.Diff.Path)
		case c.Terminal != nil:
			parts = append(parts, "terminal "+c.Terminal.TerminalId)
		}
	}
	return strings.Join(parts, "\n")
}

func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// planTodos maps a plan's entries to Wick's todos. Wick's todos have no
// priority; a high-priority entry's title says so.
func planTodos(entries []acpsdk.PlanEntry) []loop.Todo {
	todos := make([]loop.Todo, 0, len(entries))
	for i, e := range entries {
		status := loop.TodoPending
		switch e.Status {
		case acpsdk.PlanEntryStatusInProgress:
			status = loop.TodoInProgress
		case acpsdk.PlanEntryStatusCompleted:
			status = loop.TodoDone
		}
		title := e.Content
		if e.Priority == acpsdk.PlanEntryPriorityHigh {
			title = "(high priority) " + title
		}
		todos = append(todos, loop.Todo{ID: fmt.Sprintf("plan-%d", i+1), Title: title, Status: status})
	}
	return todos
}
