package mcpserver

import (
	"strings"
	"testing"
)

func TestTail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "…bcd"},
		{"héllo wörld", 5, "…wörld"},
		{"日本語テキスト", 2, "…スト"},
	} {
		if got := tail(tc.s, tc.n); got != tc.want {
			t.Errorf("tail(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestToolName(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]string{
		"default":                "default",
		"my-agent_2":             "my-agent_2",
		"has space":              "",
		"":                       "",
		strings.Repeat("a", 129): "",
	} {
		if got := toolName(id); got != want {
			t.Errorf("toolName(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestDecodeInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw     string
		want    input
		wantErr string
	}{
		{`{"message":"hi"}`, input{Message: "hi"}, ""},
		{`{"message":"hi","thread_id":"th_1"}`, input{Message: "hi", ThreadID: "th_1"}, ""},
		{``, input{}, `missing argument "message"`},
		{`{}`, input{}, `missing argument "message"`},
		{`{"message":"  "}`, input{}, `missing argument "message"`},
		{`{"message":"hi","extra":1}`, input{}, "bad arguments"},
		{`{"message":3}`, input{}, "bad arguments"},
	} {
		got, err := decodeInput([]byte(tc.raw))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("decodeInput(%s) error = %v, want %q", tc.raw, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("decodeInput(%s) = %+v, %v; want %+v", tc.raw, got, err, tc.want)
		}
	}
}
