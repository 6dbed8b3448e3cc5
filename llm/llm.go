// Package llm holds the provider-neutral types of a model call, the one shape
// both sides of the LLM gateway use: the agent builds a Request from its
// thread (whose messages are llm.Message), the gateway hands the same types to
// its providers, and each streams Events and returns a Result. Conversion to
// and from the gateway's protobuf messages lives in llm/llmpb.
package llm

import "context"

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

// Message is one message of a conversation: a system prompt, a user input, an
// assistant reply or a tool result. The agent stores threads as JSON of this
// type, so the JSON names are a persistence format: never rename them.
type Message struct {
	Role       string     `json:"role"` // "system", "user", "assistant", "tool"
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // set when Role == "assistant" and the model wants tools
	ToolCallID string     `json:"tool_call_id,omitempty"` // set when Role == "tool" (matches ToolCall.ID)
	Name       string     `json:"name,omitempty"`         // tool name when Role == "tool"
	// Images are pictures a user message shows the model, after its text.
	// Only providers that accept images take a request that has any.
	Images []Image `json:"images,omitempty"`
}

// Image is a picture, its bytes inline: a URL given by a caller is fetched
// once, at the edge, so that no provider reaches a destination a user chose.
type Image struct {
	// MediaType is image/png, image/jpeg, image/gif or image/webp.
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"`
	// Detail is OpenAI's image_url.detail (auto, low, high), passed to the
	// providers that have it; empty leaves the provider's default.
	Detail string `json:"detail,omitempty"`
}

// ImageAccepter is a Provider that can say whether a model takes images. A
// provider that does not implement it takes none.
type ImageAccepter interface {
	AcceptsImages() bool
}

// HasImages reports whether any message of req carries an image.
func (req Request) HasImages() bool {
	for _, m := range req.Messages {
		if len(m.Images) > 0 {
			return true
		}
	}
	return false
}

// ToolCall is a model's request to run a tool. Like Message, its JSON names
// are part of the stored thread format.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Args is the parsed arguments object; empty or nil when ArgsErr is set.
	Args map[string]any `json:"args"`
	// RawArgs is the arguments' JSON text (as the provider sent it, or as
	// the agent encoded Args once); derived, so not stored.
	RawArgs string `json:"-"`
	// ArgsErr says why the provider's arguments text is not a JSON object;
	// empty when it is. It is reported by the gateway for the call's turn
	// and not stored.
	ArgsErr string `json:"-"`
}

// ToolSchema describes a tool the model may call.
type ToolSchema struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"` // JSON Schema
}

// Usage counts the tokens of one call.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CostMicroUSD is the call's cost in millionths of a US dollar, when
	// the LLM gateway has a price for the model; providers leave it 0.
	CostMicroUSD int64 `json:"cost_micro_usd,omitempty"`
}

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

// ToolCallDelta is a fragment of a tool call as the provider streams it.
type ToolCallDelta struct {
	Index          int
	ID             string
	Name           string
	ArgumentsDelta string
}

// Event is one streamed piece of a reply: a text delta, a tool-call
// fragment, or a piece of the model's thinking (its reasoning, which a model
// streams before its answer). An event carries one of them.
type Event struct {
	Delta         string
	ToolCallDelta *ToolCallDelta
	Thinking      string
}

// Result is the whole reply, known once the stream has ended.
type Result struct {
	Content      string
	ToolCalls    []ToolCall
	FinishReason string
	Usage        Usage
	// Thinking is the model's reasoning before its answer, when the model
	// shows it; APIs without a place for it leave it out.
	Thinking string
}

// Emit receives the events of a stream in order. An error stops the stream and
// is returned by the provider as is (for example: the client went away).
type Emit func(Event) error

// Provider streams one reply from one model. It calls emit for every delta as
// it arrives and returns the assembled result. The gateway's providers
// implement it over a vendor's API; the agent's client implements it over the
// gateway.
type Provider interface {
	Stream(ctx context.Context, req Request, emit Emit) (Result, error)
}
