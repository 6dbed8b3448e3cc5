package agui

import (
	"testing"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// BenchmarkTokenEvent is the work one streamed token costs from the loop
// to the AG-UI client's bytes, as sse.BenchmarkTokenEvent measures it for
// Wick's own SSE stream: the agent service builds the event and its gRPC
// message, gRPC encodes and decodes it, the adapter writes its
// TEXT_MESSAGE_CONTENT frame. The difference of the two is what AG-UI adds.
func BenchmarkTokenEvent(b *testing.B) {
	tr := newTranslator("thread-0123456789", "run-0123456789")
	buf, _ := tr.frames(nil, text("Hello ")) // opens the run and the message
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
		if buf, err = tr.frames(buf[:0], in.GetEvent()); err != nil || len(buf) == 0 {
			b.Fatal(err)
		}
	}
}
