package loop_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// orderHook records when its rings are entered and left.
type orderHook struct {
	loop.BaseHook
	name string
	mu   *sync.Mutex
	log  *[]string
}

func (h orderHook) Name() string { return h.name }
func (h orderHook) Phases() []string {
	return []string{loop.PhaseWrapModelCall, loop.PhaseWrapToolCall}
}

func (h orderHook) record(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.log = append(*h.log, s)
}

func (h orderHook) WrapModelCall(ctx context.Context, msgs []llm.Message, next loop.ModelCallWrapFunc) (*llm.Result, error) {
	h.record(h.name + ">")
	defer h.record("<" + h.name)
	return next(ctx, msgs)
}

func (h orderHook) WrapToolCall(ctx context.Context, call llm.ToolCall, next loop.ToolCallFunc) (*loop.ToolResult, error) {
	h.record(h.name + ">")
	defer h.record("<" + h.name)
	return next(ctx, call)
}

func TestOnionOrder(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var log []string
	hooks := []loop.Hook{
		orderHook{name: "first", mu: &mu, log: &log},
		orderHook{name: "second", mu: &mu, log: &log},
		orderHook{name: "third", mu: &mu, log: &log},
	}
	want := []string{"first>", "second>", "third>", "center", "<third", "<second", "<first"}

	model := loop.ChainModelCall(hooks, func(context.Context, []llm.Message) (*llm.Result, error) {
		log = append(log, "center")
		return &llm.Result{}, nil
	})
	if _, err := model(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(log, want) {
		t.Fatalf("model onion = %v, want %v", log, want)
	}

	log = nil
	tool := loop.ChainToolCall(hooks, func(context.Context, llm.ToolCall) (*loop.ToolResult, error) {
		log = append(log, "center")
		return &loop.ToolResult{}, nil
	})
	if _, err := tool(context.Background(), llm.ToolCall{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(log, want) {
		t.Fatalf("tool onion = %v, want %v", log, want)
	}
}

func TestBaseHookPassesThrough(t *testing.T) {
	t.Parallel()
	var b loop.BaseHook
	ctx := context.Background()
	if err := b.BeforeAgent(ctx, &loop.AgentState{}); err != nil {
		t.Fatal(err)
	}
	in := []llm.Message{loop.Human("x")}
	out, err := b.ModifyRequest(ctx, in)
	if err != nil || len(out) != 1 {
		t.Fatalf("ModifyRequest: %v %v", out, err)
	}
	resp, err := b.WrapModelCall(ctx, in, func(context.Context, []llm.Message) (*llm.Result, error) {
		return &llm.Result{Content: "inner"}, nil
	})
	if err != nil || resp.Content != "inner" {
		t.Fatalf("WrapModelCall: %v %v", resp, err)
	}
	res, err := b.WrapToolCall(ctx, llm.ToolCall{ID: "c"}, func(_ context.Context, c llm.ToolCall) (*loop.ToolResult, error) {
		return &loop.ToolResult{ToolCallID: c.ID}, nil
	})
	if err != nil || res.ToolCallID != "c" {
		t.Fatalf("WrapToolCall: %v %v", res, err)
	}
}

func TestToolRegistry(t *testing.T) {
	t.Parallel()
	state := &loop.AgentState{}
	if state.Tools() != nil {
		t.Fatal("fresh state has tools")
	}
	mk := func(name, out string) loop.Tool {
		return &loop.FuncTool{ToolName: name, Fn: func(context.Context, map[string]any) (string, error) { return out, nil }}
	}
	loop.RegisterToolOnState(state, mk("zeta", "1"))
	loop.RegisterToolOnState(state, mk("alpha", "2"))
	loop.RegisterToolOnState(state, mk("zeta", "3")) // replaces
	tools := state.Tools()
	if len(tools) != 2 || tools[0].Name() != "alpha" || tools[1].Name() != "zeta" {
		t.Fatalf("Tools() = %v", tools)
	}
	if out, _ := tools[1].Execute(context.Background(), nil); out != "3" {
		t.Fatalf("replaced tool output %q", out)
	}
	if p := tools[0].Parameters(); p["type"] != "object" {
		t.Fatalf("default schema %v", p)
	}
	state.ResetTools()
	if len(state.Tools()) != 0 {
		t.Fatal("ResetTools kept tools")
	}
}
