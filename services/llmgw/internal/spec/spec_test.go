package spec_test

import (
	"errors"
	"testing"

	"github.com/wick-agent/wick/services/llmgw/internal/spec"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want spec.Spec
		err  bool
	}{
		{in: "ollama:llama3.1:8b", want: spec.Spec{Provider: "ollama", Model: "llama3.1:8b"}},
		{in: "gpt-4o", want: spec.Spec{Provider: "openai", Model: "gpt-4o"}},
		{in: "o3-mini", want: spec.Spec{Provider: "openai", Model: "o3-mini"}},
		{in: "o1", want: spec.Spec{Provider: "openai", Model: "o1"}},
		{in: "claude-sonnet-4-20250514", want: spec.Spec{Provider: "anthropic", Model: "claude-sonnet-4-20250514"}},
		{in: "anthropic:claude-3-opus-latest", want: spec.Spec{Provider: "anthropic", Model: "claude-3-opus-latest"}},
		{in: "script:demo", want: spec.Spec{Provider: "script", Model: "demo"}},
		{in: `script:[{"text":"a:b"}]`, want: spec.Spec{Provider: "script", Model: `[{"text":"a:b"}]`}},
		{in: "vllm:meta/llama:70b", want: spec.Spec{Provider: "vllm", Model: "meta/llama:70b"}},
		{in: "llama3", err: true},
		{in: "mystery:model", err: true},
		{in: "ollama:", err: true},
		{in: "", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := spec.Parse(tt.in)
			if tt.err {
				if !errors.Is(err, spec.ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   spec.Spec
		want spec.Spec
		err  bool
	}{
		{name: "ollama default url, no key", in: spec.Spec{Provider: "ollama", Model: "llama3.1:8b"}, want: spec.Spec{Provider: "ollama", Model: "llama3.1:8b", BaseURL: "http://localhost:11434/v1"}},
		{name: "openai default key", in: spec.Spec{Provider: "openai", Model: "gpt-4o"}, want: spec.Spec{Provider: "openai", Model: "gpt-4o", BaseURL: spec.OpenAIBaseURL, APIKeyEnv: "OPENAI_API_KEY"}},
		{name: "anthropic default key", in: spec.Spec{Provider: "Anthropic", Model: "claude-x"}, want: spec.Spec{Provider: "anthropic", Model: "claude-x", BaseURL: spec.AnthropicBaseURL, APIKeyEnv: "ANTHROPIC_API_KEY"}},
		{name: "custom url gets no default key", in: spec.Spec{Provider: "openai", Model: "m", BaseURL: "http://vllm:8000/v1"}, want: spec.Spec{Provider: "openai", Model: "m", BaseURL: "http://vllm:8000/v1"}},
		{name: "model only", in: spec.Spec{Model: "gpt-4o"}, want: spec.Spec{Provider: "openai", Model: "gpt-4o", BaseURL: spec.OpenAIBaseURL, APIKeyEnv: "OPENAI_API_KEY"}},
		{name: "compatible needs url", in: spec.Spec{Provider: "openai-compatible", Model: "m"}, err: true},
		{name: "bad scheme", in: spec.Spec{Provider: "openai", Model: "m", BaseURL: "file:///etc/passwd"}, err: true},
		{name: "credentials in url", in: spec.Spec{Provider: "openai", Model: "m", BaseURL: "http://u:p@h/v1"}, err: true},
		{name: "script with url", in: spec.Spec{Provider: "script", Model: "demo", BaseURL: "http://h"}, err: true},
		{name: "unknown provider", in: spec.Spec{Provider: "nope", Model: "m"}, err: true},
		{name: "no model", in: spec.Spec{Provider: "openai"}, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := spec.Normalize(tt.in)
			if tt.err {
				if err == nil {
					t.Fatalf("Normalize(%+v) = %+v, want an error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Normalize(%+v) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestPublicDefault: only the hosted vendors' defaults are public APIs; the
// local servers' defaults are loopback addresses.
func TestPublicDefault(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{spec.OpenAI: true, spec.Anthropic: true, spec.Ollama: false, spec.VLLM: false, spec.OpenAICompatible: false, spec.Script: false} {
		if got := spec.PublicDefault(p); got != want {
			t.Errorf("PublicDefault(%s) = %v, want %v", p, got, want)
		}
	}
}
