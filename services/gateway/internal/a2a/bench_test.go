package a2a_test

import (
	"testing"

	"github.com/wick-agent/wick/platform/testenv"
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
		ev := testenv.TokenEvent(b)
		if _, err := a2a.EncodeEvent(tr, ev); err != nil {
			b.Fatal(err)
		}
	}
}
