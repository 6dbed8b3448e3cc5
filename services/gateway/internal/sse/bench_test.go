package sse

import (
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// BenchmarkTokenEvent is the work one streamed token costs from the loop
// to the SSE client's bytes: the agent service builds the event's data and
// its gRPC message, gRPC encodes and decodes it, the gateway writes its SSE
// frame. (The network, the run log and the HTTP write are not in it.)
func BenchmarkTokenEvent(b *testing.B) {
	m := &Marshaler{JSON: EventJSON{JSONPb: &runtime.JSONPb{MarshalOptions: protojson.MarshalOptions{UseProtoNames: true}}}}
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
		if _, err := m.frame(in.GetEvent()); err != nil {
			b.Fatal(err)
		}
	}
}
