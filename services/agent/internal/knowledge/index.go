package knowledge

import (
	"cmp"
	"container/heap"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
)

// Index is the in-memory half of every store: collections in partitions by
// owner, each collection's vectors in one contiguous []float32, searched
// exhaustively with a dot product (vectors are L2-normalised, so it is the
// cosine) and a bounded top-k heap. Exhaustive search is exact and, at the
// sizes one agent's knowledge base reaches, fast enough (docs/knowledge.md
// has the numbers); an approximate index is a store adapter away.
type Index struct {
	mu    sync.RWMutex
	parts map[Owner]map[string]*collState
}

type collState struct {
	meta Collection
	docs map[string]*docState
	vecs []float32 // row r is vecs[r*dims : (r+1)*dims]
	rows []rowRef
}

type docState struct {
	doc    Document
	chunks []Chunk // without vectors; rows[i] holds chunk i's vector
	rows   []int
}

type rowRef struct {
	doc   *docState
	chunk int
}

// NewIndex returns an empty index.
func NewIndex() *Index { return &Index{parts: map[Owner]map[string]*collState{}} }

func (x *Index) coll(k Key) *collState {
	return x.parts[k.Owner][k.Name]
}

// putCollection adds or replaces a collection's description, keeping its
// documents when it exists.
func (x *Index) putCollection(c Collection) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p := x.parts[c.Key.Owner]
	if p == nil {
		p = map[string]*collState{}
		x.parts[c.Key.Owner] = p
	}
	if cs := p[c.Key.Name]; cs != nil {
		cs.meta = c
		return
	}
	p[c.Key.Name] = &collState{meta: c, docs: map[string]*docState{}}
}

func (x *Index) deleteCollection(k Key) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	p := x.parts[k.Owner]
	if p[k.Name] == nil {
		return false
	}
	delete(p, k.Name)
	if len(p) == 0 {
		delete(x.parts, k.Owner)
	}
	return true
}

// swapCollection puts cs (nil: nothing) in k's place.
func (x *Index) swapCollection(k Key, cs *collState) {
	if cs == nil {
		x.deleteCollection(k)
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	p := x.parts[k.Owner]
	if p == nil {
		p = map[string]*collState{}
		x.parts[k.Owner] = p
	}
	p[k.Name] = cs
}

// collection returns a collection's description with its counts.
func (x *Index) collection(k Key) (Collection, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	cs := x.coll(k)
	if cs == nil {
		return Collection{}, false
	}
	return cs.described(), true
}

func (cs *collState) described() Collection {
	c := cs.meta
	c.Documents, c.Chunks = int64(len(cs.docs)), int64(len(cs.rows))
	return c
}

// collections lists the collections of owners, sorted by id.
func (x *Index) collections(owners []Owner) []Collection {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []Collection
	for _, o := range owners {
		for _, cs := range x.parts[o] {
			out = append(out, cs.described())
		}
	}
	slices.SortFunc(out, func(a, b Collection) int { return cmp.Compare(a.Key.ID(), b.Key.ID()) })
	return out
}

// putDocument replaces a document and its chunks (vectors set). It fails
// when the collection is gone or the vectors do not fit its dimensions.
func (x *Index) putDocument(k Key, d Document, chunks []Chunk) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	cs := x.coll(k)
	if cs == nil {
		return fmt.Errorf("collection %s: %w", k.ID(), ErrNotFound)
	}
	dims := cs.meta.Dimensions
	for _, c := range chunks {
		if len(c.Vector) != dims {
			return fmt.Errorf("%w: collection %s holds %d-dimensional vectors, chunk %d has %d", ErrDimensions, k.ID(), dims, c.Index, len(c.Vector))
		}
	}
	cs.removeDoc(d.ID)
	ds := &docState{doc: d, chunks: make([]Chunk, len(chunks)), rows: make([]int, len(chunks))}
	for i, c := range chunks {
		ds.rows[i] = len(cs.rows)
		cs.rows = append(cs.rows, rowRef{doc: ds, chunk: i})
		cs.vecs = append(cs.vecs, c.Vector...)
		c.Vector = nil
		ds.chunks[i] = c
	}
	cs.docs[d.ID] = ds
	return nil
}

// removeDoc drops a document's rows by moving the last row into each hole,
// so that vectors stay contiguous without copying the whole collection.
func (cs *collState) removeDoc(id string) int {
	ds := cs.docs[id]
	if ds == nil {
		return 0
	}
	dims := cs.meta.Dimensions
	// Highest rows first, so that a moved row is never one still to remove.
	rows := slices.Clone(ds.rows)
	slices.Sort(rows)
	for i := len(rows) - 1; i >= 0; i-- {
		r, last := rows[i], len(cs.rows)-1
		if r != last {
			moved := cs.rows[last]
			cs.rows[r] = moved
			moved.doc.rows[moved.chunk] = r
			copy(cs.vecs[r*dims:(r+1)*dims], cs.vecs[last*dims:(last+1)*dims])
		}
		cs.rows = cs.rows[:last]
		cs.vecs = cs.vecs[:last*dims]
	}
	delete(cs.docs, id)
	return len(rows)
}

func (x *Index) deleteDocument(k Key, id string) (int, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	cs := x.coll(k)
	if cs == nil || cs.docs[id] == nil {
		return 0, false
	}
	return cs.removeDoc(id), true
}

// documents lists a collection's documents, sorted by id.
func (x *Index) documents(k Key) ([]Document, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	cs := x.coll(k)
	if cs == nil {
		return nil, false
	}
	out := make([]Document, 0, len(cs.docs))
	for _, ds := range cs.docs {
		out = append(out, ds.doc)
	}
	slices.SortFunc(out, func(a, b Document) int { return cmp.Compare(a.ID, b.ID) })
	return out, true
}

// document returns a document with its chunks and their vectors.
func (x *Index) document(k Key, id string) (Document, []Chunk, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	cs := x.coll(k)
	if cs == nil || cs.docs[id] == nil {
		return Document{}, nil, false
	}
	ds, dims := cs.docs[id], cs.meta.Dimensions
	chunks := slices.Clone(ds.chunks)
	for i := range chunks {
		r := ds.rows[i]
		chunks[i].Vector = slices.Clone(cs.vecs[r*dims : (r+1)*dims])
	}
	return ds.doc, chunks, true
}

// parallelRows is the collection size from which a search is split across
// CPUs; below it, starting goroutines costs more than it saves.
const parallelRows = 20_000

// search scans the query's collections — only those in the readers'
// partitions — and returns the best K hits above MinScore, best first.
func (x *Index) search(q Query) ([]Hit, error) {
	readers := map[Owner]bool{}
	for _, o := range q.Readers {
		readers[o] = true
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	top := &hitHeap{}
	for _, k := range q.Collections {
		if !readers[k.Owner] {
			return nil, fmt.Errorf("collection %s: %w", k.ID(), ErrNotFound)
		}
		cs := x.coll(k)
		if cs == nil {
			return nil, fmt.Errorf("collection %s: %w", k.ID(), ErrNotFound)
		}
		if len(cs.rows) == 0 {
			continue
		}
		if len(q.Vector) != cs.meta.Dimensions {
			return nil, fmt.Errorf("%w: collection %s holds %d-dimensional vectors, the query has %d", ErrDimensions, k.ID(), cs.meta.Dimensions, len(q.Vector))
		}
		var allow func(*docState) bool
		if len(q.Filter) > 0 {
			ok := map[*docState]bool{}
			for _, ds := range cs.docs {
				ok[ds] = matches(ds.doc.Metadata, q.Filter)
			}
			allow = func(ds *docState) bool { return ok[ds] }
		}
		for _, c := range cs.scan(q, allow) {
			top.offer(c, q.K)
		}
	}
	out := make([]Hit, top.Len())
	for i := len(out) - 1; i >= 0; i-- {
		c := heap.Pop(top).(candidate)
		ds := c.cs.rows[c.row].doc
		ch := ds.chunks[c.cs.rows[c.row].chunk]
		out[i] = Hit{Collection: c.cs.meta.Key, Document: ds.doc.ID, Title: ds.doc.Title, Source: ds.doc.Source,
			Metadata: maps.Clone(ds.doc.Metadata), Chunk: ch, Score: float64(c.score)}
	}
	return out, nil
}

// scan returns the best q.K rows of the collection, splitting the rows
// across CPUs when there are many.
func (cs *collState) scan(q Query, allow func(*docState) bool) []candidate {
	n := len(cs.rows)
	workers := 1
	if n >= parallelRows {
		workers = min(runtime.GOMAXPROCS(0), n/(parallelRows/2))
	}
	parts := make([][]candidate, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*n/workers, (w+1)*n/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[w] = cs.scanRange(q, allow, lo, hi)
		}()
	}
	wg.Wait()
	var out []candidate
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func (cs *collState) scanRange(q Query, allow func(*docState) bool, lo, hi int) []candidate {
	dims := cs.meta.Dimensions
	min := float32(q.MinScore)
	top := &hitHeap{}
	for r := lo; r < hi; r++ {
		s := dot(q.Vector, cs.vecs[r*dims:(r+1)*dims])
		if s < min || (top.Len() == q.K && s <= (*top)[0].score) {
			continue
		}
		if allow != nil && !allow(cs.rows[r].doc) {
			continue
		}
		top.offer(candidate{cs: cs, row: r, score: s}, q.K)
	}
	return *top
}

// dot is unrolled by four: the compiler does not vectorise, and the
// independent sums let the CPU overlap the multiplications.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

func matches(meta, filter map[string]string) bool {
	for k, v := range filter {
		if got, ok := meta[k]; !ok || got != v {
			return false
		}
	}
	return true
}

type candidate struct {
	cs    *collState
	row   int
	score float32
}

// hitHeap is a min-heap on score: its root is the worst of the best k.
type hitHeap []candidate

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return h[i].score < h[j].score }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(candidate)) }
func (h *hitHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// offer keeps c if it is among the best k so far.
func (h *hitHeap) offer(c candidate, k int) {
	if h.Len() < k {
		heap.Push(h, c)
		return
	}
	if c.score > (*h)[0].score {
		(*h)[0] = c
		heap.Fix(h, 0)
	}
}
