package langgraph

import (
	"io"
	"testing"

	"github.com/wick-agent/wick/platform/testenv"
)

// BenchmarkTokenEvent is the work one streamed token costs from the gRPC
// message the agent service sends to the adapter's messages-tuple frame,
// written as SSE, as the sse package's BenchmarkTokenEvent measures it for
// Wick's own stream: the difference of the two is what LangGraph adds.
func BenchmarkTokenEvent(b *testing.B) {
	tr := newTranslator("th_0123456789", "run_0123456789", "default", map[string]bool{modeMessagesTuple: true}, values{Messages: []message{}})
	enc := newEncoder(io.Discard)
	b.ReportAllocs()
	for b.Loop() {
		// One message per run keeps the state from growing across iterations.
		tr.state.Messages, tr.cur = tr.state.Messages[:0], -1
		e := testenv.TokenEvent(b)
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
