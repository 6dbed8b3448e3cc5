package knowledge

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"
)

// Store keeps collections, documents and their vectors, and searches them.
// Search must only scan the collections of q.Readers' partitions. The
// embedded (FileStore) and shared (RedisStore) stores keep the vectors in an
// Index; an adapter for a vector database (pgvector, Qdrant) would run the
// query there instead, with the readers as a filter of that query.
type Store interface {
	// CreateCollection adds a collection; ErrExists when the key is taken.
	CreateCollection(ctx context.Context, c Collection) error
	// Collection returns a collection with its counts; ErrNotFound.
	Collection(ctx context.Context, k Key) (Collection, error)
	// Collections lists the owners' collections, sorted by id.
	Collections(ctx context.Context, owners []Owner) ([]Collection, error)
	// DeleteCollection removes a collection with its documents; ErrNotFound.
	DeleteCollection(ctx context.Context, k Key) error
	// PutDocument adds or replaces a document with its chunks (vectors set).
	PutDocument(ctx context.Context, k Key, d Document, chunks []Chunk) error
	// Documents lists a collection's documents; ErrNotFound.
	Documents(ctx context.Context, k Key) ([]Document, error)
	// Document returns a document with its chunks and vectors; ErrNotFound.
	Document(ctx context.Context, k Key, id string) (Document, []Chunk, error)
	// DeleteDocument removes a document and returns its chunk count; ErrNotFound.
	DeleteDocument(ctx context.Context, k Key, id string) (int, error)
	// Search returns the best hits of q, best first.
	Search(ctx context.Context, q Query) ([]Hit, error)
}

// record is one change, as the embedded store logs it and as the Redis
// store keeps a document.
type record struct {
	Op         string      `json:"op"`
	Key        Key         `json:"k"`
	Collection *Collection `json:"c,omitempty"`
	Document   *Document   `json:"d,omitempty"`
	DocID      string      `json:"id,omitempty"`
	Chunks     []Chunk     `json:"chunks,omitempty"`
	// Vectors are the chunks' vectors, little-endian float32, concatenated.
	Vectors string `json:"v,omitempty"`
}

// Record operations.
const (
	opCollection = "collection"
	opDrop       = "drop"
	opDocument   = "document"
	opDelete     = "delete"
)

func documentRecord(k Key, d Document, chunks []Chunk) record {
	n := 0
	for _, c := range chunks {
		n += len(c.Vector)
	}
	buf := make([]byte, 0, 4*n)
	for _, c := range chunks {
		for _, f := range c.Vector {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(f))
		}
	}
	plain := make([]Chunk, len(chunks))
	for i, c := range chunks {
		c.Vector = nil
		plain[i] = c
	}
	return record{Op: opDocument, Key: k, Document: &d, Chunks: plain, Vectors: base64.StdEncoding.EncodeToString(buf)}
}

// chunks returns a document record's chunks with their vectors.
func (r record) chunks(dims int) ([]Chunk, error) {
	buf, err := base64.StdEncoding.DecodeString(r.Vectors)
	if err != nil {
		return nil, fmt.Errorf("vectors of %s/%s: %w", r.Key, r.Document.ID, err)
	}
	if len(buf) != 4*dims*len(r.Chunks) {
		return nil, fmt.Errorf("%w: vectors of %s/%s are %d bytes for %d chunks of %d dimensions", ErrDimensions, r.Key, r.Document.ID, len(buf), len(r.Chunks), dims)
	}
	out := make([]Chunk, len(r.Chunks))
	for i, c := range r.Chunks {
		c.Vector = make([]float32, dims)
		for j := range c.Vector {
			c.Vector[j] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*(i*dims+j):]))
		}
		out[i] = c
	}
	return out, nil
}

// apply replays one record onto the index.
func (x *Index) apply(r record) error {
	switch r.Op {
	case opCollection:
		if r.Collection == nil {
			return fmt.Errorf("collection record without a collection")
		}
		x.putCollection(*r.Collection)
	case opDrop:
		x.deleteCollection(r.Key)
	case opDocument:
		c, ok := x.collection(r.Key)
		if !ok || r.Document == nil {
			return nil // the collection was dropped later; nothing to keep
		}
		chunks, err := r.chunks(c.Dimensions)
		if err != nil {
			return err
		}
		return x.putDocument(r.Key, *r.Document, chunks)
	case opDelete:
		x.deleteDocument(r.Key, r.DocID)
	default:
		return fmt.Errorf("unknown record op %q", r.Op)
	}
	return nil
}

// indexed implements the read side of Store over an Index, and the write
// side through a journal that makes each change durable (and visible to
// other replicas) before the index shows it.
type indexed struct {
	*Index
	writeMu sync.Mutex // orders check-then-write of one replica
	journal func(ctx context.Context, r record) error
}

func notFound(k Key) error { return fmt.Errorf("collection %s: %w", k.ID(), ErrNotFound) }

func (s *indexed) CreateCollection(ctx context.Context, c Collection) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, ok := s.collection(c.Key); ok {
		return fmt.Errorf("collection %s: %w", c.Key.ID(), ErrExists)
	}
	r := record{Op: opCollection, Key: c.Key, Collection: &c}
	if err := s.journal(ctx, r); err != nil {
		return err
	}
	return s.apply(r)
}

func (s *indexed) Collection(_ context.Context, k Key) (Collection, error) {
	c, ok := s.collection(k)
	if !ok {
		return c, notFound(k)
	}
	return c, nil
}

func (s *indexed) Collections(_ context.Context, owners []Owner) ([]Collection, error) {
	return s.collections(owners), nil
}

func (s *indexed) DeleteCollection(ctx context.Context, k Key) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, ok := s.collection(k); !ok {
		return notFound(k)
	}
	r := record{Op: opDrop, Key: k}
	if err := s.journal(ctx, r); err != nil {
		return err
	}
	return s.apply(r)
}

func (s *indexed) PutDocument(ctx context.Context, k Key, d Document, chunks []Chunk) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	c, ok := s.collection(k)
	if !ok {
		return notFound(k)
	}
	for _, ch := range chunks {
		if len(ch.Vector) != c.Dimensions {
			return fmt.Errorf("%w: collection %s holds %d-dimensional vectors, chunk %d has %d", ErrDimensions, k.ID(), c.Dimensions, ch.Index, len(ch.Vector))
		}
	}
	if err := s.journal(ctx, documentRecord(k, d, chunks)); err != nil {
		return err
	}
	return s.putDocument(k, d, chunks)
}

func (s *indexed) Documents(_ context.Context, k Key) ([]Document, error) {
	docs, ok := s.documents(k)
	if !ok {
		return nil, notFound(k)
	}
	return docs, nil
}

func (s *indexed) Document(_ context.Context, k Key, id string) (Document, []Chunk, error) {
	d, chunks, ok := s.document(k, id)
	if !ok {
		return d, nil, fmt.Errorf("document %s of %s: %w", id, k.ID(), ErrNotFound)
	}
	return d, chunks, nil
}

func (s *indexed) DeleteDocument(ctx context.Context, k Key, id string) (int, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, _, ok := s.document(k, id); !ok {
		return 0, fmt.Errorf("document %s of %s: %w", id, k.ID(), ErrNotFound)
	}
	r := record{Op: opDelete, Key: k, DocID: id}
	if err := s.journal(ctx, r); err != nil {
		return 0, err
	}
	n, _ := s.deleteDocument(k, id)
	return n, nil
}

func (s *indexed) Search(_ context.Context, q Query) ([]Hit, error) { return s.search(q) }

// parseKey reverses Key.String: the name is after the last '/', since
// collection names have none (user names may).
func parseKey(s string) (Key, error) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return Key{}, fmt.Errorf("bad collection key %q", s)
	}
	return Key{Owner: Owner(s[:i]), Name: s[i+1:]}, nil
}

// NewMemoryStore returns a store that keeps nothing past the process, for
// tests and for programs that load their knowledge at start.
func NewMemoryStore() Store {
	return &indexed{Index: NewIndex(), journal: func(context.Context, record) error { return nil }}
}
