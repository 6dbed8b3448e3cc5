package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/tasks"
	"github.com/wick-agent/wick/services/agent/internal/tools"
)

// Tool is anything the model can call. A program that embeds Wick gives the
// service its own tools with WithNativeTools: they run in-process, inside
// the agent loop, through the same hooks (tracing spans, eviction of large
// results, on_tool_start/on_tool_end events, approval of interactive agents)
// as the built-in tools.
//
// Execute receives the model's arguments as the decoded JSON object, and a
// context that ends when the run is cancelled or the call times out; it
// carries the calling user (identity.User) and the call (CallInfoFromContext).
// An error becomes the call's error result, which the model sees; a panic is
// recovered the same way.
type Tool = loop.Tool

// FuncTool is a Tool made of a Go function:
//
//	&agent.FuncTool{
//		ToolName:   "add",
//		ToolDesc:   "Add two numbers",
//		ToolParams: map[string]any{"type": "object", "properties": ...},
//		Fn: func(ctx context.Context, args map[string]any) (string, error) { ... },
//	}
//
// ToolParams is the JSON Schema of the arguments object; nil means an
// object without properties.
type FuncTool = loop.FuncTool

// CallInfo identifies the tool call a tool is executing.
type CallInfo = loop.CallInfo

// CallInfoFromContext returns the call a tool's Execute is serving: its
// tool call id, thread and run.
func CallInfoFromContext(ctx context.Context) (CallInfo, bool) { return loop.CallInfoFromContext(ctx) }

// Tool kinds, as ListTools reports them.
const (
	ToolKindHTTP   = "http"
	ToolKindNative = "native"
)

// Errors of native tool registration.
var (
	// ErrInvalidTool is wrapped when a tool's name, function or parameter
	// schema is not valid.
	ErrInvalidTool = tools.ErrInvalidToolDef
	// ErrToolNameTaken is wrapped when a tool's name is that of a built-in
	// tool, of a tool the hooks register, or of another native tool.
	ErrToolNameTaken = errors.New("tool name taken")
)

// WithNativeTools gives the service Go tools of the embedding program. An
// agent uses one by naming it in its tools, like a built-in; the built-in
// "default" agent (there when no templates are configured) names them all.
// They are listed by ListTools with kind "native", and the API refuses to
// register or delete an external tool of the same name. New fails when one
// is not valid (see ValidateTool) or two share a name.
func WithNativeTools(ts ...Tool) Option {
	return func(o *options) { o.native = append(o.native, ts...) }
}

// ValidateTool checks a native tool as WithNativeTools will: a name of 1-64
// letters, digits, '_' or '-' that no built-in or hook tool has, a function
// when it is a FuncTool, and parameters that are a JSON Schema object.
func ValidateTool(t Tool) error {
	_, err := nativeTool(tasks.Unmark(t))
	return err
}

func nativeTool(t Tool) (*tools.Native, error) {
	n, err := tools.NewNative(t)
	if err != nil {
		return nil, err
	}
	name := n.Name()
	if tools.IsBuiltin(name) {
		return nil, fmt.Errorf("%w: %q is a built-in tool", ErrToolNameTaken, name)
	}
	if slices.Contains(tasks.ToolNames(), name) {
		return nil, fmt.Errorf("%w: %q is a tool of background tasks (%s)", ErrToolNameTaken, name, strings.Join(tasks.ToolNames(), ", "))
	}
	if slices.Contains(hooks.ToolNames(), name) {
		return nil, fmt.Errorf("%w: %q is a tool the hooks register (%s)", ErrToolNameTaken, name, strings.Join(hooks.ToolNames(), ", "))
	}
	return n, nil
}

// nativeTools validates the configured native tools and indexes them by
// name, with the names of those declared background (BackgroundTool).
func nativeTools(ts []Tool) (map[string]*tools.Native, map[string]bool, error) {
	out := make(map[string]*tools.Native, len(ts))
	background := map[string]bool{}
	for _, t := range ts {
		n, err := nativeTool(tasks.Unmark(t))
		if err != nil {
			return nil, nil, fmt.Errorf("agent: native tool: %w", err)
		}
		if _, dup := out[n.Name()]; dup {
			return nil, nil, fmt.Errorf("agent: native tool: %w: %q is given twice", ErrToolNameTaken, n.Name())
		}
		out[n.Name()] = n
		background[n.Name()] = tasks.IsBackground(t)
	}
	return out, background, nil
}

// nativeNames returns the native tools' names, sorted.
func nativeNames(m map[string]*tools.Native) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
