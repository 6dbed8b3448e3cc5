package knowledge_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wick-agent/wick/services/agent/internal/knowledge"
)

const (
	benchChunks = 100_000
	benchDims   = 384
	benchPerDoc = 100
)

// fillStore puts benchChunks random unit vectors into one collection, in
// documents of benchPerDoc chunks.
func fillStore(tb testing.TB) (knowledge.Store, knowledge.Key) {
	tb.Helper()
	ctx := context.Background()
	store := knowledge.NewMemoryStore()
	k := knowledge.Key{Owner: knowledge.UserOwner("bench"), Name: "big"}
	if err := store.CreateCollection(ctx, knowledge.Collection{Key: k, Dimensions: benchDims}); err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for d := range benchChunks / benchPerDoc {
		chunks := make([]knowledge.Chunk, benchPerDoc)
		for i := range chunks {
			chunks[i] = knowledge.Chunk{Index: i, Text: fmt.Sprintf("chunk %d of document %d", i, d), Vector: randomUnit(rng)}
		}
		doc := knowledge.Document{ID: fmt.Sprintf("doc%d", d), Chunks: benchPerDoc}
		if err := store.PutDocument(ctx, k, doc, chunks); err != nil {
			tb.Fatal(err)
		}
	}
	return store, k
}

func randomUnit(rng *rand.Rand) []float32 {
	v := make([]float32, benchDims)
	var sum float64
	for i := range v {
		x := rng.NormFloat64()
		v[i] = float32(x)
		sum += x * x
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// BenchmarkSearch100k is an exhaustive top-5 search over 100k chunks of 384
// dimensions; it reports the median latency (p50-ms) beside the mean.
func BenchmarkSearch100k(b *testing.B) {
	store, k := fillStore(b)
	rng := rand.New(rand.NewPCG(3, 4))
	q := knowledge.Query{Readers: []knowledge.Owner{k.Owner}, Collections: []knowledge.Key{k}, K: knowledge.DefaultTopK, Vector: randomUnit(rng)}
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		hits, err := store.Search(context.Background(), q)
		lat = append(lat, time.Since(start))
		if err != nil || len(hits) != knowledge.DefaultTopK {
			b.Fatalf("%d hits, %v", len(hits), err)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkMemoryPer100kChunks reports the heap an index of 100k chunks of
// 384 dimensions holds (vectors, chunk texts and bookkeeping).
func BenchmarkMemoryPer100kChunks(b *testing.B) {
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		store, _ := fillStore(b)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB/100k-chunks")
		runtime.KeepAlive(store)
	}
}

// BenchmarkIngestOffline adds Markdown documents through the service with
// the offline embedder in-process (no gRPC hop) and reports chunks/s.
func BenchmarkIngestOffline(b *testing.B) {
	s := newService(b, knowledge.NewMemoryStore())
	mustCreate(b, s, "bench", "", "docs")
	var sb strings.Builder
	for i := range 40 {
		fmt.Fprintf(&sb, "## Section %d\n\nThe gateway embeds chunks with the offline model; section %d explains retries, "+
			"fallbacks and the knowledge hook that injects numbered sources before each model call.\n\n", i, i)
	}
	text := sb.String()
	chunks := 0
	n := 0
	start := time.Now()
	for b.Loop() {
		n++
		r, err := s.AddDocument(context.Background(), "bench", knowledge.AddInput{Collection: "docs", Document: fmt.Sprintf("d%d", n), Content: fmt.Sprintf("# Doc %d\n\n%s", n, text)})
		if err != nil {
			b.Fatal(err)
		}
		chunks += r.Embedded
	}
	b.ReportMetric(float64(chunks)/time.Since(start).Seconds(), "chunks/s")
}
