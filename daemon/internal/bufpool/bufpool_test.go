package bufpool

import "testing"

func TestPool(t *testing.T) {
	t.Parallel()
	p := New()
	for _, n := range []int{0, 1, 255, 256, 257, 4096, 256 << 10, 256<<10 + 1, 1 << 24, 1<<24 + 1} {
		b := p.Get(n)
		if len(*b) != n || cap(*b) < n {
			t.Fatalf("Get(%d): len %d cap %d", n, len(*b), cap(*b))
		}
		p.Put(b)
		again := p.Get(n)
		if len(*again) != n {
			t.Fatalf("Get(%d) after Put: len %d", n, len(*again))
		}
	}
	odd := make([]byte, 1000)
	p.Put(&odd) // not a tier's capacity: dropped, not reused at a wrong size
	if b := p.Get(1000); cap(*b) != 1024 {
		t.Fatalf("Get(1000) cap %d; want 1024", cap(*b))
	}
}
