package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// Todo list constants.
const (
	// ToolWriteTodos is the todo tool's name.
	ToolWriteTodos = "write_todos"
	// DefaultMaxTodos caps the list so a runaway model cannot grow the state
	// without bound.
	DefaultMaxTodos = 100
)

// ValidTodoStatuses are the statuses write_todos accepts.
var ValidTodoStatuses = []string{loop.TodoPending, loop.TodoInProgress, loop.TodoDone}

// ErrInvalidTodos is wrapped by every write_todos validation error.
var ErrInvalidTodos = errors.New("invalid todos")

// TodoListHook provides the write_todos tool.
type TodoListHook struct {
	loop.BaseHook
	maxTodos int
}

// TodoListOption configures a TodoListHook.
type TodoListOption func(*TodoListHook)

// WithMaxTodos caps the number of todos.
func WithMaxTodos(n int) TodoListOption { return func(h *TodoListHook) { h.maxTodos = n } }

// NewTodoListHook returns the todo list hook.
func NewTodoListHook(opts ...TodoListOption) *TodoListHook {
	h := &TodoListHook{maxTodos: DefaultMaxTodos}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Name implements loop.Hook.
func (h *TodoListHook) Name() string { return NameTodoList }

// Phases implements loop.Hook.
func (h *TodoListHook) Phases() []string { return phasesOf(NameTodoList) }

// BeforeAgent registers write_todos. A new thread starts with an empty list;
// a thread's existing todos are kept so a follow-up message does not lose
// the plan.
func (h *TodoListHook) BeforeAgent(_ context.Context, state *loop.AgentState) error {
	if state.Todos == nil {
		state.Todos = []loop.Todo{}
	}
	loop.RegisterToolOnState(state, &loop.FuncTool{
		ToolName: ToolWriteTodos,
		ToolDesc: "Replace the whole todo list used to plan and track multi-step work. " +
			"Send every todo each time; statuses are pending, in_progress and done.",
		ToolParams: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"todos": map[string]any{
					"type":        "array",
					"description": "The complete todo list",
					"items": map[string]any{
						"type": "object",
						"properties": map[string]any{
							"id":     map[string]any{"type": "string", "description": "Stable id of the todo"},
							"title":  map[string]any{"type": "string", "description": "What to do"},
							"status": map[string]any{"type": "string", "enum": ValidTodoStatuses},
						},
						"required": []string{"title", "status"},
					},
				},
			},
			"required": []string{"todos"},
		},
		Fn: func(ctx context.Context, args map[string]any) (string, error) {
			todos, err := ParseTodos(args["todos"], h.maxTodos)
			if err != nil {
				return "", err
			}
			if !loop.MutateState(ctx, state, func(s *loop.AgentState) { s.Todos = todos }) {
				return "", context.Canceled
			}
			loop.Emit(ctx, loop.StreamEvent{Name: ToolWriteTodos, Data: loop.TodosData(todos)})
			b, _ := json.Marshal(todos)
			return "Updated todo list to " + string(b), nil
		},
	})
	return nil
}

// ParseTodos validates a write_todos argument: a list of at most max todos,
// each with a title and a valid status. Missing ids are numbered from 1.
func ParseTodos(v any, max int) ([]loop.Todo, error) {
	if v == nil {
		return nil, fmt.Errorf("%w: \"todos\" is required (a list of {id, title, status})", ErrInvalidTodos)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidTodos, err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%w: \"todos\" must be a list of objects with id, title and status", ErrInvalidTodos)
	}
	if max > 0 && len(raw) > max {
		return nil, fmt.Errorf("%w: %d todos, at most %d are allowed", ErrInvalidTodos, len(raw), max)
	}
	todos := make([]loop.Todo, 0, len(raw))
	seen := make(map[string]bool, len(raw))
	for i, r := range raw {
		t := loop.Todo{ID: scalarString(r["id"]), Title: scalarString(r["title"]), Status: scalarString(r["status"])}
		if t.ID == "" {
			t.ID = strconv.Itoa(i + 1)
		}
		if t.Title == "" {
			return nil, fmt.Errorf("%w: todo %d has no title", ErrInvalidTodos, i+1)
		}
		if !validStatus(t.Status) {
			return nil, fmt.Errorf("%w: todo %d (%q) has status %q; the status must be one of pending, in_progress, done", ErrInvalidTodos, i+1, t.Title, t.Status)
		}
		if seen[t.ID] {
			return nil, fmt.Errorf("%w: todo id %q is used twice", ErrInvalidTodos, t.ID)
		}
		seen[t.ID] = true
		todos = append(todos, t)
	}
	return todos, nil
}

func validStatus(s string) bool {
	for _, v := range ValidTodoStatuses {
		if s == v {
			return true
		}
	}
	return false
}

// scalarString renders a JSON scalar as a string (models send ids as numbers).
func scalarString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	default:
		return fmt.Sprint(x)
	}
}
