package tools

import (
	"encoding/json"
	"fmt"

	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// Native is a Go tool of the program that embeds Wick, called in-process:
// the model's arguments reach it as the decoded JSON object the loop already
// holds, and its result goes through the same hooks (tracing, eviction) as
// every other tool's, because the loop sees it as one more loop.Tool.
type Native struct {
	loop.Tool
	// params is the tool's schema as plain JSON values, made once here so
	// that no model call re-encodes Go types such as []string.
	params map[string]any
}

// NewNative validates t and returns it as a native tool: its name follows the
// providers' rule, its Fn is set when it is a FuncTool, and its parameters
// are a JSON Schema object that encodes as JSON. Names reserved by built-in
// and hook tools are checked by the caller, which knows them.
func NewNative(t loop.Tool) (*Native, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: the tool is nil", ErrInvalidToolDef)
	}
	if ft, ok := t.(*loop.FuncTool); ok && (ft == nil || ft.Fn == nil) {
		return nil, fmt.Errorf("%w: FuncTool %q has no Fn", ErrInvalidToolDef, funcToolName(ft))
	}
	name := t.Name()
	if !toolNameRE.MatchString(name) {
		return nil, fmt.Errorf("%w: name %q must be 1-64 letters, digits, '_' or '-'", ErrInvalidToolDef, name)
	}
	raw, err := json.Marshal(t.Parameters())
	if err != nil {
		return nil, fmt.Errorf("%w: tool %s: parameters do not encode as JSON: %w", ErrInvalidToolDef, name, err)
	}
	var params map[string]any
	if err := json.Unmarshal(raw, &params); err != nil {
		return nil, fmt.Errorf("%w: tool %s: parameters must be a JSON object: %w", ErrInvalidToolDef, name, err)
	}
	if err := ValidateSchema(params); err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
	}
	return &Native{Tool: t, params: params}, nil
}

func funcToolName(ft *loop.FuncTool) string {
	if ft == nil {
		return ""
	}
	return ft.ToolName
}

// Parameters implements loop.Tool with the schema validated by NewNative.
func (n *Native) Parameters() map[string]any { return n.params }
