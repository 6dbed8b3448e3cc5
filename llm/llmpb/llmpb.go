// Package llmpb converts between the llm types and the LLM gateway's
// protobuf messages (wick.llm.v1). It is the one place that conversion is
// written: the agent's gateway client uses it to send a request and read the
// reply, the gateway's gRPC edge uses it to read the request and send the
// reply. Validation is not done here; the gateway does it at its edge.
package llmpb

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/llm"
)

// MessagesToProto converts a conversation, each message once. It fails only
// when a tool call's arguments cannot be represented as a protobuf Struct.
func MessagesToProto(msgs []llm.Message) ([]*llmv1.Message, error) {
	out := make([]*llmv1.Message, len(msgs))
	for i, m := range msgs {
		pm, err := MessageToProto(m)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out[i] = pm
	}
	return out, nil
}

// MessageToProto converts one message.
func MessageToProto(m llm.Message) (*llmv1.Message, error) {
	pm := &llmv1.Message{Role: m.Role, Content: m.Content, ToolCallId: m.ToolCallID, Name: m.Name}
	if len(m.ToolCalls) > 0 {
		pm.ToolCalls = make([]*llmv1.ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			tc, err := ToolCallToProto(c)
			if err != nil {
				return nil, fmt.Errorf("tool call %s: %w", c.ID, err)
			}
			pm.ToolCalls[i] = tc
		}
	}
	return pm, nil
}

// MessagesFromProto converts a conversation, each message once.
func MessagesFromProto(msgs []*llmv1.Message) []llm.Message {
	out := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		out[i] = MessageFromProto(m)
	}
	return out
}

// MessageFromProto converts one message.
func MessageFromProto(m *llmv1.Message) llm.Message {
	return llm.Message{
		Role: m.GetRole(), Content: m.GetContent(), ToolCalls: ToolCallsFromProto(m.GetToolCalls()),
		ToolCallID: m.GetToolCallId(), Name: m.GetName(),
	}
}

// ToolCallToProto converts a tool call. A call whose arguments did not parse
// (ArgsErr) travels with arguments_error and no arguments; otherwise it fails
// when the arguments cannot be represented as a Struct.
func ToolCallToProto(c llm.ToolCall) (*llmv1.ToolCall, error) {
	tc := &llmv1.ToolCall{Id: c.ID, Name: c.Name, ArgumentsError: c.ArgsErr}
	if c.ArgsErr != "" {
		return tc, nil
	}
	if c.Args == nil {
		// A call without arguments has an empty arguments object.
		tc.Arguments = &structpb.Struct{}
		return tc, nil
	}
	args, err := Struct(c.Args)
	if err != nil {
		return nil, err
	}
	tc.Arguments = args
	return tc, nil
}

// ToolCallsFromProto converts tool calls; a call's Args is never nil (an
// absent arguments object is an empty one).
func ToolCallsFromProto(in []*llmv1.ToolCall) []llm.ToolCall {
	if len(in) == 0 {
		return nil
	}
	out := make([]llm.ToolCall, len(in))
	for i, tc := range in {
		out[i] = llm.ToolCall{ID: tc.GetId(), Name: tc.GetName(), Args: tc.GetArguments().AsMap(), ArgsErr: tc.GetArgumentsError()}
	}
	return out
}

// ToolSchemasToProto converts tool schemas; it fails when a schema's
// parameters cannot be represented as a Struct.
func ToolSchemasToProto(tools []llm.ToolSchema) ([]*llmv1.ToolSchema, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	out := make([]*llmv1.ToolSchema, len(tools))
	for i, t := range tools {
		params, err := Struct(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
		}
		out[i] = &llmv1.ToolSchema{Name: t.Name, Description: t.Description, Parameters: params}
	}
	return out, nil
}

// ToolSchemasFromProto converts tool schemas.
func ToolSchemasFromProto(tools []*llmv1.ToolSchema) []llm.ToolSchema {
	if len(tools) == 0 {
		return nil
	}
	out := make([]llm.ToolSchema, len(tools))
	for i, t := range tools {
		out[i] = llm.ToolSchema{Name: t.GetName(), Description: t.GetDescription(), Parameters: t.GetParameters().AsMap()}
	}
	return out
}

// UsageToProto converts token counts.
func UsageToProto(u llm.Usage) *llmv1.Usage {
	return &llmv1.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CostMicroUsd: u.CostMicroUSD}
}

// UsageFromProto converts token counts; absent usage is zero.
func UsageFromProto(u *llmv1.Usage) llm.Usage {
	return llm.Usage{InputTokens: u.GetInputTokens(), OutputTokens: u.GetOutputTokens(), CostMicroUSD: u.GetCostMicroUsd()}
}

// Struct converts a JSON-shaped map to a Struct; nil stays nil. Maps,
// lists (also []string, as Go code writes a schema's "required") and what
// structpb.NewValue takes convert directly; any other value (a struct, a
// string that is not UTF-8) takes a JSON round trip. Schemas go out with
// every model call, and the round trip of a whole map cost about 27 µs a
// schema.
func Struct(m map[string]any) (*structpb.Struct, error) {
	if m == nil {
		return nil, nil
	}
	fields := make(map[string]*structpb.Value, len(m))
	for k, v := range m {
		pv, err := toValue(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		fields[k] = pv
	}
	return &structpb.Struct{Fields: fields}, nil
}

// toValue converts one value of a JSON-shaped map.
func toValue(v any) (*structpb.Value, error) {
	switch v := v.(type) {
	case map[string]any:
		s, err := Struct(v)
		if err != nil {
			return nil, err
		}
		if s == nil {
			return structpb.NewNullValue(), nil
		}
		return structpb.NewStructValue(s), nil
	case []any:
		return listValue(v)
	case []string:
		return listValue(v)
	}
	if pv, err := structpb.NewValue(v); err == nil {
		return pv, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	pv := &structpb.Value{}
	if err := protojson.Unmarshal(b, pv); err != nil {
		return nil, err
	}
	return pv, nil
}

// listValue converts a list of JSON-shaped values; nil is null.
func listValue[T any](xs []T) (*structpb.Value, error) {
	if xs == nil {
		return structpb.NewNullValue(), nil
	}
	vals := make([]*structpb.Value, len(xs))
	for i, x := range xs {
		pv, err := toValue(any(x))
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		vals[i] = pv
	}
	return structpb.NewListValue(&structpb.ListValue{Values: vals}), nil
}
