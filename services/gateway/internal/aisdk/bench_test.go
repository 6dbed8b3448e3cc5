package aisdk

import (
	"testing"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// BenchmarkTokenEvent is the work one streamed token costs from the loop
// to the AI SDK client's bytes, as sse.BenchmarkTokenEvent measures it for
// Wick's own SSE stream: the event's gRPC message is encoded and decoded,
// then mapped onto its text-delta chunk and framed. The difference of the
// two is what the protocol adds per token.
func BenchmarkTokenEvent(b *testing.B) {
	enc := NewEncoder()
	enc.Begin("run_0123456789", "th_0123456789")
	var buf []byte
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
		chunks, _ := enc.Event(in.GetEvent())
		buf = buf[:0]
		for _, c := range chunks {
			if buf, err = AppendFrame(buf, c); err != nil {
				b.Fatal(err)
			}
		}
	}
}
