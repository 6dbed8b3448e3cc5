package server

import (
	"context"

	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/fullstorydev/grpchan/inprocgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/proto"
)

// InProcess returns a channel that serves the services registered on it to
// callers in this process, through this server's interceptors (recovery,
// logging, identity) and OpenTelemetry on both ends, but without HTTP/2,
// sockets or protobuf encoding: a message is handed over on a Go channel
// (see handOver). The one-process suite (wickserver/suite) calls its
// services over it, which saves, per streamed event, a marshal, an
// unmarshal and the HTTP/2 framing of each hop (docs/performance.md).
// Register each service on it as on GRPC(); dial.InProcess gives a client.
func (s *Server) InProcess() *inprocgrpc.Channel {
	ch := (&inprocgrpc.Channel{}).WithCloner(handOver{})
	return ch.WithServerUnaryInterceptor(chainUnary(s.unary)).
		WithServerStreamInterceptor(chainStream(s.stream)).
		WithServerStatsHandler(callsOnly{otelgrpc.NewServerHandler()}).
		WithClientStatsHandler(callsOnly{otelgrpc.NewClientHandler()})
}

// chainUnary runs interceptors in order, the first outermost, as
// grpc.ChainUnaryInterceptor does on a network server.
func chainUnary(is []grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		for i := len(is) - 1; i >= 0; i-- {
			next, in := h, is[i]
			h = func(ctx context.Context, req any) (any, error) { return in(ctx, req, info, next) }
		}
		return h(ctx, req)
	}
}

// chainStream is chainUnary for streams.
func chainStream(is []grpc.StreamServerInterceptor) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		for i := len(is) - 1; i >= 0; i-- {
			next, in := h, is[i]
			h = func(srv any, ss grpc.ServerStream) error { return in(srv, ss, info, next) }
		}
		return h(srv, ss)
	}
}

// handOver passes a sent message to its receiver instead of copying it
// (grpchan's default clones it on send and merges the clone on receive: two
// deep copies, 12 % of the suite's CPU under 1,000 streams). It relies on
// gRPC's own contract: a sender must not modify a message after SendMsg
// (grpc.ClientStream, grpc.ServerStream), so the receiver is its only user.
// A service that reuses a sent message — harmless over a network, which
// encodes it before SendMsg returns — must not be served in process. The
// receiver's message takes the sent one's fields, nested messages shared
// rather than copied.
type handOver struct{}

// Clone implements inprocgrpc.Cloner: the message itself.
func (handOver) Clone(in any) (any, error) { return in, nil }

// Copy implements inprocgrpc.Cloner: out, a message of in's generated type,
// takes in's fields. Copying the Go struct's exported fields (a generated
// message's fields and oneofs) is what a hand-written assignment would do;
// protoreflect's Range and Set box every scalar, six allocations per event.
func (handOver) Copy(out, in any) error {
	dst, ok1 := out.(proto.Message)
	src, ok2 := in.(proto.Message)
	if !ok1 || !ok2 {
		return fmt.Errorf("in-process gRPC: %T into %T: not protobuf messages", in, out)
	}
	dv, sv := reflect.ValueOf(out), reflect.ValueOf(in)
	if dv.Type() != sv.Type() || dv.Kind() != reflect.Pointer || dv.IsNil() || sv.IsNil() || dv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("in-process gRPC: %T into %T", in, out)
	}
	proto.Reset(dst)
	d, s := dv.Elem(), sv.Elem()
	for _, i := range exportedFields(d.Type()) {
		d.Field(i).Set(s.Field(i))
	}
	if u := src.ProtoReflect().GetUnknown(); len(u) > 0 {
		dst.ProtoReflect().SetUnknown(u)
	}
	return nil
}

// fieldIndexes caches exportedFields by type.
var fieldIndexes sync.Map // reflect.Type → []int

// exportedFields are the indexes of t's exported fields.
func exportedFields(t reflect.Type) []int {
	if v, ok := fieldIndexes.Load(t); ok {
		return v.([]int)
	}
	var idx []int
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			idx = append(idx, i)
		}
	}
	fieldIndexes.Store(t, idx)
	return idx
}

// callsOnly is a stats handler without the per-message events: in process
// there is no wire size to report, and otelgrpc does nothing with a
// payload event but look its span up, per message. It also gives the call's
// end its begin time, which grpchan leaves zero: otelgrpc measures a call's
// duration from the end's BeginTime, and a zero one made every in-process
// call last 292 years in rpc_*_call_duration_seconds.
type callsOnly struct{ stats.Handler }

// beganKey keys the call's begin time in the context TagRPC returns.
type beganKey struct{}

// TagRPC implements stats.Handler.
func (h callsOnly) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	return context.WithValue(h.Handler.TagRPC(ctx, info), beganKey{}, new(time.Time))
}

// HandleRPC implements stats.Handler.
func (h callsOnly) HandleRPC(ctx context.Context, s stats.RPCStats) {
	switch s := s.(type) {
	case *stats.InPayload, *stats.OutPayload:
		return
	case *stats.Begin:
		if began, ok := ctx.Value(beganKey{}).(*time.Time); ok {
			*began = s.BeginTime
		}
	case *stats.End:
		if began, ok := ctx.Value(beganKey{}).(*time.Time); ok && s.BeginTime.IsZero() {
			end := *s
			end.BeginTime = *began
			h.Handler.HandleRPC(ctx, &end)
			return
		}
	}
	h.Handler.HandleRPC(ctx, s)
}
