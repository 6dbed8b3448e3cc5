package llmgw

import (
	"errors"
	"fmt"
	"math"
	"time"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/llmpb"
	"github.com/wick-agent/wick/services/llmgw/internal/spec"
)

// specsFromProto validates the models a request names.
func specsFromProto(models []*llmv1.ModelSpec) ([]requestSpec, error) {
	if len(models) > MaxChain {
		return nil, fmt.Errorf("models: a fallback chain has at most %d models, got %d", MaxChain, len(models))
	}
	var out []requestSpec
	for i, m := range models {
		obj := m.GetProvider() != "" || m.GetModel() != "" || m.GetBaseUrl() != "" || m.GetApiKeyEnv() != ""
		if m.GetSpec() != "" && obj {
			return nil, fmt.Errorf("models[%d]: give either spec or the object fields (provider, model, base_url, api_key_env), not both", i)
		}
		if m.GetSpec() == "" && !obj {
			return nil, fmt.Errorf("models[%d]: empty; give spec or provider and model", i)
		}
		if m.GetMaxTokens() < 0 || m.GetContextWindow() < 0 {
			return nil, fmt.Errorf("models[%d]: max_tokens and context_window must not be negative", i)
		}
		out = append(out, requestSpec{str: m.GetSpec(), obj: spec.Spec{
			Provider: m.GetProvider(), Model: m.GetModel(), BaseURL: m.GetBaseUrl(), APIKeyEnv: m.GetApiKeyEnv(),
			MaxTokens: int(m.GetMaxTokens()), ContextWindow: int(m.GetContextWindow()),
		}})
	}
	return out, nil
}

// fromProto validates a request and turns it into the gateway's terms. The
// checks are the gateway's, here at its edge; the conversion is llm/llmpb's.
func fromProto(models []*llmv1.ModelSpec, msgs []*llmv1.Message, tools []*llmv1.ToolSchema, system string, maxTokens int32, temp *float64, timeout time.Duration) (call, error) {
	var c call
	specs, err := specsFromProto(models)
	if err != nil {
		return c, err
	}
	c.models = specs
	if len(msgs) == 0 {
		return c, errors.New("messages: at least one message is needed")
	}
	// Validate first, then convert each message once (llm/llmpb).
	for i, m := range msgs {
		switch m.GetRole() {
		case llm.RoleSystem, llm.RoleUser:
		case llm.RoleAssistant:
			for j, tc := range m.GetToolCalls() {
				if tc.GetId() == "" || tc.GetName() == "" {
					return c, fmt.Errorf("messages[%d].tool_calls[%d]: id and name are required", i, j)
				}
			}
		case llm.RoleTool:
			if m.GetToolCallId() == "" {
				return c, fmt.Errorf("messages[%d]: a tool message needs tool_call_id", i)
			}
		default:
			return c, fmt.Errorf("messages[%d]: unknown role %q (system, user, assistant or tool)", i, m.GetRole())
		}
	}
	for i, t := range tools {
		if t.GetName() == "" {
			return c, fmt.Errorf("tools[%d]: name is required", i)
		}
	}
	if maxTokens < 0 {
		return c, errors.New("max_tokens must not be negative")
	}
	if temp != nil && (math.IsNaN(*temp) || *temp < 0 || *temp > 2) {
		return c, errors.New("temperature must be between 0 and 2")
	}
	if timeout < 0 {
		return c, errors.New("timeout must not be negative")
	}
	c.req.Messages = llmpb.MessagesFromProto(msgs)
	for i := range c.req.Messages {
		// Only an assistant message calls tools; the gateway has always
		// ignored tool calls sent on any other message.
		if c.req.Messages[i].Role != llm.RoleAssistant {
			c.req.Messages[i].ToolCalls = nil
		}
	}
	c.req.Tools = llmpb.ToolSchemasFromProto(tools)
	c.req.SystemPrompt = system
	c.req.MaxTokens = int(maxTokens)
	c.req.Temperature = temp
	c.timeout = timeout
	return c, nil
}
