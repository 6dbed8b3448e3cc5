// Package protoutf8 refuses, before they are sent, messages whose string
// fields are not valid UTF-8. Protobuf strings must be UTF-8 and the encoder
// refuses any that is not with an Internal error that names no field; a
// REST path segment or query value ("%ff%fe") decodes into exactly such a
// string. Checked at the edge, the client gets InvalidArgument naming the
// field, whichever route or handler built the message.
package protoutf8

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Check returns an InvalidArgument status naming the first string field of
// m (by its proto path, e.g. "header.path" or "messages[0].content") that is
// not valid UTF-8, or nil.
func Check(m proto.Message) error {
	if m == nil {
		return nil
	}
	if field, bad := invalid(m.ProtoReflect(), ""); bad {
		return status.Errorf(codes.InvalidArgument, "%s: not valid UTF-8", field)
	}
	return nil
}

func invalid(m protoreflect.Message, prefix string) (field string, bad bool) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := prefix + string(fd.Name())
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if field, bad = invalidValue(fd, l.Get(i), name+"["+strconv.Itoa(i)+"]"); bad {
					return false
				}
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if fd.MapKey().Kind() == protoreflect.StringKind && !utf8.ValidString(k.String()) {
					field, bad = name+" (a key)", true
					return false
				}
				field, bad = invalidValue(fd.MapValue(), mv, fmt.Sprintf("%s[%q]", name, k.String()))
				return !bad
			})
		default:
			field, bad = invalidValue(fd, v, name)
		}
		return !bad
	})
	return field, bad
}

func invalidValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, name string) (string, bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if !utf8.ValidString(v.String()) {
			return name, true
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return invalid(v.Message(), name+".")
	}
	return "", false
}

// Conn returns cc with every request message, unary or streamed, checked
// by Check before it is sent.
func Conn(cc grpc.ClientConnInterface) grpc.ClientConnInterface { return conn{cc} }

type conn struct{ cc grpc.ClientConnInterface }

func (c conn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if m, ok := args.(proto.Message); ok {
		if err := Check(m); err != nil {
			return err
		}
	}
	return c.cc.Invoke(ctx, method, args, reply, opts...)
}

func (c conn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := c.cc.NewStream(ctx, desc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &stream{ClientStream: s}, nil
}

// stream checks what it sends. A refused message is not sent, and the
// refusal is also what RecvMsg returns from then on: a caller that asks the
// stream for its status after a failed send (CloseAndRecv) learns why,
// rather than what the server makes of a stream that lacks the message.
type stream struct {
	grpc.ClientStream
	refused atomic.Pointer[error]
}

func (s *stream) SendMsg(m any) error {
	if pm, ok := m.(proto.Message); ok {
		if err := Check(pm); err != nil {
			s.refused.CompareAndSwap(nil, &err)
			return err
		}
	}
	return s.ClientStream.SendMsg(m)
}

func (s *stream) RecvMsg(m any) error {
	if err := s.refused.Load(); err != nil {
		return *err
	}
	return s.ClientStream.RecvMsg(m)
}
