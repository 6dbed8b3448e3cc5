package hooks

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// Tracing constants.
const (
	// SpanLLMCall and SpanToolCall name the spans of a model call and a tool call.
	SpanLLMCall  = "llm.call"
	SpanToolCall = "tool.call"
	// DefaultPreviewChars is how much of a message's content and a tool's
	// output a span records: none. Tracing backends are read by operators
	// and kept for long; what users and models write stays out of them
	// unless the operator asks (WithPreviewChars).
	DefaultPreviewChars = 0
	// DefaultMaxArgsChars caps the tool_args attribute: none recorded by
	// default, for the same reason (WithMaxArgsChars). A write_file call can
	// carry megabytes, too much for a span attribute anyway.
	DefaultMaxArgsChars = 0
	tracerName          = "github.com/wick-agent/wick/services/agent/internal/hooks"
)

// TracingHook records OpenTelemetry spans around model and tool calls.
type TracingHook struct {
	loop.BaseHook
	tracer       trace.Tracer
	previewChars int
	maxArgsChars int
}

// TracingOption configures a TracingHook.
type TracingOption func(*TracingHook)

// WithTracerProvider sets the provider; the default is otel's global one.
func WithTracerProvider(tp trace.TracerProvider) TracingOption {
	return func(h *TracingHook) { h.tracer = tp.Tracer(tracerName) }
}

// WithPreviewChars records content and output previews of n characters,
// and a failed tool's error text (default none).
func WithPreviewChars(n int) TracingOption { return func(h *TracingHook) { h.previewChars = n } }

// WithMaxArgsChars records a tool's arguments, capped at n characters, as
// tool_args (default none).
func WithMaxArgsChars(n int) TracingOption { return func(h *TracingHook) { h.maxArgsChars = n } }

// NewTracingHook returns the tracing hook.
func NewTracingHook(opts ...TracingOption) *TracingHook {
	h := &TracingHook{previewChars: DefaultPreviewChars, maxArgsChars: DefaultMaxArgsChars}
	for _, o := range opts {
		o(h)
	}
	if h.tracer == nil {
		h.tracer = otel.GetTracerProvider().Tracer(tracerName)
	}
	return h
}

// Name implements loop.Hook.
func (h *TracingHook) Name() string { return NameTracing }

// Phases implements loop.Hook.
func (h *TracingHook) Phases() []string { return phasesOf(NameTracing) }

// WrapModelCall records an "llm.call" span.
func (h *TracingHook) WrapModelCall(ctx context.Context, msgs []llm.Message, next loop.ModelCallWrapFunc) (*llm.Result, error) {
	ctx, span := h.tracer.Start(ctx, SpanLLMCall)
	defer span.End()
	if !span.IsRecording() {
		// Building previews costs allocations nobody would see.
		return next(ctx, msgs)
	}
	span.SetAttributes(attribute.Int("message_count", len(msgs)))
	resp, err := next(ctx, msgs)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return resp, err
	}
	if resp != nil {
		names := make([]string, len(resp.ToolCalls))
		for i, c := range resp.ToolCalls {
			names[i] = c.Name
		}
		span.SetAttributes(
			attribute.Int("content_length", len(resp.Content)),
			attribute.Int("tool_calls_count", len(resp.ToolCalls)),
			attribute.StringSlice("tool_call_names", names),
			attribute.Int64("input_tokens", resp.Usage.InputTokens),
			attribute.Int64("output_tokens", resp.Usage.OutputTokens),
		)
		if h.previewChars > 0 {
			span.SetAttributes(attribute.String("content_preview", prefix(resp.Content, h.previewChars)))
		}
	}
	return resp, nil
}

// WrapToolCall records a "tool.call" span.
func (h *TracingHook) WrapToolCall(ctx context.Context, call llm.ToolCall, next loop.ToolCallFunc) (*loop.ToolResult, error) {
	ctx, span := h.tracer.Start(ctx, SpanToolCall)
	defer span.End()
	if !span.IsRecording() {
		return next(ctx, call)
	}
	span.SetAttributes(
		attribute.String("tool_name", call.Name),
		attribute.String("tool_call_id", call.ID),
	)
	if h.maxArgsChars > 0 {
		args := call.RawArgs
		if args == "" {
			args = loop.ArgsJSON(call.Args)
		}
		span.SetAttributes(attribute.String("tool_args", prefix(args, h.maxArgsChars)))
	}
	res, err := next(ctx, call)
	if res != nil {
		span.SetAttributes(attribute.Int("output_length", len(res.Output)))
		if h.previewChars > 0 {
			span.SetAttributes(attribute.String("output_preview", prefix(res.Output, h.previewChars)))
		}
		if res.Error != "" {
			// A tool's error quotes what it was given (a path, the text
			// an edit did not find): content, like its output.
			msg := "tool error"
			if h.previewChars > 0 {
				msg = res.Error
				span.SetAttributes(attribute.String("tool_error", res.Error))
			}
			span.SetStatus(codes.Error, msg)
		}
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return res, err
}

// prefix returns at most n characters (runes) of s.
func prefix(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
