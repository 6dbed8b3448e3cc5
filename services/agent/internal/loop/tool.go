package loop

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
)

// Tool is anything the model can call: filesystem tools, todos, HTTP
// callbacks, builtins, custom Go functions.
type Tool interface {
	Name() string
	Description() string
	Parameters() map[string]any // JSON Schema object
	Execute(ctx context.Context, args map[string]any) (string, error)
}

// UserWait is implemented by tools that wait for the user (ask_user): the
// per-call tool timeout does not bound them, as they bound their own wait,
// and interactive agents run them without approval.
type UserWait interface {
	WaitsForUser() bool
}

// FuncTool wraps a plain Go function as a Tool.
type FuncTool struct {
	ToolName   string
	ToolDesc   string
	ToolParams map[string]any
	Fn         func(ctx context.Context, args map[string]any) (string, error)
}

// Name implements Tool.
func (t *FuncTool) Name() string { return t.ToolName }

// Description implements Tool.
func (t *FuncTool) Description() string { return t.ToolDesc }

// Parameters implements Tool; a nil schema is an object without properties.
func (t *FuncTool) Parameters() map[string]any {
	if t.ToolParams == nil {
		return map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return t.ToolParams
}

// Execute implements Tool.
func (t *FuncTool) Execute(ctx context.Context, args map[string]any) (string, error) {
	return t.Fn(ctx, args)
}

// toolRegistry holds the tools hooks registered on a state during one run.
type toolRegistry struct {
	mu    sync.Mutex
	tools map[string]Tool
}

// RegisterToolOnState adds tool to the state's per-run registry, replacing a
// tool of the same name.
func RegisterToolOnState(state *AgentState, tool Tool) {
	if state.toolRegistry == nil {
		state.toolRegistry = &toolRegistry{tools: map[string]Tool{}}
	}
	r := state.toolRegistry
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tools[tool.Name()] = tool
}

// Tools returns the tools registered on the state, sorted by name.
func (s *AgentState) Tools() []Tool {
	if s.toolRegistry == nil {
		return nil
	}
	s.toolRegistry.mu.Lock()
	defer s.toolRegistry.mu.Unlock()
	out := make([]Tool, 0, len(s.toolRegistry.tools))
	for _, t := range s.toolRegistry.tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// ResetTools drops the per-run registry, so a new run rebuilds it.
func (s *AgentState) ResetTools() { s.toolRegistry = nil }

// argsJSON encodes tool arguments for logs, spans and token estimates.
func argsJSON(args map[string]any) string {
	if args == nil {
		return "{}"
	}
	b, err := json.Marshal(args)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// ArgsJSON encodes tool arguments as JSON ("{}" when they cannot be encoded).
func ArgsJSON(args map[string]any) string { return argsJSON(args) }
