package hooks_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

func newTracing(t *testing.T) (*hooks.TracingHook, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return hooks.NewTracingHook(hooks.WithTracerProvider(tp), hooks.WithPreviewChars(500), hooks.WithMaxArgsChars(4096)), exp
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestTracingModelSpan(t *testing.T) {
	t.Parallel()
	h, exp := newTracing(t)
	long := strings.Repeat("c", 600)
	_, err := h.WrapModelCall(context.Background(), []llm.Message{loop.Human("a"), loop.Human("b")},
		func(context.Context, []llm.Message) (*llm.Result, error) {
			return &llm.Result{Content: long, ToolCalls: []llm.ToolCall{{ID: "1", Name: "ls"}, {ID: "2", Name: "grep"}}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "llm.call" {
		t.Fatalf("spans %v", spans)
	}
	a := attrs(spans[0])
	if a["message_count"].AsInt64() != 2 || a["content_length"].AsInt64() != 600 || a["tool_calls_count"].AsInt64() != 2 {
		t.Fatalf("attributes %v", a)
	}
	if len(a["content_preview"].AsString()) != 500 || strings.Join(a["tool_call_names"].AsStringSlice(), ",") != "ls,grep" {
		t.Fatalf("preview/names %v", a)
	}

	exp.Reset()
	_, err = h.WrapModelCall(context.Background(), nil, func(context.Context, []llm.Message) (*llm.Result, error) {
		return nil, errors.New("rate limited")
	})
	if err == nil {
		t.Fatal("error swallowed")
	}
	s := exp.GetSpans()[0]
	if s.Status.Code != codes.Error || len(s.Events) == 0 || s.Events[0].Name != "exception" {
		t.Fatalf("error not recorded: %+v", s.Status)
	}
}

func TestTracingToolSpan(t *testing.T) {
	t.Parallel()
	h, exp := newTracing(t)
	out := strings.Repeat("o", 700)
	call := llm.ToolCall{ID: "call_abc123", Name: "read_file", Args: map[string]any{"path": "/workspace/main.py"}}
	_, err := h.WrapToolCall(context.Background(), call, func(context.Context, llm.ToolCall) (*loop.ToolResult, error) {
		return &loop.ToolResult{Output: out}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := exp.GetSpans()[0]
	a := attrs(s)
	if s.Name != "tool.call" || a["tool_name"].AsString() != "read_file" || a["tool_call_id"].AsString() != "call_abc123" ||
		a["tool_args"].AsString() != `{"path":"/workspace/main.py"}` || a["output_length"].AsInt64() != 700 || len(a["output_preview"].AsString()) != 500 {
		t.Fatalf("span %s %v", s.Name, a)
	}

	exp.Reset()
	_, _ = h.WrapToolCall(context.Background(), call, func(context.Context, llm.ToolCall) (*loop.ToolResult, error) {
		return &loop.ToolResult{Error: "old_text not found in file"}, nil
	})
	s = exp.GetSpans()[0]
	if s.Status.Code != codes.Error || attrs(s)["tool_error"].AsString() != "old_text not found in file" {
		t.Fatalf("tool error not recorded %+v", s.Status)
	}
	if strings.Join(h.Phases(), ",") != "wrap_model_call,wrap_tool_call" || h.Name() != "tracing" {
		t.Fatal("name/phases")
	}
}

// By default no span carries what a user, a model or a tool wrote: the
// tracing backend is the operator's, not the user's.
func TestTracingRecordsNoContentByDefault(t *testing.T) {
	t.Parallel()
	const secret = "the user's private words"
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	h := hooks.NewTracingHook(hooks.WithTracerProvider(tp))
	tests := []struct {
		name string
		call func() error
	}{
		{"model call", func() error {
			_, err := h.WrapModelCall(context.Background(), []llm.Message{loop.Human(secret)},
				func(context.Context, []llm.Message) (*llm.Result, error) {
					return &llm.Result{Content: secret, ToolCalls: []llm.ToolCall{{ID: "1", Name: "ls"}}}, nil
				})
			return err
		}},
		{"tool call", func() error {
			call := llm.ToolCall{ID: "c1", Name: "write_file", Args: map[string]any{"content": secret}}
			_, err := h.WrapToolCall(context.Background(), call, func(context.Context, llm.ToolCall) (*loop.ToolResult, error) {
				return &loop.ToolResult{Output: secret}, nil
			})
			return err
		}},
		{"failed tool call", func() error {
			call := llm.ToolCall{ID: "c2", Name: "edit_file", Args: map[string]any{"old_text": secret}}
			_, err := h.WrapToolCall(context.Background(), call, func(context.Context, llm.ToolCall) (*loop.ToolResult, error) {
				return &loop.ToolResult{Error: "not found: " + secret}, nil
			})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp.Reset()
			if err := tt.call(); err != nil {
				t.Fatal(err)
			}
			for _, s := range exp.GetSpans() {
				if strings.Contains(s.Status.Description, secret) {
					t.Errorf("span %s status %q holds content", s.Name, s.Status.Description)
				}
				for _, kv := range s.Attributes {
					if strings.Contains(kv.Value.String(), secret) {
						t.Errorf("span %s attribute %s holds content: %q", s.Name, kv.Key, kv.Value.String())
					}
				}
			}
		})
	}
}
