// Package anthropic is the provider for the Anthropic Messages API, built on
// the official anthropic-sdk-go SDK.
package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

// DefaultMaxTokens is sent when neither the request nor the model gives a
// limit: the Messages API requires max_tokens on every call.
const DefaultMaxTokens = 4096

// Provider streams messages from one base URL with one key.
type Provider struct {
	svc       anthropic.MessageService
	maxBytes  int
	maxTokens int
}

// Option configures a Provider.
type Option func(*Provider)

// WithMaxResponseBytes bounds the text and tool arguments of one reply.
func WithMaxResponseBytes(n int) Option { return func(p *Provider) { p.maxBytes = n } }

// WithDefaultMaxTokens sets max_tokens for requests that give none.
func WithDefaultMaxTokens(n int) Option {
	return func(p *Provider) {
		if n > 0 {
			p.maxTokens = n
		}
	}
}

// New returns a provider for baseURL. As for OpenAI, the SDK's retries and its
// environment defaults (ANTHROPIC_API_KEY, profiles, …) are off: the gateway
// decides which key goes where, and retries only before any output.
func New(hc *http.Client, baseURL, apiKey string, opts ...Option) *Provider {
	p := &Provider{maxTokens: DefaultMaxTokens}
	for _, o := range opts {
		o(p)
	}
	ropts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(hc),
		option.WithBaseURL(baseURL),
		option.WithMaxRetries(0),
	}
	if apiKey != "" {
		ropts = append(ropts, option.WithAPIKey(apiKey))
	}
	p.svc = anthropic.NewMessageService(ropts...)
	return p
}

// AcceptsImages implements llm.ImageAccepter: the Messages API takes
// base64 image blocks.
func (p *Provider) AcceptsImages() bool { return true }

// Stream implements llm.Provider.
func (p *Provider) Stream(ctx context.Context, req llm.Request, emit llm.Emit) (llm.Result, error) {
	params, err := p.params(req)
	if err != nil {
		return llm.Result{}, err
	}
	stream := p.svc.NewStreaming(ctx, params)
	defer stream.Close()

	r := &reply{acc: upstream.NewAccumulator(p.maxBytes), emit: emit, toolIdx: map[int64]int{}, open: map[int64]string{}}
	for stream.Next() {
		if err := r.handle(stream.Current()); err != nil {
			return llm.Result{}, err
		}
	}
	if err := stream.Err(); err != nil {
		return llm.Result{}, classify(ctx, err)
	}
	// message_delta carries the stop reason; a stream cut after it (or one
	// whose last event lacks the blank line that would dispatch message_stop,
	// as in Anthropic's own SDK fixtures) has still delivered the whole reply.
	if !r.stopped && r.stop == "" {
		if err := ctx.Err(); err != nil {
			return llm.Result{}, classify(ctx, err)
		}
		return llm.Result{}, upstream.Errorf(upstream.KindConnection, "stream ended before message_stop")
	}
	// Input tokens are reported in total, cached or not, as OpenAI's
	// prompt_tokens are.
	r.usage.InputTokens += r.cacheIn
	return r.acc.Result(finishReason(r.stop), r.usage), nil
}

// reply is one streamed reply as its events arrive: what it holds so far,
// which content blocks are open, and how it ended.
type reply struct {
	acc     *upstream.Accumulator
	emit    llm.Emit
	usage   llm.Usage
	cacheIn int64
	stop    string
	stopped bool
	// toolIdx maps a content block's index to its tool call's position.
	toolIdx  map[int64]int
	numTools int
	// open holds the type of each content block started and not yet
	// stopped: a delta or stop for any other index breaks the protocol.
	open map[int64]string
	// started counts the content blocks started: blocks are numbered from 0
	// in the order they start, so the next one must have this index.
	started int64
}

// handle takes one event. Its error ends the stream: the protocol broken,
// the reply too big, or the emit failed.
func (r *reply) handle(ev anthropic.MessageStreamEventUnion) error {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		r.usage.InputTokens, r.usage.OutputTokens = u.InputTokens, u.OutputTokens
		r.cacheIn = u.CacheCreationInputTokens + u.CacheReadInputTokens
	case "content_block_start":
		return r.blockStart(ev.Index, ev.ContentBlock)
	case "content_block_delta":
		return r.blockDelta(ev.Index, ev.Delta)
	case "content_block_stop":
		if _, ok := r.open[ev.Index]; !ok {
			return protocolError("content_block_stop for content block %d, which was never started (or already stopped)", ev.Index)
		}
		delete(r.open, ev.Index)
	case "message_delta":
		r.messageDelta(ev)
	case "message_stop":
		r.stopped = true
	}
	// Unknown event types are ignored, as the API's versioning policy asks.
	return nil
}

// blockStart opens content block i: a tool call starts, or text does.
func (r *reply) blockStart(i int64, cb anthropic.ContentBlockStartEventContentBlockUnion) error {
	if _, dup := r.open[i]; dup {
		return protocolError("content_block_start for content block %d, which is already open", i)
	}
	if i != r.started {
		return protocolError("content_block_start for content block %d, but the next block is %d (blocks start in order from 0)", i, r.started)
	}
	r.started++
	r.open[i] = cb.Type
	switch cb.Type {
	case "tool_use":
		r.toolIdx[i] = r.numTools
		td := llm.ToolCallDelta{Index: r.numTools, ID: cb.ID, Name: cb.Name}
		r.numTools++
		return r.tool(td)
	case "text":
		return r.text(cb.Text)
	}
	return nil
}

// blockDelta adds to open content block i: text to a text block, argument
// JSON to a tool call.
func (r *reply) blockDelta(i int64, d anthropic.MessageStreamEventUnionDelta) error {
	typ, ok := r.open[i]
	if !ok {
		return protocolError("%s for content block %d, which was never started (or already stopped)", d.Type, i)
	}
	switch d.Type {
	case "text_delta":
		if typ != "text" {
			return protocolError("text_delta for content block %d, which is a %s block", i, typ)
		}
		return r.text(d.Text)
	case "input_json_delta":
		n, ok := r.toolIdx[i]
		if !ok || typ != "tool_use" {
			return protocolError("input_json_delta for content block %d, which is a %s block", i, typ)
		}
		if d.PartialJSON == "" {
			return nil
		}
		return r.tool(llm.ToolCallDelta{Index: n, ArgumentsDelta: d.PartialJSON})
	}
	// thinking, signature and citation deltas are not part of the reply.
	return nil
}

// messageDelta takes the stop reason and the usage so far.
func (r *reply) messageDelta(ev anthropic.MessageStreamEventUnion) {
	if ev.Delta.StopReason != "" {
		r.stop = string(ev.Delta.StopReason)
	}
	// message_delta usage is cumulative: it replaces, never adds.
	u := ev.Usage
	if u.JSON.OutputTokens.Valid() {
		r.usage.OutputTokens = u.OutputTokens
	}
	if u.JSON.InputTokens.Valid() && u.InputTokens > 0 {
		r.usage.InputTokens = u.InputTokens
	}
	if c := u.CacheCreationInputTokens + u.CacheReadInputTokens; c > 0 {
		r.cacheIn = c
	}
}

// text adds text to the reply and emits it; empty text is neither.
func (r *reply) text(t string) error {
	if t == "" {
		return nil
	}
	if err := r.acc.Text(t); err != nil {
		return err
	}
	return r.emit(llm.Event{Delta: t})
}

// tool adds a tool call's delta to the reply and emits it.
func (r *reply) tool(td llm.ToolCallDelta) error {
	if err := r.acc.Tool(td); err != nil {
		return err
	}
	return r.emit(llm.Event{ToolCallDelta: &td})
}

// protocolError reports an event that breaks the Messages streaming protocol,
// naming what was wrong; it is not retried as a dropped connection would be.
func protocolError(format string, args ...any) *upstream.Error {
	return upstream.Errorf(upstream.KindProtocol, "provider broke the streaming protocol: "+format, args...)
}

func finishReason(r string) string {
	switch r {
	case "tool_use":
		return llm.FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return llm.FinishLength
	case "refusal":
		return llm.FinishRefusal
	}
	return llm.FinishStop
}

func (p *Provider) params(req llm.Request) (anthropic.MessageNewParams, error) {
	params := anthropic.MessageNewParams{Model: anthropic.Model(req.Model), MaxTokens: int64(p.maxTokens)}
	if req.MaxTokens > 0 {
		params.MaxTokens = int64(req.MaxTokens)
	}
	if req.Temperature != nil {
		params.Temperature = param.NewOpt(*req.Temperature)
	}
	// The Messages API takes the system prompt as a top-level field, so system
	// messages of the conversation join it there.
	if req.SystemPrompt != "" {
		params.System = append(params.System, anthropic.TextBlockParam{Text: req.SystemPrompt})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			if m.Content != "" {
				params.System = append(params.System, anthropic.TextBlockParam{Text: m.Content})
			}
		case llm.RoleUser:
			var blocks []anthropic.ContentBlockParamUnion
			// Anthropic recommends images before the text that asks about them.
			for _, img := range m.Images {
				blocks = append(blocks, anthropic.NewImageBlockBase64(img.MediaType, base64.StdEncoding.EncodeToString(img.Data)))
			}
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			if len(blocks) == 0 {
				continue
			}
			params.Messages = appendBlocks(params.Messages, anthropic.MessageParamRoleUser, blocks...)
		case llm.RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				input := tc.Args
				if input == nil {
					var err error
					if input, err = parseRaw(tc.RawArgs); err != nil {
						return params, upstream.Errorf(upstream.KindBadSpec, "message %d: tool call %s: %v", i, tc.ID, err)
					}
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, input, tc.Name))
			}
			if len(blocks) == 0 {
				continue
			}
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
		case llm.RoleTool:
			// Tool results travel as tool_result blocks of a user message;
			// consecutive results share one message.
			params.Messages = appendBlocks(params.Messages, anthropic.MessageParamRoleUser, anthropic.NewToolResultBlock(m.ToolCallID, m.Content, false))
		default:
			return params, upstream.Errorf(upstream.KindBadSpec, "message %d: unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		schema := anthropic.ToolInputSchemaParam{}
		extra := map[string]any{}
		for k, v := range t.Parameters {
			switch k {
			case "type":
			case "properties":
				schema.Properties = v
			case "required":
				if rs, ok := v.([]any); ok {
					for _, r := range rs {
						if s, ok := r.(string); ok {
							schema.Required = append(schema.Required, s)
						}
					}
				}
			default:
				extra[k] = v
			}
		}
		if len(extra) > 0 {
			schema.ExtraFields = extra
		}
		tp := &anthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = param.NewOpt(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: tp})
	}
	return params, nil
}

// appendBlocks adds blocks to the last message when it has the same role, so
// consecutive tool results (and a user's text after them) form one message.
func appendBlocks(msgs []anthropic.MessageParam, role anthropic.MessageParamRole, blocks ...anthropic.ContentBlockParamUnion) []anthropic.MessageParam {
	if n := len(msgs); n > 0 && msgs[n-1].Role == role {
		msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
		return msgs
	}
	return append(msgs, anthropic.MessageParam{Role: role, Content: blocks})
}

func parseRaw(raw string) (map[string]any, error) {
	m, msg := upstream.ParseArguments(raw)
	if msg != "" {
		return nil, errors.New(msg)
	}
	return m, nil
}

func classify(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &upstream.Error{Kind: upstream.KindTimeout, Message: "the call's timeout passed", Err: err}
	}
	if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return &upstream.Error{Kind: upstream.KindCanceled, Message: "the call was canceled", Err: err}
	}
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		e := &upstream.Error{Status: apiErr.StatusCode, Err: err}
		// An `event: error` arrives inside a 200 response: its type says what
		// it stands for (overloaded_error is a 529, rate_limit_error a 429).
		if k, ok := upstream.KindForErrorType(string(apiErr.Type())); ok && (apiErr.StatusCode < 300 || apiErr.StatusCode == 0) {
			e.Kind = k
		} else if apiErr.StatusCode >= 300 {
			e.Kind = upstream.KindForStatus(apiErr.StatusCode)
		} else {
			e.Kind = upstream.KindUnknown
		}
		if apiErr.Response != nil {
			e.RetryAfter = upstream.RetryAfter(apiErr.Response.Header, time.Now())
		}
		e.Message = errorMessage(apiErr)
		return e
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return &upstream.Error{Kind: upstream.KindBadResponse, Message: "provider sent an event that is not JSON: " + err.Error(), Err: err}
	}
	return upstream.TransportError(err)
}

// errorMessage takes the provider's own message from the error body, without
// the request dump the SDK's Error() adds.
func errorMessage(e *anthropic.Error) string {
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(e.RawJSON()), &body) == nil && body.Error.Message != "" {
		return fmt.Sprintf("%s: %s", body.Error.Type, body.Error.Message)
	}
	if e.StatusCode != 0 {
		return http.StatusText(e.StatusCode)
	}
	return "provider sent an error event"
}
