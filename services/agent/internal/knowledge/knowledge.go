// Package knowledge is the agent's knowledge base: collections of documents,
// split into chunks by structure, embedded through the LLM gateway, and
// searched by meaning. A collection belongs to a user or to an organisation;
// the store is partitioned by owner, and every search names the partitions
// the caller may read, so the permission filter is part of the store query,
// never applied after it.
package knowledge

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
)

// Defaults and limits; each has an option on the Service.
const (
	// DefaultTopK and DefaultMinScore bound retrieval: the 5 best hits, each
	// scoring at least 0.7, so that weak matches do not crowd the prompt.
	DefaultTopK     = 5
	DefaultMinScore = 0.7
	// DefaultHashMinScore is the default minimum score for collections
	// embedded by the offline wick-hash models: they know no synonyms, so
	// a relevant chunk scores lower than with a neural model.
	DefaultHashMinScore = 0.3
	// MaxTopK bounds k of a search.
	MaxTopK = 100
	// DefaultChunkSize and DefaultChunkOverlap are in bytes.
	DefaultChunkSize    = 1000
	DefaultChunkOverlap = 150
	// MinChunkSize and MaxChunkSize bound a collection's chunk size.
	MinChunkSize = 100
	MaxChunkSize = 8000
	// DefaultMaxDocumentBytes bounds one document's text.
	DefaultMaxDocumentBytes = 8 << 20
	// DefaultMaxCollections bounds the collections of one owner.
	DefaultMaxCollections = 100
	// DefaultMaxChunks bounds the chunks of one collection.
	DefaultMaxChunks = 1_000_000
	// EmbedBatch is how many chunks go to the gateway in one Embed call.
	EmbedBatch = 256
	// MaxQueryBytes bounds a search query.
	MaxQueryBytes = 16 << 10
	// MaxMetadata bounds a document's metadata pairs.
	MaxMetadata = 32
)

// Errors a caller can act on; the RPC edge turns them into status codes.
var (
	ErrInvalid    = errcode.New(codes.InvalidArgument, "invalid argument")
	ErrNotFound   = errcode.New(codes.NotFound, "not found")
	ErrExists     = errcode.New(codes.AlreadyExists, "already exists")
	ErrDimensions = errcode.New(codes.FailedPrecondition, "embedding dimensions do not match")
	ErrLimit      = errcode.New(codes.ResourceExhausted, "limit reached")
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Owner is a partition of the store: one user's or one organisation's
// collections. It is "user:<name>" or "org:<name>".
type Owner string

// UserOwner and OrgOwner build owners.
func UserOwner(user string) Owner { return Owner("user:" + user) }

// OrgOwner is the partition of an organisation.
func OrgOwner(org string) Owner { return Owner("org:" + org) }

// Org returns the organisation of an org owner, and "" and false for a
// user (strings.CutPrefix alone would return the user's partition).
func (o Owner) Org() (string, bool) {
	org, ok := strings.CutPrefix(string(o), "org:")
	if !ok {
		return "", false
	}
	return org, true
}

// Key names a collection in the store.
type Key struct {
	Owner Owner
	Name  string
}

func (k Key) String() string { return string(k.Owner) + "/" + k.Name }

// ID is the collection id a client uses: the name for the caller's own
// collection, "org.name" for an organisation's.
func (k Key) ID() string {
	if org, ok := k.Owner.Org(); ok {
		return org + "." + k.Name
	}
	return k.Name
}

var (
	namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	docPattern  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)
)

// ValidName checks a collection or organisation name.
func ValidName(what, name string) error {
	if !namePattern.MatchString(name) {
		return invalid("%s %q: use 1..64 letters, digits, '-' or '_'", what, name)
	}
	return nil
}

// Collection is a collection's stored description.
type Collection struct {
	Key         Key    `json:"key"`
	Description string `json:"description,omitempty"`
	EmbedModel  string `json:"embed_model,omitempty"`
	// Provider is the provider that embedded the collection's first text
	// ("hash" for the offline embedder); it picks the default min score.
	Provider     string    `json:"provider,omitempty"`
	Dimensions   int       `json:"dimensions"`
	ChunkSize    int       `json:"chunk_size"`
	ChunkOverlap int       `json:"chunk_overlap"`
	CreatedAt    time.Time `json:"created_at"`
	// Documents and Chunks are counted by the store.
	Documents int64 `json:"-"`
	Chunks    int64 `json:"-"`
}

// Document is a document's stored description.
type Document struct {
	ID          string            `json:"id"`
	Title       string            `json:"title,omitempty"`
	Source      string            `json:"source,omitempty"`
	ContentType string            `json:"content_type"`
	Hash        string            `json:"hash"`
	Size        int64             `json:"size"`
	Chunks      int               `json:"chunks"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	UpdatedAt   time.Time         `json:"updated_at"`
}

// Chunk is one embedded piece of a document.
type Chunk struct {
	Index   int       `json:"i"`
	Heading string    `json:"h,omitempty"`
	Text    string    `json:"t"`
	Hash    string    `json:"x"`
	Vector  []float32 `json:"-"`
}

// Hit is a chunk found by a search.
type Hit struct {
	Collection Key
	Document   string
	Title      string
	Source     string
	Metadata   map[string]string
	Chunk      Chunk
	Score      float64
}

// ChunkID identifies a hit's chunk: "collection/document#index".
func (h Hit) ChunkID() string {
	return fmt.Sprintf("%s/%s#%d", h.Collection.ID(), h.Document, h.Chunk.Index)
}

// Query is a store search. Readers are the partitions the caller may read;
// the store refuses to scan any collection outside them.
type Query struct {
	Readers     []Owner
	Collections []Key
	Vector      []float32
	K           int
	MinScore    float64
	Filter      map[string]string
}
