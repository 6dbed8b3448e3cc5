// Package bufpool is a gRPC buffer pool for the daemon's file streams. gRPC's
// default pool clears every buffer it hands out, and its tiers jump from
// 32 KiB to 1 MiB, so each 256 KiB chunk cost a 1 MiB memclr: a third of the
// CPU of an upload. This pool has a tier per power of two and does not clear:
// gRPC fills every buffer it gets before reading it, and the buffers never
// leave the process.
package bufpool

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

const (
	minShift = 8  // 256 B
	maxShift = 24 // 16 MiB; larger buffers are allocated and dropped
)

// Pool implements mem.BufferPool.
type Pool struct {
	tiers [maxShift - minShift + 1]sync.Pool
}

var _ mem.BufferPool = (*Pool)(nil)

// New returns an empty pool.
func New() *Pool { return &Pool{} }

// shift is the exponent of the smallest tier holding n bytes.
func shift(n int) int {
	if n <= 1<<minShift {
		return minShift
	}
	return bits.Len(uint(n - 1))
}

// Get returns a buffer of length n whose contents are unspecified.
func (p *Pool) Get(n int) *[]byte {
	s := shift(n)
	if s > maxShift {
		b := make([]byte, n)
		return &b
	}
	if v, ok := p.tiers[s-minShift].Get().(*[]byte); ok {
		*v = (*v)[:n]
		return v
	}
	b := make([]byte, n, 1<<s)
	return &b
}

// Put returns a buffer to the tier its capacity fits exactly; others are dropped.
func (p *Pool) Put(b *[]byte) {
	c := cap(*b)
	if c < 1<<minShift || c > 1<<maxShift || c&(c-1) != 0 {
		return
	}
	p.tiers[bits.Len(uint(c))-1-minShift].Put(b)
}
