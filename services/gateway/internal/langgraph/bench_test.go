package langgraph

import (
	"io"
	"testing"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// BenchmarkTokenEvent is the work one streamed token costs the adapter
// past the gRPC message: its messages-tuple frame, written as SSE. Compare
// with the sse package's BenchmarkTokenEvent, which includes the gRPC
// encoding both share.
func BenchmarkTokenEvent(b *testing.B) {
	tr := newTranslator("th_0123456789", "run_0123456789", "default", map[string]bool{modeMessagesTuple: true}, values{Messages: []message{}})
	enc := newEncoder(io.Discard)
	e := &agentv1.StreamEvent{Event: "on_chat_model_stream", RunId: "run_0123456789", ThreadId: "th_0123456789", Id: "1764300000000-12",
		Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnChatModelStream{OnChatModelStream: &agentv1.DeltaData{Delta: "Hello "}}}}
	b.ReportAllocs()
	for b.Loop() {
		// One message per run keeps the state from growing across iterations.
		tr.state.Messages, tr.cur = tr.state.Messages[:0], -1
		fs, _, err := tr.event(e)
		if err != nil {
			b.Fatal(err)
		}
		for i, f := range fs {
			id := ""
			if i == len(fs)-1 {
				id = e.GetId()
			}
			if err := enc.frame(f, id); err != nil {
				b.Fatal(err)
			}
		}
	}
}
