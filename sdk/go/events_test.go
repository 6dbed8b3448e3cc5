package wick_test

import (
	"testing"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	wick "github.com/wick-agent/wick/sdk/go"
)

// TestTextAccessors checks that an answer's text and the agent's reasoning
// are told apart: each accessor reads only its own kind.
func TestTextAccessors(t *testing.T) {
	piece := &agentv1.DeltaData{Delta: "piece"}
	tests := []struct {
		kind           string
		data           *agentv1.RunEventData
		delta, thought string
	}{
		{"on_chat_model_stream", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnChatModelStream{OnChatModelStream: piece}}, "piece", ""},
		{"on_thought_stream", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnThoughtStream{OnThoughtStream: piece}}, "", "piece"},
		{"on_tool_start", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnToolStart{OnToolStart: &agentv1.ToolStartData{ToolCallId: "piece"}}}, "", ""},
	}
	for _, tt := range tests {
		ev := &wick.Event{Event: tt.kind, Payload: tt.data}
		if got := wick.Delta(ev); got != tt.delta {
			t.Errorf("Delta(%s) = %q, want %q", tt.kind, got, tt.delta)
		}
		if got := wick.Thought(ev); got != tt.thought {
			t.Errorf("Thought(%s) = %q, want %q", tt.kind, got, tt.thought)
		}
	}
}
