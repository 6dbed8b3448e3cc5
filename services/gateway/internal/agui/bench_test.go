package agui

import (
	"testing"

	"github.com/wick-agent/wick/platform/testenv"
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
		ev := testenv.TokenEvent(b)
		var err error
		if buf, err = tr.frames(buf[:0], ev); err != nil || len(buf) == 0 {
			b.Fatal(err)
		}
	}
}
