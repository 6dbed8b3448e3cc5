// Package llm holds the gateway's provider-neutral types: the request a
// provider receives, the events it streams, and the result it returns. The
// names follow the seed's llm/client.go (Request, Message, ToolSchema,
// ToolCallResult).
package llm

import (
	"context"
	"time"
)

// Roles of a message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Finish reasons, normalised across providers.
const (
	FinishStop          = "stop"
	FinishToolCalls     = "tool_calls"
	FinishLength        = "length"
	FinishRefusal       = "refusal"
	FinishContentFilter = "content_filter"
)

// Request is one conversation sent to one model.
type Request struct {
	Model        string
	Messages     []Message
	Tools        []ToolSchema
	SystemPrompt string
	// MaxTokens limits the reply; 0 leaves the provider's default (Anthropic
	// requires a value, so its provider fills one in).
	MaxTokens   int
	Temperature *float64
}

// Message is one message of a conversation.
type Message struct {
	Role       string
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
	Name       string
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	ID   string
	Name string
	// Args is the parsed arguments object; nil when ArgsErr is set.
	Args map[string]any
	// RawArgs is the JSON text as the provider sent it.
	RawArgs string
	// ArgsErr says why RawArgs is not a JSON object; empty when it is.
	ArgsErr string
}

// ToolSchema describes a tool the model may call.
type ToolSchema struct {
	Name        string
	Description string
	Parameters  map[string]any
}

// Usage counts the tokens of one call.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// ToolCallDelta is a fragment of a tool call as the provider streams it.
type ToolCallDelta struct {
	Index          int
	ID             string
	Name           string
	ArgumentsDelta string
}

// Event is one streamed piece of a reply: a text delta or a tool-call fragment.
type Event struct {
	Delta         string
	ToolCallDelta *ToolCallDelta
}

// Result is the whole reply, known once the stream has ended.
type Result struct {
	Content      string
	ToolCalls    []ToolCall
	FinishReason string
	Usage        Usage
}

// Emit receives the events of a stream in order. An error stops the stream and
// is returned by the provider as is (for example: the client went away).
type Emit func(Event) error

// Provider streams one reply from one model. It calls emit for every delta as
// it arrives and returns the assembled result; errors are *Error where the
// provider could classify them.
type Provider interface {
	Stream(ctx context.Context, req Request, emit Emit) (Result, error)
}

// EstimateTokens is the seed's heuristic (len/4) for providers that do not
// count tokens themselves.
func EstimateTokens(s string) int64 {
	return int64((len(s) + 3) / 4)
}

// Sleep waits for d or until ctx ends, whichever is first.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
