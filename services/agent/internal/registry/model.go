package registry

import (
	"fmt"
	"strings"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
)

// MaxModelChain bounds a fallback list of models.
const MaxModelChain = 8

// ModelSpecs turns a configured model (a string, an object or a list of
// them) into the LLM gateway's specs. A nil model takes def; with def empty
// too, the result is empty and the gateway picks its default.
func ModelSpecs(model any, def string) ([]*llmv1.ModelSpec, error) {
	switch m := model.(type) {
	case nil:
		if def == "" {
			return nil, nil
		}
		return []*llmv1.ModelSpec{{Spec: def}}, nil
	case string:
		if strings.TrimSpace(m) == "" {
			return ModelSpecs(nil, def)
		}
		return []*llmv1.ModelSpec{{Spec: m}}, nil
	case map[string]any:
		s, err := objectSpec(m)
		if err != nil {
			return nil, err
		}
		return []*llmv1.ModelSpec{s}, nil
	case []any:
		if len(m) == 0 {
			return ModelSpecs(nil, def)
		}
		if len(m) > MaxModelChain {
			return nil, fmt.Errorf("a model list has at most %d entries", MaxModelChain)
		}
		var out []*llmv1.ModelSpec
		for i, e := range m {
			if _, nested := e.([]any); nested {
				return nil, fmt.Errorf("model[%d]: lists do not nest", i)
			}
			s, err := ModelSpecs(e, "")
			if err != nil {
				return nil, fmt.Errorf("model[%d]: %w", i, err)
			}
			if len(s) == 0 {
				return nil, fmt.Errorf("model[%d] is empty", i)
			}
			out = append(out, s...)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("must be a string, an object or a list, not %T", model)
	}
}

func objectSpec(m map[string]any) (*llmv1.ModelSpec, error) {
	s := &llmv1.ModelSpec{}
	for k, v := range m {
		switch k {
		case "spec", "provider", "model", "base_url", "api_key_env":
			str, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%s must be a string", k)
			}
			switch k {
			case "spec":
				s.Spec = str
			case "provider":
				s.Provider = str
			case "model":
				s.Model = str
			case "base_url":
				s.BaseUrl = str
			case "api_key_env":
				s.ApiKeyEnv = str
			}
		case "max_tokens", "context_window":
			n, ok := number(v)
			if !ok || n < 0 || n > 1<<30 {
				return nil, fmt.Errorf("%s must be a non-negative integer", k)
			}
			if k == "max_tokens" {
				s.MaxTokens = int32(n)
			} else {
				s.ContextWindow = int32(n)
			}
		default:
			// api keys never travel in configs: the gateway reads them from
			// its environment (api_key_env), so a key here is refused.
			return nil, fmt.Errorf("unknown model field %q (secrets go in the LLM gateway's environment, named by api_key_env)", k)
		}
	}
	if s.Spec == "" && s.Model == "" {
		return nil, fmt.Errorf(`an object model needs "model" or "spec"`)
	}
	return s, nil
}

func number(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		if n != float64(int64(n)) {
			return 0, false
		}
		return int64(n), true
	}
	return 0, false
}
