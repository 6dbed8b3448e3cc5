// Package grpcedge forwards a gRPC service from external clients to the
// suite's services without decoding its messages: each call is
// authenticated from its metadata, stripped of metadata a client must not
// set, and re-sent on a connection that signs the caller's identity, with
// deadline, cancellation, headers, trailers and status carried across.
//
// Messages travel as Frames through a pass-through codec, so a forwarded
// stream event costs a buffer reference, not a protobuf decode and encode.
package grpcedge

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/wick-agent/wick/platform/identity"
)

// DefaultMaxMsgBytes bounds a forwarded message in either direction.
const DefaultMaxMsgBytes = 16 << 20

// Authenticate returns the user a call acts for from its incoming metadata,
// or a gRPC status error (Unauthenticated, or Unavailable when the
// verifier cannot be asked).
type Authenticate func(ctx context.Context, md metadata.MD) (string, error)

// Forwarder serves one gRPC service by forwarding every call to conn.
type Forwarder struct {
	conn     grpc.ClientConnInterface
	svc      *grpc.ServiceDesc
	auth     Authenticate
	orgs     func(user string) []string
	callOpts []grpc.CallOption
}

// Option configures New.
type Option func(*Forwarder)

// WithOrgs gives each user's organisations, signed with the user.
func WithOrgs(orgs func(user string) []string) Option {
	return func(f *Forwarder) { f.orgs = orgs }
}

// WithMaxMsgBytes bounds each message forwarded to or from the service.
func WithMaxMsgBytes(n int) Option {
	return func(f *Forwarder) {
		f.callOpts = append(f.callOpts, grpc.MaxCallRecvMsgSize(n), grpc.MaxCallSendMsgSize(n))
	}
}

// New returns a forwarder of the service svc describes (a generated
// …_ServiceDesc) to conn, which must sign the context's user
// (dial.WithIdentity). Only svc's methods are served; any other is
// Unimplemented, as on the service itself.
func New(conn grpc.ClientConnInterface, svc *grpc.ServiceDesc, auth Authenticate, opts ...Option) *Forwarder {
	f := &Forwarder{conn: conn, svc: svc, auth: auth, callOpts: []grpc.CallOption{grpc.ForceCodecV2(NewCodec())}}
	WithMaxMsgBytes(DefaultMaxMsgBytes)(f)
	for _, o := range opts {
		o(f)
	}
	return f
}

// Register registers the forwarded service on s. The server must be built
// with grpc.ForceServerCodecV2(NewCodec()): the handlers send and receive
// Frames. Registering the service by name, rather than catching unknown
// services, keeps health, reflection and Unimplemented for other methods
// as they are on the service itself.
func (f *Forwarder) Register(s grpc.ServiceRegistrar) {
	desc := &grpc.ServiceDesc{
		ServiceName: f.svc.ServiceName,
		HandlerType: (*any)(nil),
		Metadata:    f.svc.Metadata,
	}
	for _, m := range f.svc.Methods {
		desc.Methods = append(desc.Methods, grpc.MethodDesc{
			MethodName: m.MethodName,
			Handler:    f.unaryHandler("/" + f.svc.ServiceName + "/" + m.MethodName),
		})
	}
	for _, sd := range f.svc.Streams {
		method := "/" + f.svc.ServiceName + "/" + sd.StreamName
		up := &grpc.StreamDesc{StreamName: sd.StreamName, ServerStreams: sd.ServerStreams, ClientStreams: sd.ClientStreams}
		desc.Streams = append(desc.Streams, grpc.StreamDesc{
			StreamName:    sd.StreamName,
			ServerStreams: sd.ServerStreams,
			ClientStreams: sd.ClientStreams,
			Handler:       func(_ any, ss grpc.ServerStream) error { return f.stream(ss, method, up) },
		})
	}
	s.RegisterService(desc, struct{}{})
}

// outgoing is the context of the forwarded call: the client's metadata
// without what it may not set, and the authenticated user, which the
// connection signs.
func (f *Forwarder) outgoing(ctx context.Context, user string) context.Context {
	md, _ := metadata.FromIncomingContext(ctx)
	// NewOutgoingContext replaces: nothing but the filtered metadata goes out.
	ctx = metadata.NewOutgoingContext(ctx, filter(md))
	ctx = identity.WithUser(ctx, user)
	if f.orgs != nil {
		ctx = identity.WithOrgs(ctx, f.orgs(user))
	}
	return ctx
}

func (f *Forwarder) user(ctx context.Context) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	return f.auth(ctx, md)
}

func (f *Forwarder) unaryHandler(method string) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := new(Frame)
		if err := dec(in); err != nil {
			return nil, err
		}
		if interceptor == nil {
			return f.unary(ctx, method, in)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: method}
		return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
			return f.unary(ctx, method, req.(*Frame))
		})
	}
}

// unary forwards a unary call with one Invoke: no goroutine, no stream.
func (f *Forwarder) unary(ctx context.Context, method string, in *Frame) (any, error) {
	defer in.Free() // a no-op once sent
	user, err := f.user(ctx)
	if err != nil {
		return nil, err
	}
	out := new(Frame)
	var header, trailer metadata.MD
	opts := append(f.callOpts[:len(f.callOpts):len(f.callOpts)], grpc.Header(&header), grpc.Trailer(&trailer))
	err = f.conn.Invoke(f.outgoing(ctx, user), method, in, out, opts...)
	if md := filter(header); md != nil {
		_ = grpc.SetHeader(ctx, md)
	}
	if md := filter(trailer); md != nil {
		_ = grpc.SetTrailer(ctx, md)
	}
	if err != nil {
		out.Free()
		return nil, err
	}
	return out, nil
}

// stream forwards a streaming call. Requests are copied up in their own
// goroutine when the client streams; responses are copied down here.
func (f *Forwarder) stream(ss grpc.ServerStream, method string, desc *grpc.StreamDesc) error {
	// Cancelled on return, so the service's side ends with the client's.
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	user, err := f.user(ctx)
	if err != nil {
		return err
	}
	var first *Frame
	if !desc.ClientStreams {
		first = new(Frame)
		if err := ss.RecvMsg(first); err != nil {
			return err
		}
		defer first.Free()
	}
	cs, err := f.conn.NewStream(f.outgoing(ctx, user), desc, method, f.callOpts...)
	if err != nil {
		return err
	}
	if first != nil {
		// io.EOF means the service already ended the call: its status
		// comes from RecvMsg below.
		if err := cs.SendMsg(first); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if err := cs.CloseSend(); err != nil {
			return err
		}
	} else {
		go func() {
			if err := copyUp(ss, cs); err != nil {
				cancel() // the client's side failed: end the service's
			}
		}()
	}
	return copyDown(ss, cs)
}

// copyUp sends the client's messages to the service until the client
// half-closes. An io.EOF from the service ends it quietly: the service
// has ended the call and copyDown reports how.
func copyUp(ss grpc.ServerStream, cs grpc.ClientStream) error {
	m := new(Frame) // reusable: a sent frame is empty again
	for {
		if err := ss.RecvMsg(m); err != nil {
			if errors.Is(err, io.EOF) {
				return cs.CloseSend()
			}
			return err
		}
		if err := cs.SendMsg(m); err != nil {
			m.Free()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// copyDown sends the service's header, messages and trailer to the client
// and returns the service's status.
func copyDown(ss grpc.ServerStream, cs grpc.ClientStream) error {
	// Forwarded before any message, so a client sees the header as soon as
	// the service sends it. An error here is the call's, and RecvMsg
	// returns it.
	if md, err := cs.Header(); err == nil {
		if md = filter(md); md != nil {
			if err := ss.SendHeader(md); err != nil {
				return err
			}
		}
	}
	m := new(Frame)
	for {
		if err := cs.RecvMsg(m); err != nil {
			if md := filter(cs.Trailer()); md != nil {
				ss.SetTrailer(md)
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := ss.SendMsg(m); err != nil {
			m.Free()
			return err
		}
	}
}
