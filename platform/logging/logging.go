// Package logging builds the suite's slog loggers: JSON or text, with the
// trace and span ids of the record's context in every record.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// New returns a logger writing to w at level ("debug", "info", "warn",
// "error") in format ("json" or "text").
func New(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	switch strings.ToLower(format) {
	case "json", "":
		h = slog.NewJSONHandler(w, opts)
	case "text":
		h = slog.NewTextHandler(w, opts)
	default:
		return nil, fmt.Errorf("log format %q: want json or text", format)
	}
	return slog.New(TraceHandler{h}), nil
}

// TraceHandler adds trace_id and span_id to records whose context carries a span.
type TraceHandler struct{ slog.Handler }

// Handle adds the span's ids and passes the record on.
func (h TraceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs keeps the trace handler around the derived handler.
func (h TraceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return TraceHandler{h.Handler.WithAttrs(as)}
}

// WithGroup keeps the trace handler around the derived handler.
func (h TraceHandler) WithGroup(name string) slog.Handler {
	return TraceHandler{h.Handler.WithGroup(name)}
}
