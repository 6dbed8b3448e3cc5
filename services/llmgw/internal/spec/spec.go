// Package spec parses model specs — "ollama:llama3.1:8b",
// "gpt-4o", "claude-sonnet-4-20250514", "script:demo", or the object form
// {provider, model, base_url, api_key_env} — and fills in each provider's
// defaults.
package spec

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/wick-agent/wick/llm/hashembed"
)

// Providers.
const (
	OpenAI           = "openai"
	Anthropic        = "anthropic"
	Ollama           = "ollama"
	VLLM             = "vllm"
	OpenAICompatible = "openai-compatible"
	Script           = "script"
	// Hash is the offline embedder (llm/hashembed): no network, no key.
	Hash = "hash"
)

// Default base URLs and key variables of the providers.
const (
	OpenAIBaseURL    = "https://api.openai.com/v1"
	AnthropicBaseURL = "https://api.anthropic.com"
	OllamaBaseURL    = "http://localhost:11434/v1"
	VLLMBaseURL      = "http://localhost:8000/v1"
	OpenAIKeyEnv     = "OPENAI_API_KEY"
	AnthropicKeyEnv  = "ANTHROPIC_API_KEY"
)

// ErrInvalid marks a spec that cannot be used as written.
var ErrInvalid = errors.New("invalid model spec")

// Spec is a model spec with the provider's defaults filled in.
type Spec struct {
	Provider string `json:"provider,omitempty" yaml:"provider"`
	Model    string `json:"model,omitempty" yaml:"model"`
	// BaseURL is the API base URL; empty means the provider's default.
	BaseURL string `json:"base_url,omitempty" yaml:"base_url"`
	// APIKeyEnv names the variable holding the key; empty means the
	// provider's default variable (OpenAI, Anthropic) or no key.
	APIKeyEnv     string `json:"api_key_env,omitempty" yaml:"api_key_env"`
	MaxTokens     int    `json:"max_tokens,omitempty" yaml:"max_tokens"`
	ContextWindow int    `json:"context_window,omitempty" yaml:"context_window"`
}

// Known reports whether p is a provider the gateway has.
func Known(p string) bool {
	switch p {
	case OpenAI, Anthropic, Ollama, VLLM, OpenAICompatible, Script, Hash:
		return true
	}
	return false
}

var oSeries = regexp.MustCompile(`^o[0-9]`)

// Parse parses the string form. "provider:model" splits at the first colon
// only, so "ollama:llama3.1:8b" is model "llama3.1:8b" on Ollama. A bare name
// picks its provider by prefix: gpt-…, chatgpt-… and o1/o3/o4… are OpenAI,
// claude-… is Anthropic.
func Parse(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Spec{}, fmt.Errorf("%w: empty", ErrInvalid)
	}
	if p, m, ok := strings.Cut(s, ":"); ok && Known(p) {
		if m == "" {
			return Spec{}, fmt.Errorf("%w: %q names no model after %q", ErrInvalid, s, p+":")
		}
		return Spec{Provider: p, Model: m}, nil
	}
	switch {
	case strings.HasPrefix(s, "gpt-"), strings.HasPrefix(s, "chatgpt-"), oSeries.MatchString(s):
		return Spec{Provider: OpenAI, Model: s}, nil
	case strings.HasPrefix(s, "claude-"):
		return Spec{Provider: Anthropic, Model: s}, nil
	case strings.HasPrefix(s, hashembed.ModelPrefix):
		return Spec{Provider: Hash, Model: s}, nil
	}
	return Spec{}, fmt.Errorf("%w: cannot tell the provider of %q; write provider:model (providers: openai, anthropic, ollama, vllm, openai-compatible, script, hash) or name a configured model", ErrInvalid, s)
}

// DefaultBaseURL is the provider's API base URL when the spec gives none.
func DefaultBaseURL(provider string) string {
	switch provider {
	case OpenAI:
		return OpenAIBaseURL
	case Anthropic:
		return AnthropicBaseURL
	case Ollama:
		return OllamaBaseURL
	case VLLM:
		return VLLMBaseURL
	}
	return ""
}

// PublicDefault reports whether the provider's default base URL is its
// vendor's public API. Ollama's and vLLM's defaults are instead the address a
// local server conventionally listens on, which only the operator may decide
// to reach.
func PublicDefault(provider string) bool {
	return provider == OpenAI || provider == Anthropic
}

// DefaultKeyEnv is the provider's key variable when the spec names none.
func DefaultKeyEnv(provider string) string {
	switch provider {
	case OpenAI:
		return OpenAIKeyEnv
	case Anthropic:
		return AnthropicKeyEnv
	}
	return ""
}

// Normalize checks s and fills in the provider's defaults: base URL, key
// variable (only with the provider's own base URL: a key is never sent to
// another host unless the spec names its variable).
func Normalize(s Spec) (Spec, error) {
	s.Provider = strings.ToLower(strings.TrimSpace(s.Provider))
	if s.Provider == "" {
		p, err := Parse(s.Model)
		if err != nil {
			return s, err
		}
		s.Provider, s.Model = p.Provider, p.Model
	}
	if !Known(s.Provider) {
		return s, fmt.Errorf("%w: unknown provider %q (known: openai, anthropic, ollama, vllm, openai-compatible, script, hash)", ErrInvalid, s.Provider)
	}
	if s.Model == "" {
		return s, fmt.Errorf("%w: no model given for provider %q", ErrInvalid, s.Provider)
	}
	if s.MaxTokens < 0 || s.ContextWindow < 0 {
		return s, fmt.Errorf("%w: max_tokens and context_window must not be negative", ErrInvalid)
	}
	if s.Provider == Script || s.Provider == Hash {
		if s.BaseURL != "" || s.APIKeyEnv != "" {
			return s, fmt.Errorf("%w: the %s provider takes no base_url or api_key_env", ErrInvalid, s.Provider)
		}
		if s.Provider == Hash {
			if _, err := hashembed.ParseModel(s.Model); err != nil {
				return s, fmt.Errorf("%w: %v", ErrInvalid, err)
			}
		}
		return s, nil
	}
	customURL := s.BaseURL != "" && strings.TrimRight(s.BaseURL, "/") != DefaultBaseURL(s.Provider)
	if s.BaseURL == "" {
		s.BaseURL = DefaultBaseURL(s.Provider)
	}
	if s.BaseURL == "" {
		return s, fmt.Errorf("%w: provider %q needs a base_url", ErrInvalid, s.Provider)
	}
	u, err := url.Parse(s.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return s, fmt.Errorf("%w: base_url %q is not an http(s) URL without credentials", ErrInvalid, s.BaseURL)
	}
	if s.APIKeyEnv == "" && !customURL {
		s.APIKeyEnv = DefaultKeyEnv(s.Provider)
	}
	return s, nil
}

// String is the spec's display form: "provider:model".
func (s Spec) String() string { return s.Provider + ":" + s.Model }
