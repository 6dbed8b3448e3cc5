package upstream_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{name: "none", h: http.Header{}, want: 0},
		{name: "seconds", h: http.Header{"Retry-After": {"7"}}, want: 7 * time.Second},
		{name: "fractional seconds", h: http.Header{"Retry-After": {"0.5"}}, want: 500 * time.Millisecond},
		{name: "ms wins", h: http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"7"}}, want: 250 * time.Millisecond},
		{name: "http date", h: http.Header{"Retry-After": {now.Add(3 * time.Second).Format(http.TimeFormat)}}, want: 3 * time.Second},
		{name: "garbage", h: http.Header{"Retry-After": {"soon"}}, want: 0},
		{name: "negative", h: http.Header{"Retry-After": {"-3"}}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := upstream.RetryAfter(tt.h, now); got != tt.want {
				t.Fatalf("RetryAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw     string
		wantErr string
	}{
		{raw: "", wantErr: ""},
		{raw: "  ", wantErr: ""},
		{raw: `{"a":1}`, wantErr: ""},
		{raw: `{"a":`, wantErr: "not valid JSON"},
		{raw: `[1,2]`, wantErr: "not a JSON object"},
		{raw: `{"a":1}{"b":2}`, wantErr: "after the JSON object"},
		{raw: strings.Repeat("x", 1000), wantErr: "1000 bytes"},
	}
	for _, tt := range tests {
		m, msg := upstream.ParseArguments(tt.raw)
		if tt.wantErr == "" && (msg != "" || m == nil) {
			t.Errorf("ParseArguments(%q) = %v, %q", tt.raw, m, msg)
		}
		if tt.wantErr != "" && !strings.Contains(msg, tt.wantErr) {
			t.Errorf("ParseArguments(%q) error %q, want %q", tt.raw, msg, tt.wantErr)
		}
	}
}

func TestAccumulatorLimit(t *testing.T) {
	t.Parallel()
	a := upstream.NewAccumulator(10)
	if err := a.Text("12345"); err != nil {
		t.Fatal(err)
	}
	err := a.Tool(llm.ToolCallDelta{ArgumentsDelta: "123456"})
	if e, ok := err.(*upstream.Error); !ok || e.Kind != upstream.KindTooLarge {
		t.Fatalf("err = %v, want too large", err)
	}
}

func TestKindForStatus(t *testing.T) {
	t.Parallel()
	retry := map[int]bool{408: true, 409: true, 429: true, 500: true, 502: true, 503: true, 504: true, 529: true,
		400: false, 401: false, 403: false, 404: false, 422: false}
	for status, want := range retry {
		e := &upstream.Error{Kind: upstream.KindForStatus(status)}
		if e.Retryable() != want {
			t.Errorf("status %d retryable = %v, want %v", status, e.Retryable(), want)
		}
	}
}

func TestAccumulatorFillsMissingIDs(t *testing.T) {
	t.Parallel()
	a := upstream.NewAccumulator(0)
	_ = a.Tool(llm.ToolCallDelta{Index: 3, Name: "ls", ArgumentsDelta: `{"path":"/"}`})
	_ = a.Tool(llm.ToolCallDelta{Index: 1, ID: "x", Name: "grep"})
	calls := a.ToolCalls()
	if len(calls) != 2 || calls[0].ID != "x" || calls[1].ID != "call_3" || calls[1].Args["path"] != "/" {
		t.Fatalf("calls = %+v", calls)
	}
}
