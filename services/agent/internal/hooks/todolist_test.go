package hooks_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/llmtest"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

func TestTodoListReplacesWholesale(t *testing.T) {
	t.Parallel()
	h := hooks.NewTodoListHook()
	state := &loop.AgentState{Todos: []loop.Todo{{ID: "old", Title: "kept until replaced", Status: "done"}}}
	if err := h.BeforeAgent(context.Background(), state); err != nil {
		t.Fatal(err)
	}
	if len(state.Todos) != 1 {
		t.Fatal("existing todos dropped by BeforeAgent")
	}
	write := findTool(t, state, "write_todos")
	out, err := write.Execute(context.Background(), map[string]any{"todos": []any{
		map[string]any{"id": "1", "title": "Parse config file", "status": "done"},
		map[string]any{"id": 2.0, "title": "Implement handler", "status": "in_progress"},
		map[string]any{"title": "Write tests", "status": "pending"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []loop.Todo{
		{ID: "1", Title: "Parse config file", Status: "done"},
		{ID: "2", Title: "Implement handler", Status: "in_progress"},
		{ID: "3", Title: "Write tests", Status: "pending"},
	}
	if len(state.Todos) != 3 {
		t.Fatalf("todos %+v", state.Todos)
	}
	for i := range want {
		if state.Todos[i] != want[i] {
			t.Fatalf("todo %d = %+v, want %+v", i, state.Todos[i], want[i])
		}
	}
	if !strings.HasPrefix(out, "Updated todo list") {
		t.Fatalf("output %q", out)
	}
	if _, err := write.Execute(context.Background(), map[string]any{"todos": []any{}}); err != nil || len(state.Todos) != 0 {
		t.Fatalf("empty list must replace: %v %v", err, state.Todos)
	}
	if strings.Join(h.Phases(), ",") != "before_agent" {
		t.Fatal("phases")
	}
}

func TestTodoValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"missing", nil, `"todos" is required`},
		{"not a list", "do things", "must be a list"},
		{"bad status", []any{map[string]any{"title": "x", "status": "finished"}}, `status "finished"; the status must be one of pending, in_progress, done`},
		{"no status", []any{map[string]any{"title": "x"}}, `status ""`},
		{"no title", []any{map[string]any{"status": "pending"}}, "todo 1 has no title"},
		{"duplicate id", []any{map[string]any{"id": "a", "title": "x", "status": "done"}, map[string]any{"id": "a", "title": "y", "status": "done"}}, `"a" is used twice`},
		{"too many", make([]any, 3), "at most 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := hooks.ParseTodos(tt.v, 2)
			if !errors.Is(err, hooks.ErrInvalidTodos) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

func TestTodoListInLoopEmitsAndSaves(t *testing.T) {
	t.Parallel()
	model := llmtest.New(
		llmtest.Call(llm.ToolCall{ID: "t1", Name: "write_todos", Args: map[string]any{"todos": []any{map[string]any{"id": "1", "title": "plan", "status": "in_progress"}}}}),
		llmtest.Call(llm.ToolCall{ID: "t2", Name: "write_todos", Args: map[string]any{"todos": []any{map[string]any{"id": "1", "title": "plan", "status": "bogus"}}}}),
		llmtest.Text("ok"),
	)
	r := loop.NewRunner(nil, model, []loop.Hook{hooks.NewTodoListHook()}, nil)
	var events []loop.StreamEvent
	var saved []int
	state := &loop.AgentState{}
	err := r.Run(context.Background(), "r", state, []llm.Message{loop.Human("go")},
		func(ev loop.StreamEvent) { events = append(events, ev) },
		func(_ context.Context, s *loop.AgentState) error { saved = append(saved, len(s.Todos)); return nil })
	if err != nil {
		t.Fatal(err)
	}
	var todoEvents int
	for _, ev := range events {
		if ev.Event() == "on_todos" {
			todoEvents++
			list := ev.DataMap()["todos"].([]any)
			if list[0].(map[string]any)["status"] != "in_progress" {
				t.Fatalf("event data %+v", ev.Data)
			}
		}
	}
	if todoEvents != 1 || len(state.Todos) != 1 || state.Todos[0].Status != "in_progress" {
		t.Fatalf("events %d, todos %+v", todoEvents, state.Todos)
	}
	if saved[0] != 1 {
		t.Fatalf("todos not in the save after the round: %v", saved)
	}
	if c := state.Messages[4].Content; !strings.Contains(c, "Error: invalid todos") {
		t.Fatalf("validation error not returned to the model: %q", c)
	}
}
