package llmgw

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/services/llmgw/internal/openai"
	"github.com/wick-agent/wick/services/llmgw/internal/router"
	"github.com/wick-agent/wick/services/llmgw/internal/script"
	"github.com/wick-agent/wick/services/llmgw/internal/spec"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

// The wire types of Anthropic's Messages API, as much of them as the
// gateway uses. Unknown fields are ignored, as Anthropic's API does for the
// ones a client version adds (betas, cache_control on blocks,
// context_management…). Fields the gateway accepts but cannot honour over
// every provider (tool_choice, stop_sequences, top_p, top_k, metadata,
// thinking) are read so that a malformed value is refused, then left out.
type messagesRequest struct {
	Model      string             `json:"model"`
	MaxTokens  *int               `json:"max_tokens"`
	System     json.RawMessage    `json:"system"`
	Messages   []anthropicMessage `json:"messages"`
	Tools      []anthropicTool    `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
	StopSequences []string        `json:"stop_sequences"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	Metadata      json.RawMessage `json:"metadata"`
	Thinking      *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
	Stream bool `json:"stream"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// contentBlock is a block of a request's message: every kind's fields in
// one struct, as the Type says which apply.
type contentBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type anthropicTool struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"input_schema"`
}

// The blocks of an answer.
type (
	textBlock struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	thinkingBlock struct {
		Type      string `json:"type"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
	}
	toolUseBlock struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
)

type messageUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// message is a whole answer, and the message of a stream's message_start.
type message struct {
	ID           string       `json:"id"`
	Type         string       `json:"type"`
	Role         string       `json:"role"`
	Model        string       `json:"model"`
	Content      []any        `json:"content"`
	StopReason   *string      `json:"stop_reason"`
	StopSequence *string      `json:"stop_sequence"`
	Usage        messageUsage `json:"usage"`
}

// Errors of the Messages API's request mapping, refused with 400.
var (
	errImage = errors.New("image and document blocks are not supported: the gateway's models take text only")
)

// blocks reads a content that is a string or an array of blocks; a string
// is one text block.
func blocks(raw json.RawMessage) ([]contentBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []contentBlock{{Type: "text", Text: s}}, nil
	}
	var out []contentBlock
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, errors.New("content must be a string or an array of content blocks")
	}
	return out, nil
}

// blockText joins the text of a content that may only hold text (system, a
// tool result): a string or an array of text blocks. Blocks are joined with
// a blank line, as separate paragraphs.
func blockText(raw json.RawMessage) (string, error) {
	bs, err := blocks(raw)
	if err != nil {
		return "", err
	}
	var parts []string
	for i, b := range bs {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image", "document":
			return "", fmt.Errorf("[%d]: %w", i, errImage)
		default:
			return "", fmt.Errorf("[%d]: block type %q is not supported here (only text)", i, b.Type)
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

// toCall turns a Messages request into the gateway's terms. A user message's
// tool results become tool messages, in order and before the user's text,
// as the chat APIs the providers speak want them right after the calls.
// Thinking blocks sent back are accepted and dropped: the gateway's models
// get the conversation without them.
func (mr *messagesRequest) toCall(countOnly bool) (call, error) {
	var c call
	if mr.Model != "" {
		c.models = []requestSpec{{str: mr.Model}}
	}
	if len(mr.Messages) == 0 {
		return c, errors.New("messages: at least one message is needed")
	}
	system, err := blockText(mr.System)
	if err != nil {
		return c, fmt.Errorf("system%w", err)
	}
	c.req.SystemPrompt = system
	for i, m := range mr.Messages {
		bs, err := blocks(m.Content)
		if err != nil {
			return c, fmt.Errorf("messages[%d]: %w", i, err)
		}
		var text []string
		var calls []llm.ToolCall
		for j, b := range bs {
			where := fmt.Sprintf("messages[%d].content[%d]", i, j)
			switch {
			case b.Type == "text":
				if b.Text != "" {
					text = append(text, b.Text)
				}
			case b.Type == "thinking" || b.Type == "redacted_thinking":
			case b.Type == "image" || b.Type == "document":
				return c, fmt.Errorf("%s: %w", where, errImage)
			case b.Type == "tool_use" && m.Role == llm.RoleAssistant:
				if b.ID == "" || b.Name == "" {
					return c, fmt.Errorf("%s: a tool_use block needs id and name", where)
				}
				tc, err := toolCall(b)
				if err != nil {
					return c, fmt.Errorf("%s: %w", where, err)
				}
				calls = append(calls, tc)
			case b.Type == "tool_result" && m.Role == llm.RoleUser:
				if b.ToolUseID == "" {
					return c, fmt.Errorf("%s: a tool_result block needs tool_use_id", where)
				}
				out, err := blockText(b.Content)
				if err != nil {
					return c, fmt.Errorf("%s.content%w", where, err)
				}
				if b.IsError {
					// The chat APIs have no error flag on a tool result.
					out = "Error: " + out
				}
				c.req.Messages = append(c.req.Messages, llm.Message{Role: llm.RoleTool, Content: out, ToolCallID: b.ToolUseID})
			default:
				return c, fmt.Errorf("%s: block type %q is not supported in a %s message", where, b.Type, m.Role)
			}
		}
		switch m.Role {
		case llm.RoleUser:
			if len(text) > 0 {
				c.req.Messages = append(c.req.Messages, llm.Message{Role: llm.RoleUser, Content: strings.Join(text, "\n\n")})
			}
		case llm.RoleAssistant:
			c.req.Messages = append(c.req.Messages, llm.Message{Role: llm.RoleAssistant, Content: strings.Join(text, "\n\n"), ToolCalls: calls})
		default:
			return c, fmt.Errorf("messages[%d]: role %q is not user or assistant", i, m.Role)
		}
	}
	for i, t := range mr.Tools {
		if t.Type != "" && t.Type != "custom" {
			// A server tool (web search, code execution…) runs at Anthropic;
			// no model of the gateway can run it, and refusing the request
			// would refuse every request of a client that always offers it.
			continue
		}
		if t.Name == "" {
			return c, fmt.Errorf("tools[%d]: name is required", i)
		}
		c.req.Tools = append(c.req.Tools, llm.ToolSchema{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	if tc := mr.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto", "any", "none":
		case "tool":
			if tc.Name == "" {
				return c, errors.New("tool_choice: type tool needs a name")
			}
		default:
			return c, fmt.Errorf("tool_choice: unknown type %q (auto, any, tool or none)", tc.Type)
		}
	}
	if th := mr.Thinking; th != nil && th.Type != "enabled" && th.Type != "disabled" && th.Type != "adaptive" {
		return c, fmt.Errorf("thinking: unknown type %q (enabled or disabled)", th.Type)
	}
	if countOnly {
		return c, nil
	}
	switch {
	case mr.MaxTokens == nil:
		return c, errors.New("max_tokens: field required")
	case *mr.MaxTokens < 1:
		return c, errors.New("max_tokens: must be at least 1")
	}
	c.req.MaxTokens = *mr.MaxTokens
	if t := mr.Temperature; t != nil {
		if math.IsNaN(*t) || *t < 0 || *t > 1 {
			return c, errors.New("temperature: must be between 0 and 1")
		}
		c.req.Temperature = t
	}
	return c, nil
}

func toolCall(b contentBlock) (llm.ToolCall, error) {
	tc := llm.ToolCall{ID: b.ID, Name: b.Name, RawArgs: "{}"}
	if len(b.Input) > 0 && string(b.Input) != "null" {
		var buf bytes.Buffer
		if err := json.Compact(&buf, b.Input); err != nil {
			return tc, errors.New("input is not JSON")
		}
		tc.RawArgs = buf.String()
	}
	tc.Args, tc.ArgsErr = upstream.ParseArguments(tc.RawArgs)
	if tc.ArgsErr != "" {
		return tc, fmt.Errorf("input: %s", tc.ArgsErr)
	}
	return tc, nil
}

// estimateInput is the input tokens of a request as count_tokens and a
// stream's message_start report them: upstream.EstimateTokens (about four
// bytes a token) over the system prompt, the messages' text, tool calls and
// tool definitions. The answer's usage is the provider's count.
func estimateInput(req llm.Request) int64 {
	n := upstream.EstimateTokens(req.SystemPrompt)
	for _, m := range req.Messages {
		n += upstream.EstimateTokens(m.Content)
		for _, tc := range m.ToolCalls {
			n += upstream.EstimateTokens(tc.Name) + upstream.EstimateTokens(tc.RawArgs)
		}
	}
	for _, t := range req.Tools {
		schema, _ := json.Marshal(t.Parameters)
		n += upstream.EstimateTokens(t.Name) + upstream.EstimateTokens(t.Description) + upstream.EstimateTokens(string(schema))
	}
	return n
}

// stopReason maps the gateway's finish reasons to Anthropic's.
func stopReason(finish string) string {
	switch finish {
	case llm.FinishToolCalls:
		return "tool_use"
	case llm.FinishLength:
		return "max_tokens"
	case llm.FinishRefusal, llm.FinishContentFilter:
		return "refusal"
	}
	return "end_turn"
}

// thinkingSignature is the signature of a thinking block. Anthropic's
// clients keep it and send the block back; the gateway checks nothing with
// it, so an opaque digest of the text will do.
func thinkingSignature(thinking string) string {
	sum := sha256.Sum256([]byte("wick-thinking\x00" + thinking))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func toolInput(tc llm.ToolCall) json.RawMessage {
	args, err := openai.RawArguments(tc)
	if err != nil || !json.Valid([]byte(args)) {
		args = "{}"
	}
	return json.RawMessage(args)
}

func (s *Service) messages(w http.ResponseWriter, r *http.Request) {
	var mr messagesRequest
	if !decodeJSON(w, r, s.cfg.MaxHTTPBodyBytes, &mr, refuseAnthropic) {
		return
	}
	c, err := mr.toCall(false)
	if err != nil {
		refuseAnthropic(w, http.StatusBadRequest, err.Error())
		return
	}
	model := s.modelName(mr.Model)
	id := "msg_" + randomID()
	if mr.Stream {
		s.streamMessage(r.Context(), w, c, id, model)
		return
	}
	out, acct, err := s.run(r.Context(), "Messages", c, func(*router.Target, llm.Event) error { return nil })
	setAccountingHeaders(w.Header(), acct)
	if err != nil {
		s.writeAnthropicStatus(r.Context(), w, mr.Model, err)
		return
	}
	resp := message{ID: id, Type: "message", Role: llm.RoleAssistant, Model: model, Content: []any{}}
	if t := out.Result.Thinking; t != "" {
		resp.Content = append(resp.Content, thinkingBlock{Type: "thinking", Thinking: t, Signature: thinkingSignature(t)})
	}
	if t := out.Result.Content; t != "" || len(out.Result.ToolCalls) == 0 {
		resp.Content = append(resp.Content, textBlock{Type: "text", Text: t})
	}
	for _, tc := range out.Result.ToolCalls {
		resp.Content = append(resp.Content, toolUseBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: toolInput(tc)})
	}
	stop := stopReason(out.Result.FinishReason)
	resp.StopReason = &stop
	resp.Usage = messageUsage{InputTokens: out.Result.Usage.InputTokens, OutputTokens: out.Result.Usage.OutputTokens}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// blockStream turns the gateway's events into the content blocks of a
// Messages stream: one block open at a time, started, filled with deltas and
// stopped, in Anthropic's event order.
type blockStream struct {
	sw       *sseWriter
	head     func() error // sends message_start before the first block
	index    int          // the open block's index; -1 before the first
	kind     string       // the open block's type; "" when none is open
	thinking strings.Builder
	tool     int          // the open tool_use block's call index
	closed   map[int]bool // call indexes whose blocks are stopped
}

func (b *blockStream) open(block any, kind string) error {
	if err := b.close(); err != nil {
		return err
	}
	if err := b.head(); err != nil {
		return err
	}
	b.index++
	b.kind = kind
	return b.sw.write("content_block_start", map[string]any{"type": "content_block_start", "index": b.index, "content_block": block})
}

func (b *blockStream) delta(delta map[string]any) error {
	return b.sw.write("content_block_delta", map[string]any{"type": "content_block_delta", "index": b.index, "delta": delta})
}

// close stops the open block; a thinking block gets its signature first.
func (b *blockStream) close() error {
	switch b.kind {
	case "":
		return nil
	case "thinking":
		if err := b.delta(map[string]any{"type": "signature_delta", "signature": thinkingSignature(b.thinking.String())}); err != nil {
			return err
		}
		b.thinking.Reset()
	case "tool_use":
		b.closed[b.tool] = true
	}
	b.kind = ""
	return b.sw.write("content_block_stop", map[string]any{"type": "content_block_stop", "index": b.index})
}

var errInterleaved = errors.New("the model interleaved the fragments of its tool calls, which a Messages stream cannot carry")

func (b *blockStream) event(ev llm.Event) error {
	if ev.Thinking != "" {
		if b.kind != "thinking" {
			if err := b.open(thinkingBlock{Type: "thinking"}, "thinking"); err != nil {
				return err
			}
		}
		b.thinking.WriteString(ev.Thinking)
		if err := b.delta(map[string]any{"type": "thinking_delta", "thinking": ev.Thinking}); err != nil {
			return err
		}
	}
	if ev.Delta != "" {
		if b.kind != "text" {
			if err := b.open(textBlock{Type: "text"}, "text"); err != nil {
				return err
			}
		}
		if err := b.delta(map[string]any{"type": "text_delta", "text": ev.Delta}); err != nil {
			return err
		}
	}
	if d := ev.ToolCallDelta; d != nil {
		if b.kind != "tool_use" || b.tool != d.Index {
			if b.closed[d.Index] {
				return &upstream.Error{Kind: upstream.KindProtocol, Message: errInterleaved.Error()}
			}
			id := d.ID
			if id == "" {
				id = fmt.Sprintf("call_%d", d.Index)
			}
			if err := b.open(toolUseBlock{Type: "tool_use", ID: id, Name: d.Name, Input: json.RawMessage("{}")}, "tool_use"); err != nil {
				return err
			}
			b.tool = d.Index
		}
		if d.ArgumentsDelta != "" {
			if err := b.delta(map[string]any{"type": "input_json_delta", "partial_json": d.ArgumentsDelta}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Service) streamMessage(ctx context.Context, w http.ResponseWriter, c call, id, model string) {
	h := w.Header()
	h.Set("Trailer", httpTrailers)
	sw := newSSEWriter(w)
	started := false
	head := func() error {
		if started {
			return nil
		}
		started = true
		start := message{ID: id, Type: "message", Role: llm.RoleAssistant, Model: model, Content: []any{},
			Usage: messageUsage{InputTokens: estimateInput(c.req), OutputTokens: 1}}
		if err := sw.write("message_start", map[string]any{"type": "message_start", "message": start}); err != nil {
			return err
		}
		return sw.write("ping", map[string]any{"type": "ping"})
	}
	b := &blockStream{sw: sw, head: head, index: -1, closed: map[int]bool{}}
	out, acct, err := s.run(ctx, "Messages", c, func(_ *router.Target, ev llm.Event) error { return b.event(ev) })
	setAccountingHeaders(h, acct)
	if err == nil {
		err = b.close()
	}
	if err == nil && !started {
		// An empty answer: its one text block is empty.
		if err = b.open(textBlock{Type: "text"}, "text"); err == nil {
			err = b.close()
		}
	}
	if err != nil {
		if !sw.started {
			s.writeAnthropicStatus(ctx, w, model, err)
			return
		}
		st := status.Convert(rpcstatus.FromError(ctx, err))
		_, typ := anthropicError(st.Code())
		_ = sw.write("error", anthropicErrorBody(typ, st.Message()))
		return
	}
	stop := stopReason(out.Result.FinishReason)
	if sw.write("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"input_tokens": out.Result.Usage.InputTokens, "output_tokens": out.Result.Usage.OutputTokens},
	}) != nil {
		return
	}
	_ = sw.write("message_stop", map[string]any{"type": "message_stop"})
}

// countTokens answers POST /v1/messages/count_tokens with the estimate
// estimateInput makes; no model is called.
func (s *Service) countTokens(w http.ResponseWriter, r *http.Request) {
	var mr messagesRequest
	if !decodeJSON(w, r, s.cfg.MaxHTTPBodyBytes, &mr, refuseAnthropic) {
		return
	}
	c, err := mr.toCall(true)
	if err != nil {
		refuseAnthropic(w, http.StatusBadRequest, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]int64{"input_tokens": estimateInput(c.req)})
}

// anthropicError is the HTTP status and Anthropic error type of a gRPC
// code. Unavailable (a provider down or overloaded, already retried) is
// Anthropic's 529 overloaded_error, which its clients retry.
func anthropicError(c codes.Code) (int, string) {
	switch c {
	case codes.Unavailable:
		return 529, "overloaded_error"
	case codes.Unauthenticated:
		return http.StatusUnauthorized, "authentication_error"
	}
	st := httpStatus(c)
	return st, anthropicErrorType(st)
}

func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func anthropicErrorBody(typ, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

// refuseAnthropic answers a failure in Anthropic's error shape.
func refuseAnthropic(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(anthropicErrorBody(anthropicErrorType(status), msg))
}

// writeAnthropicStatus answers a failed call. A model name that is neither
// configured nor a provider:model spec is Anthropic's 404 not_found_error
// (the gRPC API keeps calling it a bad argument).
func (s *Service) writeAnthropicStatus(ctx context.Context, w http.ResponseWriter, model string, err error) {
	st := status.Convert(rpcstatus.FromError(ctx, err))
	code, typ := anthropicError(st.Code())
	if st.Code() == codes.InvalidArgument && s.unknownModel(model) {
		code, typ = http.StatusNotFound, "not_found_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(anthropicErrorBody(typ, st.Message()))
}

// unknownModel reports whether name is neither a configured model nor a
// spec the gateway can read.
func (s *Service) unknownModel(name string) bool {
	if name == "" || name == script.DemoName {
		return false
	}
	if _, ok := s.reg.byID[name]; ok {
		return false
	}
	_, err := spec.Parse(name)
	return err != nil
}
