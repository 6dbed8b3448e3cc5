package sse

import (
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/wick-agent/wick/platform/testenv"
)

// BenchmarkTokenEvent is the work one streamed token costs from the loop
// to the SSE client's bytes: the agent service builds the event's data and
// its gRPC message, gRPC encodes and decodes it, the gateway writes its SSE
// frame. (The network, the run log and the HTTP write are not in it.)
func BenchmarkTokenEvent(b *testing.B) {
	m := &Marshaler{JSON: EventJSON{JSONPb: &runtime.JSONPb{MarshalOptions: protojson.MarshalOptions{UseProtoNames: true}}}}
	b.ReportAllocs()
	for b.Loop() {
		ev := testenv.TokenEvent(b)
		if _, err := m.frame(ev); err != nil {
			b.Fatal(err)
		}
	}
}
