// Package llmclient is the agent loop's llm.Provider over the LLM gateway's
// gRPC API, bound to one agent's model specs (a fallback chain).
package llmclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/llmpb"
)

// Client calls the LLM gateway with fixed model specs.
type Client struct {
	api     llmv1.LLMServiceClient
	models  []*llmv1.ModelSpec
	timeout time.Duration
	onUsage UsageFunc
}

// UsageFunc receives the usage of each call that reported some, with the
// provider and model that answered.
type UsageFunc func(ctx context.Context, provider, model string, u llm.Usage)

// Option configures a Client.
type Option func(*Client)

// WithTimeout bounds each model call at the gateway (zero: the gateway's default).
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithUsage calls f after each call that reported usage.
func WithUsage(f UsageFunc) Option { return func(c *Client) { c.onUsage = f } }

// New returns a client of api for models.
func New(api llmv1.LLMServiceClient, models []*llmv1.ModelSpec, opts ...Option) *Client {
	c := &Client{api: api, models: models}
	for _, o := range opts {
		o(c)
	}
	return c
}

var _ llm.Provider = (*Client)(nil)

// request converts req for the wire: each message once, here.
func (c *Client) request(req llm.Request) (*llmv1.StreamRequest, error) {
	msgs, err := llmpb.MessagesToProto(req.Messages)
	if err != nil {
		return nil, err
	}
	tools, err := llmpb.ToolSchemasToProto(req.Tools)
	if err != nil {
		return nil, err
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

// Call returns the whole reply at once, through the gateway's Call.
func (c *Client) Call(ctx context.Context, req llm.Request) (*llm.Result, error) {
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
	res := &llm.Result{
		Content: resp.GetContent(), ToolCalls: llmpb.ToolCallsFromProto(resp.GetToolCalls()),
		FinishReason: resp.GetFinishReason(), Usage: llmpb.UsageFromProto(resp.GetUsage()),
	}
	c.used(ctx, resp.GetProvider(), resp.GetModel(), res.Usage)
	return res, nil
}

// Stream implements llm.Provider: text deltas go to emit as they come;
// tool-call fragments are not forwarded, since the gateway sends the complete
// calls with its last message, which completes the result.
func (c *Client) Stream(ctx context.Context, req llm.Request, emit llm.Emit) (llm.Result, error) {
	sr, err := c.request(req)
	if err != nil {
		return llm.Result{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.api.Stream(ctx, sr)
	if err != nil {
		return llm.Result{}, streamError(err)
	}
	var res llm.Result
	var content strings.Builder
	var provider, model string
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return llm.Result{}, streamError(err)
		}
		if m := resp.GetModel(); m != "" {
			provider, model = resp.GetProvider(), m
		}
		if d := resp.GetDelta(); d != "" {
			content.WriteString(d)
			if err := emit(llm.Event{Delta: d}); err != nil {
				return llm.Result{}, err
			}
		}
		if tcs := resp.GetToolCalls(); len(tcs) > 0 {
			res.ToolCalls = append(res.ToolCalls, llmpb.ToolCallsFromProto(tcs)...)
		}
		if fr := resp.GetFinishReason(); fr != "" {
			res.FinishReason = fr
		}
		if u := resp.GetUsage(); u != nil {
			res.Usage = llmpb.UsageFromProto(u)
		}
	}
	res.Content = content.String()
	c.used(ctx, provider, model, res.Usage)
	return res, nil
}

// used reports a call's usage, when it has some, to the UsageFunc.
func (c *Client) used(ctx context.Context, provider, model string, u llm.Usage) {
	if c.onUsage != nil && u != (llm.Usage{}) {
		c.onUsage(ctx, provider, model, u)
	}
}

// streamError wraps a failed call. Unavailable (the gateway was killed or
// cannot be dialled, or it found no provider up) says so in words, for the
// run's error event; the status stays in the chain for its code.
func streamError(err error) error {
	if status.Code(err) == codes.Unavailable {
		return fmt.Errorf("the model is unreachable: %w", err)
	}
	return fmt.Errorf("llm stream: %w", err)
}
