package aisdk

import (
	"testing"

	"github.com/wick-agent/wick/platform/testenv"
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
		ev := testenv.TokenEvent(b)
		chunks, _ := enc.Event(ev)
		buf = buf[:0]
		var err error
		for _, c := range chunks {
			if buf, err = AppendFrame(buf, c); err != nil {
				b.Fatal(err)
			}
		}
	}
}
