package wick_test

import (
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	wick "github.com/wick-agent/wick/sdk/go"
)

// TestTextAccessors checks that an answer's text and the agent's reasoning
// are told apart: each accessor reads only its own kind.
func TestTextAccessors(t *testing.T) {
	data := structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"delta": structpb.NewStringValue("piece")}})
	tests := []struct {
		kind           string
		delta, thought string
	}{
		{wick.EventDelta, "piece", ""},
		{wick.EventThought, "", "piece"},
		{wick.EventToolStart, "", ""},
	}
	for _, tt := range tests {
		ev := &wick.Event{Event: tt.kind, Data: data}
		if got := wick.Delta(ev); got != tt.delta {
			t.Errorf("Delta(%s) = %q, want %q", tt.kind, got, tt.delta)
		}
		if got := wick.Thought(ev); got != tt.thought {
			t.Errorf("Thought(%s) = %q, want %q", tt.kind, got, tt.thought)
		}
	}
}
