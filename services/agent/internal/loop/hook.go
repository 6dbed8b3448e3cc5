package loop

import (
	"context"

	"github.com/wick-agent/wick/llm"
)

// Phase names, as Hook.Phases reports them.
const (
	PhaseBeforeAgent   = "before_agent"
	PhaseModifyRequest = "modify_request"
	PhaseWrapModelCall = "wrap_model_call"
	PhaseWrapToolCall  = "wrap_tool_call"
)

// ModelCallWrapFunc is the "next" function a model-call wrapper receives;
// calling it passes the call through.
type ModelCallWrapFunc func(ctx context.Context, msgs []llm.Message) (*llm.Result, error)

// ToolCallFunc is the "next" function a tool-call wrapper receives; calling
// it executes the tool.
type ToolCallFunc func(ctx context.Context, call llm.ToolCall) (*ToolResult, error)

// Hook is agent middleware. Hooks compose as an onion: the first registered
// is the outermost ring of WrapModelCall and WrapToolCall; BeforeAgent and
// ModifyRequest run sequentially in registration order.
type Hook interface {
	Name() string
	Phases() []string
	BeforeAgent(ctx context.Context, state *AgentState) error
	WrapModelCall(ctx context.Context, msgs []llm.Message, next ModelCallWrapFunc) (*llm.Result, error)
	WrapToolCall(ctx context.Context, call llm.ToolCall, next ToolCallFunc) (*ToolResult, error)
	ModifyRequest(ctx context.Context, msgs []llm.Message) ([]llm.Message, error)
}

// BaseHook gives no-op defaults; hooks embed it and override their phases.
type BaseHook struct{}

// BeforeAgent does nothing.
func (BaseHook) BeforeAgent(context.Context, *AgentState) error { return nil }

// WrapModelCall passes through.
func (BaseHook) WrapModelCall(ctx context.Context, msgs []llm.Message, next ModelCallWrapFunc) (*llm.Result, error) {
	return next(ctx, msgs)
}

// WrapToolCall passes through.
func (BaseHook) WrapToolCall(ctx context.Context, call llm.ToolCall, next ToolCallFunc) (*ToolResult, error) {
	return next(ctx, call)
}

// ModifyRequest passes through.
func (BaseHook) ModifyRequest(_ context.Context, msgs []llm.Message) ([]llm.Message, error) {
	return msgs, nil
}

// ChainModelCall composes the hooks' WrapModelCall around base, the first
// hook outermost.
func ChainModelCall(hooks []Hook, base ModelCallWrapFunc) ModelCallWrapFunc {
	fn := base
	for i := len(hooks) - 1; i >= 0; i-- {
		h, next := hooks[i], fn
		fn = func(ctx context.Context, msgs []llm.Message) (*llm.Result, error) {
			return h.WrapModelCall(ctx, msgs, next)
		}
	}
	return fn
}

// ChainToolCall composes the hooks' WrapToolCall around base, the first hook
// outermost.
func ChainToolCall(hooks []Hook, base ToolCallFunc) ToolCallFunc {
	fn := base
	for i := len(hooks) - 1; i >= 0; i-- {
		h, next := hooks[i], fn
		fn = func(ctx context.Context, call llm.ToolCall) (*ToolResult, error) {
			return h.WrapToolCall(ctx, call, next)
		}
	}
	return fn
}
