package grpcedge

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestForwardable(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"x-request-id", true},
		{"traceparent", true},
		{"authorization", false},
		{"x-wick-user", false},
		{"x-wick-user-sig", false},
		{"x-wick-anything", false},
		{":authority", false},
		{"content-type", false},
		{"user-agent", false},
		{"grpc-timeout", false},
		{"grpc-previous-rpc-attempts", false},
		{"te", false},
	}
	for _, tc := range tests {
		if got := forwardable(tc.key); got != tc.want {
			t.Errorf("forwardable(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
	if md := filter(metadata.Pairs("authorization", "Bearer x", "x-wick-user", "bob")); md != nil {
		t.Errorf("filter left %v", md)
	}
	md := filter(metadata.Pairs("x-request-id", "1", "x-wick-user", "bob", "x-trace", "a", "x-trace", "b"))
	if len(md) != 2 || len(md.Get("x-trace")) != 2 || md.Get("x-request-id")[0] != "1" {
		t.Errorf("filter = %v", md)
	}
}

// countingPool records what goes back to the pool, to check that a frame
// hands its buffers on rather than copying or leaking them.
type countingPool struct {
	mem.BufferPool
	puts int
}

func (p *countingPool) Put(b *[]byte) { p.puts++; p.BufferPool.Put(b) }

func TestCodecPassesFramesThrough(t *testing.T) {
	c := NewCodec()
	pool := &countingPool{BufferPool: mem.DefaultBufferPool()}
	// Large enough to be pooled (mem's pooling threshold is 1 KiB).
	text := string(bytes.Repeat([]byte("w"), 4000))
	raw, err := proto.Marshal(wrapperspb.String(text))
	if err != nil {
		t.Fatal(err)
	}
	buf := pool.Get(len(raw))
	copy(*buf, raw)
	in := mem.BufferSlice{mem.NewBuffer(buf, pool)}

	f := new(Frame)
	if err := c.Unmarshal(in, f); err != nil {
		t.Fatal(err)
	}
	in.Free() // what gRPC does once Unmarshal returns
	if pool.puts != 0 {
		t.Fatal("the received buffer was released while the frame holds it")
	}
	if err := c.Unmarshal(in, f); err == nil {
		t.Fatal("a frame that still holds a message took another")
	}
	out, err := c.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Materialize(), raw) {
		t.Fatalf("marshalled %q, want %q", out.Materialize(), raw)
	}
	if f.Len() != 0 {
		t.Fatal("a sent frame still holds its buffers")
	}
	out.Free() // what gRPC does once written
	if pool.puts != 1 {
		t.Fatalf("buffer returned to the pool %d times, want 1", pool.puts)
	}
	// Any other message is protobuf, as on every other server.
	msg := wrapperspb.String(text)
	data, err := c.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data.Materialize(), raw) {
		t.Fatalf("proto marshalled %q, want %q", data.Materialize(), raw)
	}
	var back wrapperspb.StringValue
	if err := c.Unmarshal(data, &back); err != nil || !proto.Equal(&back, msg) {
		t.Fatalf("proto unmarshal = %v, %v", &back, err)
	}
}
