// Package llm holds the LLM client interface the agent loop consumes and the
// request/response types that cross it (the seed's "LLM Types"). The
// implementation over the LLM gateway lives in internal/llmclient; tests use
// scripted fakes.
package llm

import "context"

// Roles of Message, the same strings as the agent's roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Finish reasons a client reports; providers' own strings are mapped onto these.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length"
)

// Client is the LLM the agent loop calls.
type Client interface {
	// Call returns the whole reply at once.
	Call(ctx context.Context, req Request) (*Response, error)
	// Stream sends deltas on ch while the reply is generated and returns when
	// it is complete. It never closes ch; the final chunk carries the
	// complete tool calls, the finish reason and the usage.
	Stream(ctx context.Context, req Request, ch chan<- StreamChunk) error
}

// Request is one model call.
type Request struct {
	Model        string       `json:"model"`
	Messages     []Message    `json:"messages"`
	Tools        []ToolSchema `json:"tools,omitempty"`
	SystemPrompt string       `json:"system_prompt,omitempty"`
	MaxTokens    int          `json:"max_tokens,omitempty"`
	Temperature  *float64     `json:"temperature,omitempty"`
}

// Message is a conversation message on the wire to the model. It mirrors
// agent.Message, with tool calls in the provider convention ("arguments").
type Message struct {
	Role       string           `json:"role"`
	Content    string           `json:"content"`
	ToolCalls  []ToolCallResult `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
	Name       string           `json:"name,omitempty"`
}

// Response is a complete model reply.
type Response struct {
	Content      string           `json:"content"`
	ToolCalls    []ToolCallResult `json:"tool_calls,omitempty"`
	FinishReason string           `json:"finish_reason,omitempty"`
	Usage        Usage            `json:"usage"`
}

// ToolSchema describes a tool to the model.
type ToolSchema struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"` // JSON Schema
}

// ToolCallResult is a tool call requested by the model.
type ToolCallResult struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args map[string]any `json:"arguments"` // "arguments", the OpenAI convention
}

// StreamChunk is one piece of a streamed reply.
type StreamChunk struct {
	Delta string `json:"delta,omitempty"`
	// ToolCalls are complete calls, sent on the final chunk.
	ToolCalls    []ToolCallResult `json:"tool_calls,omitempty"`
	FinishReason string           `json:"finish_reason,omitempty"`
	Usage        *Usage           `json:"usage,omitempty"`
}

// Usage counts the tokens of one call.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}
