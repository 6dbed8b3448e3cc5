package langgraph

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// LangChain's message types, as its message dicts name them.
const (
	typeHuman  = "human"
	typeAI     = "ai"
	typeTool   = "tool"
	typeSystem = "system"
)

// message is a LangChain message dict (BaseMessage.model_dump): what
// LangGraph's values, updates and messages stream modes carry.
type message struct {
	Type       string     `json:"type"`
	Content    string     `json:"content"`
	ID         string     `json:"id"`
	Name       *string    `json:"name,omitempty"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Status is "success" or "error" on a tool message.
	Status string `json:"status,omitempty"`
	// InvalidToolCalls is always empty: Wick parses arguments before
	// emitting a call. LangChain's AIMessage always has it.
	InvalidToolCalls []toolCall `json:"invalid_tool_calls,omitempty"`
}

// toolCall is a LangChain ToolCall dict.
type toolCall struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
	Type string         `json:"type"`
}

// messageID is a message's id: its thread and position. Wick keeps no ids
// on messages; positions are stable while a thread only grows, which is
// what a streaming client needs to merge chunks into the state it read.
func messageID(threadID string, i int) string { return threadID + ":" + strconv.Itoa(i) }

func newToolCall(tc *agentv1.ToolCall) toolCall {
	args := tc.GetArgs().AsMap()
	if args == nil {
		args = map[string]any{}
	}
	return toolCall{ID: tc.GetId(), Name: tc.GetName(), Args: args, Type: "tool_call"}
}

// fromWick is the LangChain dict of the i-th message of a thread.
func fromWick(threadID string, i int, m *agentv1.Message) message {
	out := message{Content: m.GetContent(), ID: messageID(threadID, i)}
	switch m.GetRole() {
	case "user":
		out.Type = typeHuman
	case "assistant":
		out.Type = typeAI
		for _, tc := range m.GetToolCalls() {
			out.ToolCalls = append(out.ToolCalls, newToolCall(tc))
		}
	case "tool":
		out.Type = typeTool
		out.ToolCallID = m.GetToolCallId()
		if n := m.GetName(); n != "" {
			out.Name = &n
		}
		out.Status = "success"
	default:
		out.Type = typeSystem
	}
	return out
}

// errInput is a request's input that LangGraph's API would answer 422.
type errInput struct{ msg string }

func (e errInput) Error() string { return e.msg }

// inputMessages reads a run's input ({"messages": [...]}) as Wick's input
// messages. A message is a LangChain dict (type human or system), an
// OpenAI-style dict (role user or system), or a bare string (a human
// message); its content a string or a list of text blocks.
func inputMessages(input json.RawMessage) ([]*agentv1.Message, error) {
	if len(input) == 0 || string(input) == "null" {
		return nil, nil
	}
	var in struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, errInput{"input must be an object with messages: " + err.Error()}
	}
	out := make([]*agentv1.Message, 0, len(in.Messages))
	for i, raw := range in.Messages {
		m, err := inputMessage(raw)
		if err != nil {
			return nil, errInput{fmt.Sprintf("input.messages[%d]: %s", i, err)}
		}
		out = append(out, m)
	}
	return out, nil
}

func inputMessage(raw json.RawMessage) (*agentv1.Message, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &agentv1.Message{Role: "user", Content: s}, nil
	}
	var d struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("a message is a string or an object: %w", err)
	}
	kind := d.Type
	if kind == "" {
		kind = d.Role
	}
	var role string
	switch kind {
	case "human", "user":
		role = "user"
	case "system":
		role = "system"
	default:
		return nil, fmt.Errorf("type %q: only human and system messages are input (the agent writes ai and tool messages)", kind)
	}
	text, err := contentText(d.Content)
	if err != nil {
		return nil, err
	}
	return &agentv1.Message{Role: role, Content: text}, nil
}

// contentText is a message content's text: a string, or text blocks joined.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", fmt.Errorf("content is a string or a list of blocks: %w", err)
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type != "text" {
			return "", fmt.Errorf("content block of type %q: only text blocks are accepted", bl.Type)
		}
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

// todo is a todo in deep agents' shape (content, status), which their UIs read.
type todo struct {
	ID      string `json:"id,omitempty"`
	Content string `json:"content"`
	Status  string `json:"status"`
}

func todosOf(ts []*agentv1.Todo) []todo {
	out := make([]todo, 0, len(ts))
	for _, t := range ts {
		st := t.GetStatus()
		if st == "done" {
			st = "completed"
		}
		out = append(out, todo{ID: t.GetId(), Content: t.GetTitle(), Status: st})
	}
	return out
}

// fileData is a file in deep agents' shape: its lines and times.
type fileData struct {
	Content    []string `json:"content"`
	CreatedAt  string   `json:"created_at"`
	ModifiedAt string   `json:"modified_at"`
}

// values is a thread's state as the graph's state channels: messages,
// todos and files.
type values struct {
	Messages []message           `json:"messages"`
	Todos    []todo              `json:"todos"`
	Files    map[string]fileData `json:"files"`
	// Interrupt is the pending interrupt of an interrupted run
	// ("__interrupt__" of LangGraph's values stream).
	Interrupt []interrupt `json:"__interrupt__,omitempty"`
}

func valuesOf(st *agentv1.AgentState) values {
	v := values{Messages: make([]message, 0, len(st.GetMessages())), Todos: todosOf(st.GetTodos()), Files: map[string]fileData{}}
	for i, m := range st.GetMessages() {
		v.Messages = append(v.Messages, fromWick(st.GetThreadId(), i, m))
	}
	at := timestamp(st)
	for p, c := range st.GetFiles() {
		v.Files[p] = fileData{Content: strings.Split(c, "\n"), CreatedAt: at, ModifiedAt: at}
	}
	return v
}

func timestamp(st *agentv1.AgentState) string {
	if t := st.GetUpdatedAt(); t != nil {
		return t.AsTime().UTC().Format(time.RFC3339Nano)
	}
	return epoch
}

// epoch stands for times Wick does not keep (an agent's creation).
const epoch = "1970-01-01T00:00:00Z"

// interrupt is LangGraph's Interrupt: what a run waits for.
type interrupt struct {
	ID    string `json:"id"`
	Value any    `json:"value"`
}

// Interrupt values. An approval has the shape of LangChain's
// human-in-the-loop middleware, which agent UIs render; a question is
// ask_user's.
type (
	actionRequest struct {
		ID          string         `json:"id"`
		Name        string         `json:"name"`
		Args        map[string]any `json:"args"`
		Description string         `json:"description"`
	}
	reviewConfig struct {
		ActionName       string   `json:"action_name"`
		AllowedDecisions []string `json:"allowed_decisions"`
	}
	approvalValue struct {
		ActionRequests []actionRequest `json:"action_requests"`
		ReviewConfigs  []reviewConfig  `json:"review_configs"`
	}
	questionValue struct {
		Question   string   `json:"question"`
		Choices    []string `json:"choices,omitempty"`
		ToolCallID string   `json:"tool_call_id"`
	}
)

// askUserTool is the tool whose pending call is a question, not an approval.
const askUserTool = "ask_user"

// interruptID names the interrupt of a run's event: a resume keyed by it
// finds the run without the thread's memory.
func interruptID(runID, eventID string) string { return runID + "@" + eventID }

func parseInterruptID(id string) (runID, eventID string, ok bool) {
	return strings.Cut(id, "@")
}

// newInterrupt is the Interrupt of an on_interrupt event.
func newInterrupt(runID, eventID string, d *agentv1.InterruptData) interrupt {
	return interrupt{ID: interruptID(runID, eventID), Value: interruptValue(d.GetKind(), d.GetQuestion(), d.GetChoices(), d.GetToolCallId(), d.GetToolCalls())}
}

func interruptValue(kind, question string, choices []string, callID string, calls []*agentv1.ToolCall) any {
	if kind == "question" {
		return questionValue{Question: question, Choices: choices, ToolCallID: callID}
	}
	v := approvalValue{ActionRequests: []actionRequest{}, ReviewConfigs: []reviewConfig{}}
	seen := map[string]bool{}
	for _, tc := range calls {
		args := tc.GetArgs().AsMap()
		if args == nil {
			args = map[string]any{}
		}
		v.ActionRequests = append(v.ActionRequests, actionRequest{ID: tc.GetId(), Name: tc.GetName(), Args: args,
			Description: "Tool execution requires approval: " + tc.GetName()})
		if !seen[tc.GetName()] {
			seen[tc.GetName()] = true
			v.ReviewConfigs = append(v.ReviewConfigs, reviewConfig{ActionName: tc.GetName(), AllowedDecisions: []string{"approve", "edit", "reject"}})
		}
	}
	return v
}

// pendingInterrupt is the Interrupt of a run that waits, from its pending
// calls (GetRun), when its event is not at hand.
func pendingInterrupt(run *agentv1.Run) interrupt {
	p := run.GetPending()
	id := interruptID(run.GetRunId(), run.GetLastEventId())
	if len(p) == 1 && p[0].GetName() == askUserTool {
		f := p[0].GetArgs().GetFields()
		var choices []string
		for _, c := range f["choices"].GetListValue().GetValues() {
			choices = append(choices, c.GetStringValue())
		}
		return interrupt{ID: id, Value: questionValue{Question: f["question"].GetStringValue(), Choices: choices, ToolCallID: p[0].GetId()}}
	}
	return interrupt{ID: id, Value: interruptValue("", "", nil, "", p)}
}

// decisions turns a Command's resume value into decisions on the run's
// pending calls. An ask_user question takes the answer as a string (or
// {"answer": …}); an approval takes true/"approve" or false/"reject" for
// every call, LangChain's {"decisions": [{"type": approve|edit|reject, …}]}
// in call order, or Agent Inbox's [{"type": accept|edit|ignore|response, "args"}].
func decisions(pending []*agentv1.ToolCall, resume json.RawMessage) ([]*agentv1.ApprovalDecision, error) {
	if len(pending) == 0 {
		return nil, errInput{"the run has no pending interrupt"}
	}
	if len(pending) == 1 && pending[0].GetName() == askUserTool {
		var answer string
		if json.Unmarshal(resume, &answer) != nil {
			var a struct {
				Answer string `json:"answer"`
			}
			if json.Unmarshal(resume, &a) != nil || a.Answer == "" {
				return nil, errInput{`the resume value of a question is the answer: a string or {"answer": "…"}`}
			}
			answer = a.Answer
		}
		return []*agentv1.ApprovalDecision{{ToolCallId: pending[0].GetId(), Action: "answer", Message: answer}}, nil
	}
	all := func(action string) []*agentv1.ApprovalDecision {
		out := make([]*agentv1.ApprovalDecision, 0, len(pending))
		for _, tc := range pending {
			out = append(out, &agentv1.ApprovalDecision{ToolCallId: tc.GetId(), Action: action})
		}
		return out
	}
	var b bool
	if json.Unmarshal(resume, &b) == nil {
		if b {
			return all("approve"), nil
		}
		return all("reject"), nil
	}
	var s string
	if json.Unmarshal(resume, &s) == nil {
		switch s {
		case "approve", "accept":
			return all("approve"), nil
		case "reject", "ignore":
			return all("reject"), nil
		}
		return nil, errInput{fmt.Sprintf("resume value %q: want approve or reject", s)}
	}
	type item struct {
		Type         string          `json:"type"`
		Message      string          `json:"message"`
		Args         json.RawMessage `json:"args"`
		EditedAction *struct {
			Args map[string]any `json:"args"`
		} `json:"edited_action"`
	}
	var list []item
	var obj struct {
		Decisions []item `json:"decisions"`
	}
	if err := json.Unmarshal(resume, &obj); err == nil && obj.Decisions != nil {
		list = obj.Decisions
	} else if err := json.Unmarshal(resume, &list); err != nil {
		return nil, errInput{`the resume value of an approval is true, false, "approve", "reject" or {"decisions": [...]}`}
	}
	if len(list) != len(pending) {
		return nil, errInput{fmt.Sprintf("%d decisions for %d pending tool calls", len(list), len(pending))}
	}
	out := make([]*agentv1.ApprovalDecision, 0, len(list))
	for i, it := range list {
		d := &agentv1.ApprovalDecision{ToolCallId: pending[i].GetId()}
		switch it.Type {
		case "approve", "accept":
			d.Action = "approve"
		case "reject", "ignore":
			d.Action = "reject"
			d.Message = it.Message
		case "response":
			// Agent Inbox's free-text reply: the model gets it instead of the tool's result.
			d.Action = "reject"
			if json.Unmarshal(it.Args, &d.Message) != nil {
				return nil, errInput{fmt.Sprintf("decisions[%d]: a response's args is its text", i)}
			}
		case "edit":
			var args map[string]any
			switch {
			case it.EditedAction != nil:
				args = it.EditedAction.Args
			case len(it.Args) > 0:
				var a struct {
					Args map[string]any `json:"args"`
				}
				if json.Unmarshal(it.Args, &a) != nil {
					return nil, errInput{fmt.Sprintf("decisions[%d]: an edit's args is {\"args\": {…}}", i)}
				}
				args = a.Args
			}
			st, err := structpb.NewStruct(args)
			if err != nil || args == nil {
				return nil, errInput{fmt.Sprintf("decisions[%d]: an edit needs the new arguments", i)}
			}
			d.Action, d.Args = "edit", st
		default:
			return nil, errInput{fmt.Sprintf("decisions[%d]: type %q: want approve, edit or reject", i, it.Type)}
		}
		out = append(out, d)
	}
	return out, nil
}
