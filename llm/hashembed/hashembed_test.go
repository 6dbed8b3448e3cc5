package hashembed

import (
	"math"
	"testing"
)

func cosine(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestEmbedIsNormalisedAndDeterministic(t *testing.T) {
	e, err := New(DefaultDimensions)
	if err != nil {
		t.Fatal(err)
	}
	a, b := e.Embed("Redis streams carry the change log"), e.Embed("Redis streams carry the change log")
	if len(a) != DefaultDimensions {
		t.Fatalf("len = %d", len(a))
	}
	if got := cosine(a, a); math.Abs(got-1) > 1e-5 {
		t.Fatalf("|v|² = %v, want 1", got)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("not deterministic at %d", i)
		}
	}
	if z := e.Embed("the of and !!"); cosine(z, z) != 0 {
		t.Fatalf("a text of stop words only should embed to zero")
	}
}

func TestNeighboursShareWords(t *testing.T) {
	e, _ := New(DefaultDimensions)
	q := e.Embed("how do I configure the Redis connection for replicas?")
	near := e.Embed("Configuring Redis: set -redis-url so that every replica connects to the same Redis server.")
	far := e.Embed("The sandbox drops all Linux capabilities and runs without a network.")
	if cn, cf := cosine(q, near), cosine(q, far); cn <= cf || cn < 0.3 {
		t.Fatalf("near %.3f should beat far %.3f and reach 0.3", cn, cf)
	}
}

func TestParseModel(t *testing.T) {
	for _, tc := range []struct {
		name string
		dims int
		ok   bool
	}{
		{"wick-hash-384", 384, true},
		{"wick-hash-16", 16, true},
		{"wick-hash-8", 0, false},
		{"wick-hash-", 0, false},
		{"wick-hash-99999", 0, false},
		{"text-embedding-3-small", 0, false},
	} {
		d, err := ParseModel(tc.name)
		if (err == nil) != tc.ok || d != tc.dims {
			t.Errorf("ParseModel(%q) = %d, %v", tc.name, d, err)
		}
	}
}

func BenchmarkEmbed(b *testing.B) {
	e, _ := New(DefaultDimensions)
	text := "Chunks are embedded by the gateway; the offline embedder hashes word and character n-grams into signed buckets so that no provider is needed. "
	for len(text) < 1000 {
		text += text
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		e.Embed(text)
	}
}
