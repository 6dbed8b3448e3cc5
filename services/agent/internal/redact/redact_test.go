package redact

import (
	"strings"
	"testing"
)

func TestValue(t *testing.T) {
	t.Parallel()
	in := map[string]any{
		"api_key":       "k1",
		"api_key_env":   "OPENAI_API_KEY",
		"Authorization": "Bearer abc",
		"nested":        []any{map[string]any{"password": "p", "ok": "fine"}},
		"text":          "my key is sk-proj-ABCDEFGHIJKLMNOPQRSTUV and more",
		"input_tokens":  12.0,
		"empty_token":   "",
	}
	out := Value(in).(map[string]any)
	cases := map[string]any{
		"api_key": Mask, "api_key_env": "OPENAI_API_KEY", "Authorization": Mask, "input_tokens": 12.0, "empty_token": "",
	}
	for k, want := range cases {
		if out[k] != want {
			t.Errorf("%s = %v, want %v", k, out[k], want)
		}
	}
	n := out["nested"].([]any)[0].(map[string]any)
	if n["password"] != Mask || n["ok"] != "fine" {
		t.Errorf("nested = %v", n)
	}
	if s := out["text"].(string); strings.Contains(s, "ABCDEFGH") || !strings.Contains(s, "and more") {
		t.Errorf("text = %q", s)
	}
	if in["api_key"] != "k1" {
		t.Error("input was modified")
	}
}

func TestStringKeepsOrdinaryText(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"hello", "sk-short", "the token count is 5", "Bearer"} {
		if String(s) != s {
			t.Errorf("%q changed to %q", s, String(s))
		}
	}
	for _, s := range []string{"AKIAABCDEFGHIJKLMNOP", "ghp_abcdefghijklmnopqrstuvwxyz", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc", "-----BEGIN RSA PRIVATE KEY-----"} {
		if String(s) == s {
			t.Errorf("%q not masked", s)
		}
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	h := Headers(map[string]string{"X-Key": "secret"})
	if h["X-Key"] != Mask {
		t.Fatal(h)
	}
	if Headers(nil) != nil {
		t.Fatal("nil headers")
	}
}
