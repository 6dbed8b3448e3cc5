package testenv

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/runevent"
)

// EventData is a dial option for tests that read a run event's data as
// JSON, as REST clients get it: every StreamEvent the connection receives
// has its data filled from its typed payload (runevent.FillData).
func EventData() grpc.DialOption {
	return grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return eventDataStream{s}, nil
	})
}

type eventDataStream struct{ grpc.ClientStream }

func (s eventDataStream) RecvMsg(m any) error {
	if err := s.ClientStream.RecvMsg(m); err != nil {
		return err
	}
	if ev, ok := m.(interface{ GetEvent() *agentv1.StreamEvent }); ok && ev.GetEvent() != nil {
		return runevent.FillData(ev.GetEvent())
	}
	return nil
}

// TokenEvent is one streamed token as a client of the agent service
// receives it: the event the service builds for a delta, encoded and
// decoded as gRPC carries it. The gateway's stream benchmarks and its
// protocol adapters' start from it, so that their figures compare.
func TokenEvent(tb testing.TB) *agentv1.StreamEvent {
	data := &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnChatModelStream{OnChatModelStream: &agentv1.DeltaData{Delta: "Hello "}}}
	out := &agentv1.StreamResponse{Event: &agentv1.StreamEvent{
		Event: "on_chat_model_stream", RunId: "run_0123456789", ThreadId: "th_0123456789", Id: "1764300000000-12", Payload: data,
	}}
	wire, err := proto.Marshal(out)
	if err != nil {
		tb.Fatal(err)
	}
	var in agentv1.StreamResponse
	if err := proto.Unmarshal(wire, &in); err != nil {
		tb.Fatal(err)
	}
	return in.GetEvent()
}
