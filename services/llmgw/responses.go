package llmgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/services/llmgw/internal/openai"
	"github.com/wick-agent/wick/services/llmgw/internal/router"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

// customInputSchema is the parameters schema a free-form ("custom") tool gets
// when it is offered to a model as a function: the model writes the tool's
// whole input as one string.
var customInputSchema = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"input": map[string]any{"type": "string", "description": "The tool's whole input, as free text."}},
	"required":             []any{"input"},
	"additionalProperties": false,
}

// Errors of a Responses request that Wick cannot honour. Wick keeps no state
// between requests, so a client must send the whole conversation each time
// (store: false, as Codex does).
var (
	errPreviousResponse = errors.New("previous_response_id: this gateway stores no responses; send the whole conversation in input (store: false)")
	errConversation     = errors.New("conversation: this gateway stores no conversations; send the whole conversation in input")
	errItemReference    = errors.New("item_reference: this gateway stores no items; send the item itself")
)

// The wire types of OpenAI's Responses API, as much of them as the gateway
// reads and writes. Unknown request fields (include, prompt_cache_key, text,
// metadata, reasoning, top_p, truncation, …) are ignored.
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       string          `json:"instructions"`
	Tools              []responsesTool `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	Stream             bool            `json:"stream"`
	PreviousResponseID string          `json:"previous_response_id"`
	Conversation       json.RawMessage `json:"conversation"`
}

// responsesTool is a tool of a request. Of its types, function tools are
// offered as they are, a custom (free-form) tool as a function with one
// string parameter "input", and a namespace's function tools under their own
// names; hosted tools (web_search, local_shell, file_search, …) are dropped,
// since no provider behind the gateway runs them.
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  map[string]any  `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
	Tools       []responsesTool `json:"tools,omitempty"`
}

// responsesItem is an input item: a message (also without a type, as
// {"role","content"}), a function or custom tool call and its output, a
// local shell call, or a reasoning item (dropped).
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	Input     string          `json:"input"`
	Action    json.RawMessage `json:"action"`
}

// responsePart is an output_text content part.
type responsePart struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

type responseMessage struct {
	Type    string         `json:"type"`
	ID      string         `json:"id"`
	Status  string         `json:"status"`
	Role    string         `json:"role"`
	Content []responsePart `json:"content"`
}

type responseFunctionCall struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Status    string `json:"status"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// Namespace names the namespace tool the function came from.
	Namespace string `json:"namespace,omitempty"`
}

type responseCustomToolCall struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Status string `json:"status"`
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	Input  string `json:"input"`
}

type responsesUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

// responseObject is the response: the body of a non-streamed answer and the
// "response" of the stream's lifecycle events.
type responseObject struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Model              string             `json:"model"`
	Output             []any              `json:"output"`
	Usage              *responsesUsage    `json:"usage"`
	Error              *responseError     `json:"error"`
	IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Store              bool               `json:"store"`
	Temperature        *float64           `json:"temperature"`
	TopP               *float64           `json:"top_p"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              []responsesTool    `json:"tools"`
	Metadata           map[string]string  `json:"metadata"`
}

// responsesEvent is one event of a streamed response.
type responsesEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       *responseObject `json:"response,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	Item           any             `json:"item,omitempty"`
	Part           *responsePart   `json:"part,omitempty"`
	Delta          *string         `json:"delta,omitempty"`
	Text           *string         `json:"text,omitempty"`
	Arguments      *string         `json:"arguments,omitempty"`
}

// toolKinds remembers how the request offered each tool, so that a call of it
// goes back as the item type the client expects.
type toolKinds struct {
	custom    map[string]bool
	namespace map[string]string
}

// responseInputText reads a message's content: a string, or an array of text
// parts (input_text, output_text, text, refusal), joined.
func responseInputText(raw json.RawMessage) (string, error) {
	return joinContent(raw, func(p contentPart) (string, error) {
		switch p.Type {
		case "input_text", "output_text", "text":
			return p.Text, nil
		case "refusal":
			return p.Refusal, nil
		case "input_image", "input_file", "input_audio":
			return "", fmt.Errorf("content part type %q is not supported: the gateway passes text only", p.Type)
		default:
			return "", fmt.Errorf("content part type %q is not supported (input_text, output_text, refusal)", p.Type)
		}
	})
}

// toCall turns the request into the gateway's call. Consecutive assistant
// items (a message, then the tool calls of the same turn) become one
// assistant message, as in Chat Completions, so that a provider sees each
// turn once.
func (rr *responsesRequest) toCall() (call, toolKinds, error) {
	var c call
	kinds := toolKinds{custom: map[string]bool{}, namespace: map[string]string{}}
	if rr.PreviousResponseID != "" {
		return c, kinds, errPreviousResponse
	}
	if len(rr.Conversation) > 0 && string(rr.Conversation) != "null" {
		return c, kinds, errConversation
	}
	if rr.Model != "" {
		c.models = []requestSpec{{str: rr.Model}}
	}
	c.req.SystemPrompt = rr.Instructions
	items, err := rr.inputItems()
	if err != nil {
		return c, kinds, err
	}
	names := map[string]string{} // call_id → tool name, for tool results
	var msgs []llm.Message
	assistant := func() *llm.Message {
		if n := len(msgs); n > 0 && msgs[n-1].Role == llm.RoleAssistant {
			return &msgs[n-1]
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant})
		return &msgs[len(msgs)-1]
	}
	addCall := func(i int, id, name, args string) error {
		if id == "" || name == "" {
			return fmt.Errorf("input[%d]: call_id and name are required", i)
		}
		tc := llm.ToolCall{ID: id, Name: name, RawArgs: args}
		tc.Args, tc.ArgsErr = upstream.ParseArguments(args)
		m := assistant()
		m.ToolCalls = append(m.ToolCalls, tc)
		names[id] = name
		return nil
	}
	for i, it := range items {
		switch it.Type {
		case "message", "":
			text, err := responseInputText(it.Content)
			if err != nil {
				return c, kinds, fmt.Errorf("input[%d]: %w", i, err)
			}
			switch it.Role {
			case llm.RoleSystem, "developer":
				msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: text})
			case llm.RoleUser:
				msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: text})
			case llm.RoleAssistant:
				m := assistant()
				m.Content += text
			default:
				return c, kinds, fmt.Errorf("input[%d]: unknown role %q (user, assistant, system, developer)", i, it.Role)
			}
		case "function_call":
			if err := addCall(i, it.CallID, it.Name, it.Arguments); err != nil {
				return c, kinds, err
			}
		case "custom_tool_call":
			args, _ := json.Marshal(map[string]string{"input": it.Input})
			if err := addCall(i, it.CallID, it.Name, string(args)); err != nil {
				return c, kinds, err
			}
		case "local_shell_call":
			// Kept as a call of a function named local_shell, so that its
			// output (a function_call_output) answers a call the provider knows.
			if err := addCall(i, it.CallID, "local_shell", string(it.Action)); err != nil {
				return c, kinds, err
			}
		case "function_call_output", "custom_tool_call_output":
			if it.CallID == "" {
				return c, kinds, fmt.Errorf("input[%d]: %s needs call_id", i, it.Type)
			}
			text, err := responseInputText(it.Output)
			if err != nil {
				return c, kinds, fmt.Errorf("input[%d].output: %w", i, err)
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, Content: text, ToolCallID: it.CallID, Name: names[it.CallID]})
		case "item_reference":
			return c, kinds, fmt.Errorf("input[%d]: %w", i, errItemReference)
		default:
			// Reasoning (its text is the provider's, often encrypted), web
			// search calls and other items of hosted tools carry nothing a
			// provider behind the gateway could use.
		}
	}
	if len(msgs) == 0 {
		return c, kinds, errors.New("input: at least one message is needed")
	}
	c.req.Messages = msgs
	for i, t := range rr.Tools {
		if err := kinds.add(&c.req, t, "", fmt.Sprintf("tools[%d]", i)); err != nil {
			return c, kinds, err
		}
	}
	if rr.MaxOutputTokens != nil {
		if *rr.MaxOutputTokens < 0 {
			return c, kinds, errors.New("max_output_tokens must not be negative")
		}
		c.req.MaxTokens = *rr.MaxOutputTokens
	}
	if t := rr.Temperature; t != nil {
		if *t < 0 || *t > 2 {
			return c, kinds, errors.New("temperature must be between 0 and 2")
		}
		c.req.Temperature = t
	}
	return c, kinds, nil
}

// inputItems reads input: a string is one user message.
func (rr *responsesRequest) inputItems() ([]responsesItem, error) {
	if len(rr.Input) == 0 || string(rr.Input) == "null" {
		return nil, errors.New("input: a string or an array of items is required")
	}
	var s string
	if err := json.Unmarshal(rr.Input, &s); err == nil {
		text, _ := json.Marshal(s)
		return []responsesItem{{Type: "message", Role: llm.RoleUser, Content: text}}, nil
	}
	var items []responsesItem
	if err := json.Unmarshal(rr.Input, &items); err != nil {
		return nil, fmt.Errorf("input: a string or an array of items is required: %w", err)
	}
	return items, nil
}

// add offers tool t to the model (see responsesTool for the rule).
func (k toolKinds) add(req *llm.Request, t responsesTool, namespace, where string) error {
	switch t.Type {
	case "function", "":
		if t.Name == "" {
			return fmt.Errorf("%s: name is required", where)
		}
		req.Tools = append(req.Tools, llm.ToolSchema{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
		if namespace != "" {
			k.namespace[t.Name] = namespace
		}
	case "custom":
		if t.Name == "" {
			return fmt.Errorf("%s: name is required", where)
		}
		req.Tools = append(req.Tools, llm.ToolSchema{Name: t.Name, Description: t.Description, Parameters: customInputSchema})
		k.custom[t.Name] = true
	case "namespace":
		for j, inner := range t.Tools {
			if inner.Type == "namespace" {
				continue // the API nests no namespaces; nothing to offer
			}
			if err := k.add(req, inner, t.Name, fmt.Sprintf("%s.tools[%d]", where, j)); err != nil {
				return err
			}
		}
	}
	return nil
}

// callItem is a tool call of the reply as the item type the request offered
// the tool as.
func (k toolKinds) callItem(id, callID, name, args, status string) any {
	if k.custom[name] {
		var in struct {
			Input string `json:"input"`
		}
		if json.Unmarshal([]byte(args), &in) != nil {
			in.Input = args
		}
		return responseCustomToolCall{Type: "custom_tool_call", ID: id, Status: status, CallID: callID, Name: name, Input: in.Input}
	}
	return responseFunctionCall{Type: "function_call", ID: id, Status: status, CallID: callID, Name: name, Arguments: args, Namespace: k.namespace[name]}
}

func (s *Service) responses(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxHTTPBodyBytes)
	var rr responsesRequest
	if err := json.NewDecoder(r.Body).Decode(&rr); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeOpenAIError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "", "", fmt.Sprintf("request body is larger than %d bytes", s.cfg.MaxHTTPBodyBytes))
			return
		}
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "", "request body is not valid JSON: "+err.Error())
		return
	}
	c, kinds, err := rr.toCall()
	if err != nil {
		param := ""
		switch {
		case errors.Is(err, errPreviousResponse):
			param = "previous_response_id"
		case errors.Is(err, errConversation):
			param = "conversation"
		}
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", param, err.Error())
		return
	}
	model := rr.Model
	if model == "" {
		model = s.reg.def
	} else if s.unknownModel(model) {
		writeModelNotFound(w, model)
		return
	}
	base := responseObject{
		ID: "resp_" + randomID(), Object: "response", CreatedAt: time.Now().Unix(), Status: "in_progress", Model: model,
		Output: []any{}, MaxOutputTokens: rr.MaxOutputTokens, ParallelToolCalls: rr.ParallelToolCalls == nil || *rr.ParallelToolCalls,
		Temperature: rr.Temperature, TopP: rr.TopP, ToolChoice: rr.ToolChoice, Tools: rr.Tools, Metadata: map[string]string{},
	}
	if rr.Instructions != "" {
		base.Instructions = &rr.Instructions
	}
	if len(base.ToolChoice) == 0 {
		base.ToolChoice = json.RawMessage(`"auto"`)
	}
	if base.Tools == nil {
		base.Tools = []responsesTool{}
	}
	if rr.Stream {
		st := &responseStream{w: w, rc: http.NewResponseController(w), resp: base, kinds: kinds, calls: map[int]*openToolCall{}}
		st.run(r.Context(), s, c)
		return
	}
	out, acct, err := s.run(r.Context(), "Responses", c, func(*router.Target, llm.Event) error { return nil })
	setAccountingHeaders(w.Header(), acct)
	if err != nil {
		writeStatusError(r.Context(), w, err)
		return
	}
	resp := base
	if out.Result.Content != "" {
		resp.Output = append(resp.Output, responseMessage{Type: "message", ID: "msg_" + randomID(), Status: "completed", Role: llm.RoleAssistant,
			Content: []responsePart{{Type: "output_text", Text: out.Result.Content, Annotations: []any{}}}})
	}
	for _, tc := range out.Result.ToolCalls {
		resp.Output = append(resp.Output, kinds.callItem("fc_"+randomID(), tc.ID, tc.Name, argumentsText(tc), "completed"))
	}
	finishResponse(&resp, out.Result)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func argumentsText(tc llm.ToolCall) string {
	args, err := openai.RawArguments(tc)
	if err != nil {
		return "{}"
	}
	return args
}

// finishResponse sets the final status, usage and reason of a response from the
// model's result: a reply cut by max_output_tokens or a content filter is
// incomplete.
func finishResponse(resp *responseObject, res llm.Result) {
	resp.Status = "completed"
	switch res.FinishReason {
	case llm.FinishLength:
		resp.Status, resp.IncompleteDetails = "incomplete", &incompleteDetails{Reason: "max_output_tokens"}
	case llm.FinishContentFilter:
		resp.Status, resp.IncompleteDetails = "incomplete", &incompleteDetails{Reason: "content_filter"}
	}
	u := responsesUsage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens, TotalTokens: res.Usage.InputTokens + res.Usage.OutputTokens}
	resp.Usage = &u
}

// openToolCall is a tool call being streamed.
type openToolCall struct {
	outputIndex int
	id, callID  string
	name        string
}

// responseStream writes a streamed response as OpenAI's Responses events:
// response.created and response.in_progress once the model answers, an
// output item per message and tool call (added, its deltas, done), then
// response.completed, response.incomplete or response.failed. Nothing is
// written before the model's first event, so a request that fails before it
// gets an HTTP error status, as from OpenAI.
type responseStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	resp    responseObject
	kinds   toolKinds
	started bool
	seq     int
	// msg is the open message item, if any, and its text so far.
	msg     *responseMessage
	msgText strings.Builder
	msgAt   int
	calls   map[int]*openToolCall // by the provider's tool-call index
	order   []int
}

func (st *responseStream) send(ev responsesEvent) error {
	if !st.started {
		st.started = true
		h := st.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		st.w.WriteHeader(http.StatusOK)
		created := st.resp
		created.Output = []any{}
		if err := st.write(responsesEvent{Type: "response.created", Response: &created}); err != nil {
			return err
		}
		if err := st.write(responsesEvent{Type: "response.in_progress", Response: &created}); err != nil {
			return err
		}
	}
	return st.write(ev)
}

func (st *responseStream) write(ev responsesEvent) error {
	ev.SequenceNumber = st.seq
	st.seq++
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(st.w, "event: %s\ndata: %s\n\n", ev.Type, b); err != nil {
		return err
	}
	return st.rc.Flush()
}

func (st *responseStream) text(delta string) error {
	if st.msg == nil {
		st.msgAt = len(st.resp.Output)
		st.msg = &responseMessage{Type: "message", ID: "msg_" + randomID(), Status: "in_progress", Role: llm.RoleAssistant, Content: []responsePart{}}
		st.resp.Output = append(st.resp.Output, nil) // the item, once done
		st.msgText.Reset()
		if err := st.send(responsesEvent{Type: "response.output_item.added", OutputIndex: indexPtr(st.msgAt), Item: *st.msg}); err != nil {
			return err
		}
		if err := st.send(responsesEvent{Type: "response.content_part.added", OutputIndex: indexPtr(st.msgAt), ContentIndex: indexPtr(0), ItemID: st.msg.ID,
			Part: &responsePart{Type: "output_text", Text: "", Annotations: []any{}}}); err != nil {
			return err
		}
	}
	st.msgText.WriteString(delta)
	return st.send(responsesEvent{Type: "response.output_text.delta", OutputIndex: indexPtr(st.msgAt), ContentIndex: indexPtr(0), ItemID: st.msg.ID, Delta: &delta})
}

// closeMessage ends the open message item: a tool call follows, or the reply ended.
func (st *responseStream) closeMessage() error {
	if st.msg == nil {
		return nil
	}
	m := st.msg
	st.msg = nil
	text := st.msgText.String()
	part := responsePart{Type: "output_text", Text: text, Annotations: []any{}}
	if err := st.send(responsesEvent{Type: "response.output_text.done", OutputIndex: indexPtr(st.msgAt), ContentIndex: indexPtr(0), ItemID: m.ID, Text: &text}); err != nil {
		return err
	}
	if err := st.send(responsesEvent{Type: "response.content_part.done", OutputIndex: indexPtr(st.msgAt), ContentIndex: indexPtr(0), ItemID: m.ID, Part: &part}); err != nil {
		return err
	}
	m.Status, m.Content = "completed", []responsePart{part}
	st.resp.Output[st.msgAt] = *m
	return st.send(responsesEvent{Type: "response.output_item.done", OutputIndex: indexPtr(st.msgAt), Item: *m})
}

func (st *responseStream) toolDelta(d *llm.ToolCallDelta) error {
	if err := st.closeMessage(); err != nil {
		return err
	}
	oc, ok := st.calls[d.Index]
	if !ok {
		oc = &openToolCall{outputIndex: len(st.resp.Output), id: "fc_" + randomID(), callID: d.ID, name: d.Name}
		if oc.callID == "" {
			oc.callID = "call_" + randomID()
		}
		st.calls[d.Index] = oc
		st.order = append(st.order, d.Index)
		st.resp.Output = append(st.resp.Output, nil)
		if err := st.send(responsesEvent{Type: "response.output_item.added", OutputIndex: indexPtr(oc.outputIndex), Item: st.kinds.callItem(oc.id, oc.callID, oc.name, "", "in_progress")}); err != nil {
			return err
		}
	}
	if d.ArgumentsDelta == "" || st.kinds.custom[oc.name] {
		// A custom tool's input is one string inside the arguments JSON;
		// it is sent whole, in output_item.done.
		return nil
	}
	delta := d.ArgumentsDelta
	return st.send(responsesEvent{Type: "response.function_call_arguments.delta", OutputIndex: indexPtr(oc.outputIndex), ItemID: oc.id, Delta: &delta})
}

func (st *responseStream) run(ctx context.Context, s *Service, c call) {
	h := st.w.Header()
	h.Set("Trailer", httpTrailers)
	out, acct, err := s.run(ctx, "Responses", c, func(_ *router.Target, ev llm.Event) error {
		if ev.Delta != "" {
			if err := st.text(ev.Delta); err != nil {
				return err
			}
		}
		if ev.ToolCallDelta != nil {
			return st.toolDelta(ev.ToolCallDelta)
		}
		return nil
	})
	setAccountingHeaders(h, acct)
	if err != nil {
		if !st.started {
			writeStatusError(ctx, st.w, err)
			return
		}
		st.resp.Status = "failed"
		st.resp.Output = finishedItems(st.resp.Output)
		stat := status.Convert(rpcstatus.FromError(ctx, err))
		st.resp.Error = &responseError{Code: responseFailureCode(stat.Code()), Message: stat.Message()}
		_ = st.send(responsesEvent{Type: "response.failed", Response: &st.resp})
		return
	}
	if err := st.closeMessage(); err != nil {
		return
	}
	for i, idx := range st.order {
		oc := st.calls[idx]
		args := "{}"
		if i < len(out.Result.ToolCalls) {
			args = argumentsText(out.Result.ToolCalls[i])
		}
		if !st.kinds.custom[oc.name] {
			if st.send(responsesEvent{Type: "response.function_call_arguments.done", OutputIndex: indexPtr(oc.outputIndex), ItemID: oc.id, Arguments: &args}) != nil {
				return
			}
		}
		item := st.kinds.callItem(oc.id, oc.callID, oc.name, args, "completed")
		st.resp.Output[oc.outputIndex] = item
		if st.send(responsesEvent{Type: "response.output_item.done", OutputIndex: indexPtr(oc.outputIndex), Item: item}) != nil {
			return
		}
	}
	finishResponse(&st.resp, out.Result)
	typ := "response.completed"
	if st.resp.Status == "incomplete" {
		typ = "response.incomplete"
	}
	_ = st.send(responsesEvent{Type: typ, Response: &st.resp})
}

// finishedItems drops the places of items that never finished.
func finishedItems(items []any) []any {
	out := []any{}
	for _, it := range items {
		if it != nil {
			out = append(out, it)
		}
	}
	return out
}

// responseFailureCode is the error code of a response.failed: rate_limit_exceeded
// tells clients to retry later, server_error anything else.
func responseFailureCode(c codes.Code) string {
	switch c {
	case codes.ResourceExhausted:
		return "rate_limit_exceeded"
	case codes.InvalidArgument, codes.FailedPrecondition, codes.NotFound, codes.PermissionDenied:
		return "invalid_request"
	}
	return "server_error"
}

func indexPtr(i int) *int { return &i }
