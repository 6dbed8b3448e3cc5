package grpcedge

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	// Registers the proto codec that Codec falls back to.
	_ "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// Frame is one gRPC message kept in its wire form: the edge forwards it
// without decoding it. The bytes are grpc's own pooled buffers, referenced,
// not copied; sending a frame hands them on, and a frame that is not sent
// must be freed.
type Frame struct {
	data mem.BufferSlice
}

// Len is the size of the message in bytes.
func (f *Frame) Len() int { return f.data.Len() }

// Free releases the frame's buffers.
func (f *Frame) Free() {
	f.data.Free()
	f.data = nil
}

// Codec is the codec of a server that hosts the edge: it passes frames
// through as they are and encodes every other message (health, reflection)
// with the proto codec. Its name is "proto": the bytes on the wire are
// protobuf, so the content type clients and services see is unchanged.
type Codec struct {
	proto encoding.CodecV2
}

// NewCodec returns the pass-through codec.
func NewCodec() *Codec {
	return &Codec{proto: encoding.GetCodecV2("proto")}
}

// Name implements encoding.CodecV2.
func (c *Codec) Name() string { return "proto" }

// Marshal implements encoding.CodecV2. A frame gives its buffers to gRPC,
// which frees them once written; the frame is empty afterwards.
func (c *Codec) Marshal(v any) (mem.BufferSlice, error) {
	if f, ok := v.(*Frame); ok {
		out := f.data
		f.data = nil
		return out, nil
	}
	return c.proto.Marshal(v)
}

// Unmarshal implements encoding.CodecV2. A frame takes a reference to the
// received buffers, which gRPC would otherwise free when this returns.
func (c *Codec) Unmarshal(data mem.BufferSlice, v any) error {
	if f, ok := v.(*Frame); ok {
		if f.data != nil {
			return fmt.Errorf("grpcedge: frame received into a frame that still holds %d bytes", f.data.Len())
		}
		data.Ref()
		f.data = data
		return nil
	}
	return c.proto.Unmarshal(data, v)
}
