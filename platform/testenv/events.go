package testenv

import (
	"context"

	"google.golang.org/grpc"

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
