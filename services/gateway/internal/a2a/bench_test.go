package a2a_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/gateway/internal/a2a"
)

// BenchmarkTokenEvent is the work one streamed token costs from the loop
// to the A2A client's bytes, measured as the SSE package's baseline of the
// same name is: the event's gRPC message encoded and decoded, then mapped to
// an artifact-update and written as a JSON-RPC response in an SSE frame.
// The difference between the two is what A2A adds per token.
func BenchmarkTokenEvent(b *testing.B) {
	tr := a2a.NewTracker("run_0123456789", "th_0123456789")
	b.ReportAllocs()
	for b.Loop() {
		data := &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnChatModelStream{OnChatModelStream: &agentv1.DeltaData{Delta: "Hello "}}}
		out := &agentv1.StreamResponse{Event: &agentv1.StreamEvent{
			Event: "on_chat_model_stream", RunId: "run_0123456789", ThreadId: "th_0123456789", Id: "1764300000000-12", Payload: data,
		}}
		wire, err := proto.Marshal(out)
		if err != nil {
			b.Fatal(err)
		}
		var in agentv1.StreamResponse
		if err := proto.Unmarshal(wire, &in); err != nil {
			b.Fatal(err)
		}
		if _, err := a2a.EncodeEvent(tr, in.GetEvent()); err != nil {
			b.Fatal(err)
		}
	}
}
