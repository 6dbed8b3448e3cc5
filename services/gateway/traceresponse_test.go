package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestTraceResponse(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	tests := []struct {
		name string
		sc   trace.SpanContext
		want string
	}{
		{"sampled span", trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}),
			"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{"unsampled span", trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}),
			"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"},
		{"no span", trace.SpanContext{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := traceResponse(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
			r := httptest.NewRequest(http.MethodGet, "/health", nil)
			r = r.WithContext(trace.ContextWithSpanContext(r.Context(), tc.sc))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if got := w.Header().Get(TraceResponseHeader); got != tc.want {
				t.Fatalf("%s = %q, want %q", TraceResponseHeader, got, tc.want)
			}
		})
	}
}
