package acp

import (
	"cmp"
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

// toolCall is a tool call the agent announced. Its on_tool_start waits
// for its input: adapters announce a call as the model starts writing it,
// with an empty rawInput, and send the input in a later update.
type toolCall struct {
	id, name, kind, title string
	args                  map[string]any
	started, ended        bool
	output, err           string
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
		call := t.announce(string(c.ToolCallId), c.Title, string(c.Kind), metaToolName(c.Meta), c.RawInput)
		// A call announced pending without its input waits for it.
		if hasInput(c.RawInput) || (c.Status != "" && c.Status != acpsdk.ToolCallStatusPending) {
			t.begin(call, &events)
		}
		t.finish(call, c.Status, c.Content, c.RawOutput, &events)
		return events, true
	case u.ToolCallUpdate != nil:
		c := u.ToolCallUpdate
		title, kind := "", ""
		if c.Title != nil {
			title = *c.Title
		}
		if c.Kind != nil {
			kind = string(*c.Kind)
		}
		// An update of a call never announced still gets its card; the
		// first update of a call starts it, with or without its input.
		call := t.announce(string(c.ToolCallId), title, kind, metaToolName(c.Meta), c.RawInput)
		t.begin(call, &events)
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

// announce records a call, or what a later announcement or update adds
// to it: a title, a kind, a name, a non-empty input. The name is fixed
// once the call's start is sent.
func (t *turn) announce(id, title, kind, name string, rawInput any) *toolCall {
	c := t.byID[id]
	if c == nil {
		c = &toolCall{id: id}
		t.calls = append(t.calls, c)
		t.byID[id] = c
	}
	c.title, c.kind = cmp.Or(title, c.title), cmp.Or(kind, c.kind)
	if hasInput(rawInput) || c.args == nil {
		if a := argsOf(rawInput); a != nil {
			c.args = a
		}
	}
	if !c.started {
		c.name = cmp.Or(name, c.name)
	}
	return c
}

// begin sends the call's on_tool_start, once.
func (t *turn) begin(c *toolCall, events *[]loop.StreamEvent) {
	if c.started {
		return
	}
	c.started = true
	c.name = toolName(c.name, c.kind, c.title)
	data := loop.ToolStartData(llm.ToolCall{ID: c.id, Args: c.args})
	if c.title != "" {
		data.GetOnToolStart().Title = &c.title
	}
	*events = append(*events, loop.StreamEvent{Name: c.name, Data: data})
}

// beginAll sends the start of every call announced but not started yet.
func (t *turn) beginAll() []loop.StreamEvent {
	var events []loop.StreamEvent
	for _, c := range t.calls {
		t.begin(c, &events)
	}
	return events
}

func isEnd(s acpsdk.ToolCallStatus) bool {
	return s == acpsdk.ToolCallStatusCompleted || s == acpsdk.ToolCallStatusFailed
}

// finish sends the call's on_tool_end when status says it ended.
func (t *turn) finish(c *toolCall, status acpsdk.ToolCallStatus, content []acpsdk.ToolCallContent, rawOutput any, events *[]loop.StreamEvent) {
	if c.ended || !isEnd(status) {
		return
	}
	t.begin(c, events)
	out := contentText(content)
	if out == "" && rawOutput != nil {
		out = outputText(rawOutput)
	}
	if out == "" {
		out = contentRefs(content)
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
	events := t.beginAll()
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

// toolName is a call's tool name: the name the agent gives in its
// metadata, else the call's kind, else its title (the display text, which
// on_tool_start carries as title).
func toolName(name, kind, title string) string {
	return cmp.Or(name, kind, title, string(acpsdk.ToolKindOther))
}

// metaToolName is the tool's own name where an adapter puts it in a call's
// metadata (claude-code-acp: _meta.claudeCode.toolName).
func metaToolName(meta map[string]any) string {
	cc, _ := meta["claudeCode"].(map[string]any)
	name, _ := cc["toolName"].(string)
	return name
}

// hasInput reports a raw input that says something: adapters announce a
// call with {} before its input is known.
func hasInput(raw any) bool {
	switch v := loop.JSONValue(raw).(type) {
	case nil:
		return false
	case map[string]any:
		return len(v) > 0
	}
	return true
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

// contentText is the text of a tool call's content blocks.
func contentText(content []acpsdk.ToolCallContent) string {
	var parts []string
	for _, c := range content {
		if c.Content != nil {
			if s := blockText(c.Content.Content); s != "" {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// contentRefs names the diffs and terminals of a tool call's content, the
// result when it has no text.
func contentRefs(content []acpsdk.ToolCallContent) string {
	var parts []string
	for _, c := range content {
		switch {
		case c.Diff != nil:
			parts = append(parts, "edited "+c.Diff.Path)
		case c.Terminal != nil:
			parts = append(parts, "terminal "+c.Terminal.TerminalId)
		}
	}
	return strings.Join(parts, "\n")
}

// outputText is a call's raw output as text: a string as is, content
// blocks (a list of {"type":"text","text":…}, as a model's tool result
// has them) as their text joined, anything else as JSON.
func outputText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if text, ok := blocksText(loop.JSONValue(v)); ok {
		return text
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// blocksText is the text of a content block or a list of them; ok is
// false for anything else.
func blocksText(v any) (string, bool) {
	switch b := v.(type) {
	case map[string]any:
		switch typ, _ := b["type"].(string); typ {
		case "text":
			s, ok := b["text"].(string)
			return s, ok
		case "image", "audio", "resource", "resource_link", "document":
			return "[" + typ + "]", true
		}
		return "", false
	case []any:
		if len(b) == 0 {
			return "", false
		}
		parts := make([]string, 0, len(b))
		for _, e := range b {
			s, ok := blocksText(e)
			if !ok {
				return "", false
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, "\n"), true
	}
	return "", false
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
