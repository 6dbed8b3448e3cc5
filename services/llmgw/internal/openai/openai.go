// Package openai is the provider for OpenAI and every server with its Chat
// Completions API (Ollama, vLLM, …), built on the official openai-go SDK.
package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

// Provider streams chat completions from one base URL with one key.
type Provider struct {
	svc            openai.ChatCompletionService
	emb            openai.EmbeddingService
	maxBytes       int
	legacyMaxToken bool
}

// Option configures a Provider.
type Option func(*Provider)

// WithMaxResponseBytes bounds the text and tool arguments of one reply.
func WithMaxResponseBytes(n int) Option { return func(p *Provider) { p.maxBytes = n } }

// WithLegacyMaxTokens sends the limit as max_tokens, which OpenAI-compatible
// servers (Ollama, older vLLM) understand, instead of OpenAI's
// max_completion_tokens.
func WithLegacyMaxTokens() Option { return func(p *Provider) { p.legacyMaxToken = true } }

// New returns a provider for baseURL. apiKey may be empty for servers without
// authentication. The SDK's own retries are off: the gateway's router owns the
// retry and fallback policy, because it must never retry once output has been
// sent. The SDK's environment defaults (OPENAI_API_KEY, OPENAI_BASE_URL, …)
// are never read, so a key is only sent where the gateway decided to send it.
func New(hc *http.Client, baseURL, apiKey string, opts ...Option) *Provider {
	p := &Provider{}
	for _, o := range opts {
		o(p)
	}
	reqOpts := []option.RequestOption{
		option.WithHTTPClient(hc),
		option.WithBaseURL(baseURL),
		option.WithAPIKey(apiKey),
		option.WithMaxRetries(0),
	}
	p.svc = openai.NewChatCompletionService(reqOpts...)
	p.emb = openai.NewEmbeddingService(reqOpts...)
	return p
}

// Embed returns the vectors of texts, in their order, through the Embeddings
// API (OpenAI, Ollama and vLLM all serve it). dims > 0 asks for vectors of
// that size, which only OpenAI's text-embedding-3 models honour.
func (p *Provider) Embed(ctx context.Context, model string, texts []string, dims int) ([][]float32, llm.Usage, error) {
	params := openai.EmbeddingNewParams{
		Model:          model,
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	}
	if dims > 0 {
		params.Dimensions = param.NewOpt(int64(dims))
	}
	res, err := p.emb.New(ctx, params)
	if err != nil {
		return nil, llm.Usage{}, classify(ctx, err)
	}
	if len(res.Data) != len(texts) {
		return nil, llm.Usage{}, upstream.Errorf(upstream.KindBadResponse, "provider returned %d embeddings for %d texts", len(res.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range res.Data {
		if d.Index < 0 || int(d.Index) >= len(texts) || out[d.Index] != nil {
			return nil, llm.Usage{}, upstream.Errorf(upstream.KindBadResponse, "provider returned an embedding with index %d out of range or twice", d.Index)
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		out[d.Index] = v
	}
	return out, llm.Usage{InputTokens: res.Usage.PromptTokens}, nil
}

// AcceptsImages implements llm.ImageAccepter: the Chat Completions API takes
// image_url parts; a model that cannot see them says so itself.
func (p *Provider) AcceptsImages() bool { return true }

// Stream implements llm.Provider.
func (p *Provider) Stream(ctx context.Context, req llm.Request, emit llm.Emit) (llm.Result, error) {
	params, err := p.params(req)
	if err != nil {
		return llm.Result{}, err
	}
	stream := p.svc.NewStreaming(ctx, params)
	defer stream.Close()

	acc := upstream.NewAccumulator(p.maxBytes)
	var (
		usage     llm.Usage
		finish    string
		refusal   bool
		emitErr   error
		sawFinish bool
	)
	send := func(ev llm.Event) bool {
		if emitErr = emit(ev); emitErr != nil {
			return false
		}
		return true
	}
loop:
	for stream.Next() {
		chunk := stream.Current()
		if chunk.JSON.Usage.Valid() {
			usage = llm.Usage{InputTokens: chunk.Usage.PromptTokens, OutputTokens: chunk.Usage.CompletionTokens}
		}
		for i := range chunk.Choices {
			ch := &chunk.Choices[i]
			if ch.Index != 0 {
				continue // only one choice is ever requested
			}
			d := &ch.Delta
			if d.Content != "" {
				if err := acc.Text(d.Content); err != nil {
					return llm.Result{}, err
				}
				if !send(llm.Event{Delta: d.Content}) {
					break loop
				}
			}
			if d.Refusal != "" {
				// A refusal is the model's answer to the user; it is sent as text
				// and the finish reason says it was a refusal.
				refusal = true
				if err := acc.Text(d.Refusal); err != nil {
					return llm.Result{}, err
				}
				if !send(llm.Event{Delta: d.Refusal}) {
					break loop
				}
			}
			for j := range d.ToolCalls {
				tc := &d.ToolCalls[j]
				td := llm.ToolCallDelta{Index: int(tc.Index), ID: tc.ID, Name: tc.Function.Name, ArgumentsDelta: tc.Function.Arguments}
				if err := acc.Tool(td); err != nil {
					return llm.Result{}, err
				}
				if !send(llm.Event{ToolCallDelta: &td}) {
					break loop
				}
			}
			if ch.FinishReason != "" {
				finish, sawFinish = ch.FinishReason, true
			}
		}
	}
	if emitErr != nil {
		return llm.Result{}, emitErr
	}
	if err := stream.Err(); err != nil {
		return llm.Result{}, classify(ctx, err)
	}
	if !sawFinish {
		if err := ctx.Err(); err != nil {
			return llm.Result{}, classify(ctx, err)
		}
		return llm.Result{}, upstream.Errorf(upstream.KindConnection, "stream ended before a finish reason")
	}
	return acc.Result(finishReason(finish, refusal, acc.HasToolCalls()), usage), nil
}

func finishReason(r string, refusal, tools bool) string {
	switch {
	case refusal:
		return llm.FinishRefusal
	case r == "tool_calls" || r == "function_call":
		return llm.FinishToolCalls
	case r == "length":
		return llm.FinishLength
	case r == "content_filter":
		return llm.FinishContentFilter
	case tools:
		// Some compatible servers say "stop" after tool calls.
		return llm.FinishToolCalls
	}
	return llm.FinishStop
}

func (p *Provider) params(req llm.Request) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	if req.SystemPrompt != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.SystemPrompt))
	}
	for i, m := range req.Messages {
		msg, err := message(m)
		if err != nil {
			return params, upstream.Errorf(upstream.KindBadSpec, "message %d: %v", i, err)
		}
		params.Messages = append(params.Messages, msg)
	}
	for _, t := range req.Tools {
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(t.Parameters)}
		if t.Description != "" {
			fd.Description = param.NewOpt(t.Description)
		}
		if fd.Parameters == nil {
			fd.Parameters = shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	if req.MaxTokens > 0 {
		if p.legacyMaxToken {
			params.MaxTokens = param.NewOpt(int64(req.MaxTokens))
		} else {
			params.MaxCompletionTokens = param.NewOpt(int64(req.MaxTokens))
		}
	}
	if req.Temperature != nil {
		params.Temperature = param.NewOpt(*req.Temperature)
	}
	return params, nil
}

func message(m llm.Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case llm.RoleSystem:
		return openai.SystemMessage(m.Content), nil
	case llm.RoleUser:
		if len(m.Images) == 0 {
			return openai.UserMessage(m.Content), nil
		}
		var parts []openai.ChatCompletionContentPartUnionParam
		if m.Content != "" {
			parts = append(parts, openai.TextContentPart(m.Content))
		}
		for _, img := range m.Images {
			parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
				URL: "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data), Detail: img.Detail,
			}))
		}
		return openai.UserMessage(parts), nil
	case llm.RoleTool:
		return openai.ToolMessage(m.Content, m.ToolCallID), nil
	case llm.RoleAssistant:
		a := openai.ChatCompletionAssistantMessageParam{}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = param.NewOpt(m.Content)
		}
		for _, tc := range m.ToolCalls {
			args, err := RawArguments(tc)
			if err != nil {
				return openai.ChatCompletionMessageParamUnion{}, err
			}
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	}
	return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
}

// RawArguments returns a call's arguments as JSON text: the provider's own
// text when it is known, else the parsed object re-encoded.
func RawArguments(tc llm.ToolCall) (string, error) {
	if tc.RawArgs != "" {
		return tc.RawArgs, nil
	}
	if tc.Args == nil {
		return "{}", nil
	}
	b, err := json.Marshal(tc.Args)
	if err != nil {
		return "", fmt.Errorf("tool call %s arguments: %w", tc.ID, err)
	}
	return string(b), nil
}

// streamErrorBody is the error object OpenAI-compatible servers send as a data
// line inside a 200 stream.
type streamErrorBody struct {
	Error struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

func classify(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &upstream.Error{Kind: upstream.KindTimeout, Message: "the call's timeout passed", Err: err}
	}
	if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return &upstream.Error{Kind: upstream.KindCanceled, Message: "the call was canceled", Err: err}
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		e := &upstream.Error{Kind: upstream.KindForStatus(apiErr.StatusCode), Status: apiErr.StatusCode, Err: err}
		if apiErr.Response != nil {
			e.RetryAfter = upstream.RetryAfter(apiErr.Response.Header, time.Now())
		}
		e.Message = apiErr.Message
		if e.Message == "" {
			e.Message = http.StatusText(apiErr.StatusCode)
		}
		if apiErr.Type != "" {
			e.Message = apiErr.Type + ": " + e.Message
		}
		return e
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return classifyStreamError(se.Event.Data, err)
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return &upstream.Error{Kind: upstream.KindBadResponse, Message: "provider sent an event that is not JSON: " + err.Error(), Err: err}
	}
	return upstream.TransportError(err)
}

// classifyStreamError classifies an error data line by its type, then its
// code, so that an overloaded or rate-limited error inside a 200 stream is
// retried like the HTTP status it stands for.
func classifyStreamError(data []byte, err error) error {
	var body streamErrorBody
	e := &upstream.Error{Kind: upstream.KindUnknown, Status: http.StatusOK, Err: err}
	if json.Unmarshal(data, &body) != nil {
		e.Message = "provider sent an error event"
		return e
	}
	code := string(body.Error.Code)
	var s string
	if json.Unmarshal(body.Error.Code, &s) == nil {
		code = s
	}
	if k, ok := upstream.KindForErrorType(body.Error.Type); ok {
		e.Kind = k
	} else if k, ok := upstream.KindForErrorType(code); ok {
		e.Kind = k
	} else {
		var n int
		if json.Unmarshal(body.Error.Code, &n) == nil && n >= 400 {
			e.Kind = upstream.KindForStatus(n)
		}
	}
	e.Message = body.Error.Message
	if body.Error.Type != "" {
		e.Message = body.Error.Type + ": " + e.Message
	}
	return e
}
