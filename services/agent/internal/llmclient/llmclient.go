// Package llmclient is the agent loop's llm.Client over the LLM gateway's
// gRPC API, bound to one agent's model specs (a fallback chain).
package llmclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/services/agent/internal/llm"
)

// Client calls the LLM gateway with fixed model specs.
type Client struct {
	api     llmv1.LLMServiceClient
	models  []*llmv1.ModelSpec
	timeout time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithTimeout bounds each model call at the gateway (zero: the gateway's default).
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// New returns a client of api for models.
func New(api llmv1.LLMServiceClient, models []*llmv1.ModelSpec, opts ...Option) *Client {
	c := &Client{api: api, models: models}
	for _, o := range opts {
		o(c)
	}
	return c
}

var _ llm.Client = (*Client)(nil)

func (c *Client) request(req llm.Request) (*llmv1.StreamRequest, error) {
	msgs := make([]*llmv1.Message, len(req.Messages))
	for i, m := range req.Messages {
		pm := &llmv1.Message{Role: m.Role, Content: m.Content, ToolCallId: m.ToolCallID, Name: m.Name}
		for _, tc := range m.ToolCalls {
			args, err := toStruct(tc.Args)
			if err != nil {
				return nil, fmt.Errorf("message %d: tool call %s: %w", i, tc.ID, err)
			}
			pm.ToolCalls = append(pm.ToolCalls, &llmv1.ToolCall{Id: tc.ID, Name: tc.Name, Arguments: args})
		}
		msgs[i] = pm
	}
	var tools []*llmv1.ToolSchema
	for _, t := range req.Tools {
		params, err := toStruct(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
		}
		tools = append(tools, &llmv1.ToolSchema{Name: t.Name, Description: t.Description, Parameters: params})
	}
	out := &llmv1.StreamRequest{
		Models: c.models, Messages: msgs, Tools: tools,
		SystemPrompt: req.SystemPrompt, MaxTokens: int32(req.MaxTokens), Temperature: req.Temperature,
	}
	if c.timeout > 0 {
		out.Timeout = durationpb.New(c.timeout)
	}
	return out, nil
}

// toStruct converts a JSON-shaped map that may hold typed Go values (a
// schema's []string "required") by a JSON round trip.
func toStruct(m map[string]any) (*structpb.Struct, error) {
	if m == nil {
		return nil, nil
	}
	s, err := structpb.NewStruct(m)
	if err == nil {
		return s, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	s = &structpb.Struct{}
	if err := protojson.Unmarshal(b, s); err != nil {
		return nil, err
	}
	return s, nil
}

func toolCalls(in []*llmv1.ToolCall) []llm.ToolCallResult {
	var out []llm.ToolCallResult
	for _, tc := range in {
		args := tc.GetArguments().AsMap()
		if args == nil {
			args = map[string]any{}
		}
		out = append(out, llm.ToolCallResult{ID: tc.GetId(), Name: tc.GetName(), Args: args})
	}
	return out
}

func usage(u *llmv1.Usage) *llm.Usage {
	if u == nil {
		return nil
	}
	return &llm.Usage{InputTokens: u.GetInputTokens(), OutputTokens: u.GetOutputTokens()}
}

// Call implements llm.Client.
func (c *Client) Call(ctx context.Context, req llm.Request) (*llm.Response, error) {
	sr, err := c.request(req)
	if err != nil {
		return nil, err
	}
	resp, err := c.api.Call(ctx, &llmv1.CallRequest{
		Models: sr.Models, Messages: sr.Messages, Tools: sr.Tools, SystemPrompt: sr.SystemPrompt,
		MaxTokens: sr.MaxTokens, Temperature: sr.Temperature, Timeout: sr.Timeout,
	})
	if err != nil {
		return nil, fmt.Errorf("llm call: %w", err)
	}
	out := &llm.Response{Content: resp.GetContent(), ToolCalls: toolCalls(resp.GetToolCalls()), FinishReason: resp.GetFinishReason()}
	if u := usage(resp.GetUsage()); u != nil {
		out.Usage = *u
	}
	return out, nil
}

// Stream implements llm.Client: text deltas go out as they come; tool-call
// fragments are not forwarded, since the gateway sends the complete calls
// with the last message, which becomes the final chunk.
func (c *Client) Stream(ctx context.Context, req llm.Request, ch chan<- llm.StreamChunk) error {
	sr, err := c.request(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.api.Stream(ctx, sr)
	if err != nil {
		return fmt.Errorf("llm stream: %w", err)
	}
	send := func(chunk llm.StreamChunk) error {
		select {
		case ch <- chunk:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	final := llm.StreamChunk{}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("llm stream: %w", err)
		}
		if d := resp.GetDelta(); d != "" {
			if err := send(llm.StreamChunk{Delta: d}); err != nil {
				return err
			}
		}
		if tcs := resp.GetToolCalls(); len(tcs) > 0 {
			final.ToolCalls = append(final.ToolCalls, toolCalls(tcs)...)
		}
		if fr := resp.GetFinishReason(); fr != "" {
			final.FinishReason = fr
		}
		if u := usage(resp.GetUsage()); u != nil {
			final.Usage = u
		}
	}
	return send(final)
}
