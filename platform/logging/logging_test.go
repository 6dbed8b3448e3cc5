package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestTraceIDsInRecords(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger, err := New(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	tid, _ := trace.TraceIDFromHex("0102030405060708090a0b0c0d0e0f10")
	sid, _ := trace.SpanIDFromHex("0102030405060708")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))
	logger.With("k", "v").InfoContext(ctx, "hello")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	if rec["trace_id"] != tid.String() || rec["span_id"] != sid.String() || rec["k"] != "v" {
		t.Fatalf("record = %v", rec)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]string{{"loud", "json"}, {"info", "xml"}} {
		if _, err := New(&bytes.Buffer{}, c[0], c[1]); err == nil {
			t.Errorf("New(%q, %q) = nil error", c[0], c[1])
		}
	}
}
