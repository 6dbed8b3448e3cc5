package server

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
)

// TestInProcessInterceptors: a call over the in-process channel goes
// through the server's identity check and panic recovery as a call to its
// port does.
func TestInProcessInterceptors(t *testing.T) {
	t.Parallel()
	key := identity.RandomKey()
	srv := New("test", slog.New(slog.NewTextHandler(io.Discard, nil)), WithIdentity(key))
	ch := srv.InProcess()
	ch.RegisterService(&probeDesc, struct{}{})
	alice := identity.WithUser(context.Background(), "alice")
	for _, tc := range []struct {
		name   string
		conn   grpc.ClientConnInterface
		ctx    context.Context
		method string
		want   codes.Code
		user   string
	}{
		{"signed", dial.InProcess(ch, dial.WithIdentity(key)), alice, "WhoAmI", codes.OK, "alice"},
		{"no user", dial.InProcess(ch, dial.WithIdentity(key)), context.Background(), "WhoAmI", codes.Unauthenticated, ""},
		{"wrong key", dial.InProcess(ch, dial.WithIdentity(identity.RandomKey())), alice, "WhoAmI", codes.Unauthenticated, ""},
		{"unsigned client", dial.InProcess(ch), alice, "WhoAmI", codes.Unauthenticated, ""},
		{"panic", dial.InProcess(ch, dial.WithIdentity(key)), alice, "Panic", codes.Internal, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out wrapperspb.StringValue
			err := tc.conn.Invoke(tc.ctx, "/wick.test.Probe/"+tc.method, &emptypb.Empty{}, &out)
			if status.Code(err) != tc.want || out.GetValue() != tc.user {
				t.Fatalf("%s = %q, %v; want %q, %v", tc.method, out.GetValue(), err, tc.user, tc.want)
			}
		})
	}
}

func TestHandOver(t *testing.T) {
	t.Parallel()
	inner := &structpb.Struct{Fields: map[string]*structpb.Value{"delta": structpb.NewStringValue("hi")}}
	sent := structpb.NewStructValue(inner)
	sent.ProtoReflect().SetUnknown([]byte{0x98, 0x06, 0x01}) // field 99, varint 1
	var got structpb.Value
	got.Kind = &structpb.Value_NumberValue{NumberValue: 1} // replaced, not merged
	if err := (handOver{}).Copy(&got, sent); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&got, sent) {
		t.Fatalf("received %v, sent %v", &got, sent)
	}
	if got.GetStructValue() != inner {
		t.Fatal("the nested message was copied, not handed over")
	}
	if string(got.ProtoReflect().GetUnknown()) != "\x98\x06\x01" {
		t.Fatalf("unknown fields %q", got.ProtoReflect().GetUnknown())
	}
	if err := (handOver{}).Copy(&wrapperspb.StringValue{}, sent); err == nil {
		t.Fatal("copied a Value into a StringValue")
	}
	if c, _ := (handOver{}).Clone(sent); c != any(sent) {
		t.Fatal("Clone copied the message")
	}
}

// endRecorder keeps the End events a stats handler is given.
type endRecorder struct {
	stats.Handler
	ends []*stats.End
}

func (r *endRecorder) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (r *endRecorder) HandleRPC(_ context.Context, s stats.RPCStats) {
	if e, ok := s.(*stats.End); ok {
		r.ends = append(r.ends, e)
	}
}

// TestCallsOnlyGivesTheEndItsBeginTime: grpchan's End carries no begin
// time, and otelgrpc measures a call from it.
func TestCallsOnlyGivesTheEndItsBeginTime(t *testing.T) {
	rec := &endRecorder{}
	h := callsOnly{rec}
	ctx := h.TagRPC(context.Background(), &stats.RPCTagInfo{FullMethodName: "/x.Y/Z"})
	began := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	h.HandleRPC(ctx, &stats.Begin{BeginTime: began})
	h.HandleRPC(ctx, &stats.End{EndTime: began.Add(3 * time.Millisecond)})
	if len(rec.ends) != 1 {
		t.Fatalf("ends = %d, want 1", len(rec.ends))
	}
	if got := rec.ends[0].EndTime.Sub(rec.ends[0].BeginTime); got != 3*time.Millisecond {
		t.Errorf("duration = %v, want 3ms (begin %v)", got, rec.ends[0].BeginTime)
	}
}
