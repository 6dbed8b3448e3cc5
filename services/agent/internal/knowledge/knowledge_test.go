package knowledge_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wick-agent/wick/llm/hashembed"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent/internal/knowledge"
)

// hashEmbedder embeds in-process with the offline model the gateway serves.
type hashEmbedder struct{ e *hashembed.Embedder }

func newEmbedder(dims int) hashEmbedder {
	e, _ := hashembed.New(dims)
	return hashEmbedder{e}
}

func (h hashEmbedder) Embed(_ context.Context, _ string, texts []string) ([][]float32, string, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = h.e.Embed(t)
	}
	return out, "hash", nil
}

func newService(t testing.TB, store knowledge.Store, opts ...knowledge.Option) *knowledge.Service {
	t.Helper()
	s, err := knowledge.NewService(store, newEmbedder(hashembed.DefaultDimensions), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var orgs = knowledge.WithOrganisations(map[string][]string{"alice": {"acme"}, "bob": {"acme"}})

func mustCreate(t testing.TB, s *knowledge.Service, user, org, name string) {
	t.Helper()
	if _, err := s.CreateCollection(context.Background(), user, org, knowledge.Collection{Key: knowledge.Key{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

func mustAdd(t testing.TB, s *knowledge.Service, user, coll, doc, text string) knowledge.AddResult {
	t.Helper()
	r, err := s.AddDocument(context.Background(), user, knowledge.AddInput{Collection: coll, Document: doc, Content: text})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func search(t testing.TB, s *knowledge.Service, user, coll, q string) ([]knowledge.Hit, error) {
	t.Helper()
	hits, _, err := s.Search(context.Background(), user, knowledge.SearchInput{Collections: []string{coll}, Query: q})
	return hits, err
}

func TestOwnershipAndOrganisations(t *testing.T) {
	t.Parallel()
	s := newService(t, knowledge.NewMemoryStore(), orgs)
	ctx := context.Background()
	mustCreate(t, s, "alice", "", "notes")
	mustCreate(t, s, "alice", "acme", "handbook")
	mustAdd(t, s, "alice", "notes", "a", "# Private\n\nAlice keeps her holiday plans for Lisbon here.")
	mustAdd(t, s, "alice", "acme.handbook", "h", "# Expenses\n\nTravel expenses are approved by the finance team within five days.")

	// Bob's "notes" is his own (absent) collection, never Alice's.
	if _, err := search(t, s, "bob", "notes", "holiday plans Lisbon"); !errors.Is(err, knowledge.ErrNotFound) {
		t.Fatalf("bob searching notes: %v", err)
	}
	if _, err := s.ListDocuments(ctx, "bob", "notes"); !errors.Is(err, knowledge.ErrNotFound) {
		t.Fatalf("bob listing notes: %v", err)
	}
	// Bob shares acme.
	hits, err := search(t, s, "bob", "acme.handbook", "who approves travel expenses?")
	if err != nil || len(hits) == 0 || hits[0].Document != "h" {
		t.Fatalf("bob in acme: %v %v", hits, err)
	}
	// Carol is in no organisation.
	if _, err := search(t, s, "carol", "acme.handbook", "travel expenses"); !errors.Is(err, knowledge.ErrNotFound) {
		t.Fatalf("carol: %v", err)
	}
	if _, err := s.CreateCollection(ctx, "carol", "acme", knowledge.Collection{Key: knowledge.Key{Name: "x"}}); !errors.Is(err, knowledge.ErrNotFound) {
		t.Fatalf("carol creating in acme: %v", err)
	}
	cs, _ := s.ListCollections(ctx, "bob")
	if len(cs) != 1 || cs[0].Key.ID() != "acme.handbook" {
		t.Fatalf("bob sees %v", cs)
	}
	cs, _ = s.ListCollections(ctx, "alice")
	if len(cs) != 2 {
		t.Fatalf("alice sees %v", cs)
	}
}

// TestStoreRefusesUnreadablePartitions: the permission filter is part of the
// store query — a query naming a collection outside its readers fails.
func TestStoreRefusesUnreadablePartitions(t *testing.T) {
	t.Parallel()
	store := knowledge.NewMemoryStore()
	k := knowledge.Key{Owner: knowledge.UserOwner("alice"), Name: "notes"}
	if err := store.CreateCollection(context.Background(), knowledge.Collection{Key: k, Dimensions: 2}); err != nil {
		t.Fatal(err)
	}
	_, err := store.Search(context.Background(), knowledge.Query{Readers: []knowledge.Owner{knowledge.UserOwner("bob")}, Collections: []knowledge.Key{k}, Vector: []float32{1, 0}, K: 5})
	if !errors.Is(err, knowledge.ErrNotFound) {
		t.Fatalf("search outside readers: %v", err)
	}
}

func TestDedupeReembedAndDelete(t *testing.T) {
	t.Parallel()
	s := newService(t, knowledge.NewMemoryStore(), knowledge.WithChunking(200, 30))
	ctx := context.Background()
	mustCreate(t, s, "alice", "", "docs")
	var b strings.Builder
	for i := range 10 {
		fmt.Fprintf(&b, "## Part %d\n\nParagraph %d talks about topic number %d in some detail, enough to fill a chunk of its own.\n\n", i, i, i)
	}
	text := b.String()
	r := mustAdd(t, s, "alice", "docs", "guide", text)
	if r.Unchanged || r.Embedded != r.Document.Chunks || r.Document.Chunks < 10 {
		t.Fatalf("first add: %+v", r)
	}
	if r2 := mustAdd(t, s, "alice", "docs", "guide", text); !r2.Unchanged {
		t.Fatalf("same text again: %+v", r2)
	}
	// Without an id, the same text anywhere in the collection is found by hash.
	if r3, err := s.AddDocument(ctx, "alice", knowledge.AddInput{Collection: "docs", Content: text}); err != nil || !r3.Unchanged || r3.Document.ID != "guide" {
		t.Fatalf("same text without id: %+v %v", r3, err)
	}
	changed := strings.Replace(text, "topic number 3", "the Redis change stream", 1)
	r4 := mustAdd(t, s, "alice", "docs", "guide", changed)
	if r4.Unchanged || r4.Embedded < 1 || r4.Embedded > 2 {
		t.Fatalf("one paragraph changed: embedded %d of %d chunks", r4.Embedded, r4.Document.Chunks)
	}
	hits, err := search(t, s, "alice", "docs", "Redis change stream")
	if err != nil || len(hits) == 0 || !strings.Contains(hits[0].Chunk.Text, "Redis change stream") || hits[0].Chunk.Heading != "Part 3" {
		t.Fatalf("search after change: %+v %v", hits, err)
	}
	mustAdd(t, s, "alice", "docs", "other", "# Other\n\nSomething else entirely about gardening and tomatoes.")
	n, err := s.DeleteDocument(ctx, "alice", "docs", "guide")
	if err != nil || n != r4.Document.Chunks {
		t.Fatalf("delete: %d %v", n, err)
	}
	hits, _ = search(t, s, "alice", "docs", "Redis change stream")
	for _, h := range hits {
		if h.Document == "guide" {
			t.Fatalf("deleted document still found: %+v", h)
		}
	}
	if hits, _ := search(t, s, "alice", "docs", "gardening tomatoes"); len(hits) != 1 || hits[0].Document != "other" {
		t.Fatalf("the remaining document: %+v", hits)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	s := newService(t, knowledge.NewMemoryStore(), knowledge.WithMaxDocumentBytes(1<<20))
	ctx := context.Background()
	mustCreate(t, s, "alice", "", "docs")
	neg, over := -0.1, 1.5
	big := strings.Repeat("word ", 50<<20/5) // 50 MB
	tests := []struct {
		name string
		err  error
		do   func() error
	}{
		{"empty document", knowledge.ErrInvalid, func() error {
			_, err := s.AddDocument(ctx, "alice", knowledge.AddInput{Collection: "docs", Content: "  \n\n "})
			return err
		}},
		{"50 MB document", knowledge.ErrInvalid, func() error {
			_, err := s.AddDocument(ctx, "alice", knowledge.AddInput{Collection: "docs", Content: big})
			return err
		}},
		{"k below 1", knowledge.ErrInvalid, func() error {
			_, _, err := s.Search(ctx, "alice", knowledge.SearchInput{Collections: []string{"docs"}, Query: "x", K: -1})
			return err
		}},
		{"k above 100", knowledge.ErrInvalid, func() error {
			_, _, err := s.Search(ctx, "alice", knowledge.SearchInput{Collections: []string{"docs"}, Query: "x", K: 101})
			return err
		}},
		{"min score below 0", knowledge.ErrInvalid, func() error {
			_, _, err := s.Search(ctx, "alice", knowledge.SearchInput{Collections: []string{"docs"}, Query: "x", MinScore: &neg})
			return err
		}},
		{"min score above 1", knowledge.ErrInvalid, func() error {
			_, _, err := s.Search(ctx, "alice", knowledge.SearchInput{Collections: []string{"docs"}, Query: "x", MinScore: &over})
			return err
		}},
		{"bad collection name", knowledge.ErrInvalid, func() error {
			_, err := s.CreateCollection(ctx, "alice", "", knowledge.Collection{Key: knowledge.Key{Name: "a/b"}})
			return err
		}},
		{"collection exists", knowledge.ErrExists, func() error {
			_, err := s.CreateCollection(ctx, "alice", "", knowledge.Collection{Key: knowledge.Key{Name: "docs"}})
			return err
		}},
		{"content and path", knowledge.ErrInvalid, func() error {
			_, err := s.AddDocument(ctx, "alice", knowledge.AddInput{Collection: "docs", Content: "x", Path: "a.md", AgentID: "a"})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); !errors.Is(err, tt.err) {
				t.Fatalf("got %v, want %v", err, tt.err)
			}
		})
	}
}

// switchingEmbedder answers the probe with dims and later calls with other.
type switchingEmbedder struct {
	first, later hashEmbedder
	calls        int
}

func (e *switchingEmbedder) Embed(ctx context.Context, m string, texts []string) ([][]float32, string, error) {
	e.calls++
	if e.calls == 1 {
		return e.first.Embed(ctx, m, texts)
	}
	return e.later.Embed(ctx, m, texts)
}

func TestDimensionMismatchIsRefused(t *testing.T) {
	t.Parallel()
	emb := &switchingEmbedder{first: newEmbedder(384), later: newEmbedder(256)}
	s, err := knowledge.NewService(knowledge.NewMemoryStore(), emb)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "alice", "", "docs")
	_, err = s.AddDocument(context.Background(), "alice", knowledge.AddInput{Collection: "docs", Content: "# A\n\ntext"})
	if !errors.Is(err, knowledge.ErrDimensions) || !strings.Contains(err.Error(), "384") {
		t.Fatalf("got %v", err)
	}
}

func TestFileStoreKeepsCollectionsAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := func() (*knowledge.FileStore, *knowledge.Service) {
		fs, err := knowledge.OpenFileStore(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		return fs, newService(t, fs)
	}
	fs, s := open()
	if _, err := knowledge.OpenFileStore(dir, nil); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a second store on the same dir: %v", err)
	}
	mustCreate(t, s, "alice", "", "docs")
	mustCreate(t, s, "alice", "", "gone")
	mustAdd(t, s, "alice", "docs", "redis", "# Redis\n\nReplicas share the knowledge base through a Redis stream.")
	mustAdd(t, s, "alice", "docs", "tmp", "# Temporary\n\nThis one is deleted before the restart.")
	if _, err := s.DeleteDocument(context.Background(), "alice", "docs", "tmp"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteCollection(context.Background(), "alice", "gone"); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	// A torn last record (a crash mid-write) is cut off, not fatal.
	f, _ := os.OpenFile(filepath.Join(dir, "knowledge.log"), os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString(`{"op":"document","k":`)
	f.Close()

	fs, s = open()
	defer fs.Close()
	cs, _ := s.ListCollections(context.Background(), "alice")
	if len(cs) != 1 || cs[0].Key.Name != "docs" || cs[0].Documents != 1 {
		t.Fatalf("after restart: %+v", cs)
	}
	hits, err := search(t, s, "alice", "docs", "how do replicas share the knowledge base?")
	if err != nil || len(hits) == 0 || hits[0].Document != "redis" {
		t.Fatalf("search after restart: %+v %v", hits, err)
	}
}

// TestRedisReplicasShareTheKnowledgeBase: two replicas on one real Redis; a
// replica started later sees what exists, and a write on one is searchable
// on the other within a second.
func TestRedisReplicasShareTheKnowledgeBase(t *testing.T) {
	t.Parallel()
	addr := testenv.Redis(t)
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{addr}})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	prefix := fmt.Sprintf("kbtest%d", rand.Int())
	openReplica := func() *knowledge.Service {
		rs, err := knowledge.NewRedisStore(ctx, rdb, prefix, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rs.Close() })
		return newService(t, rs, orgs)
	}
	a := openReplica()
	mustCreate(t, a, "alice", "acme", "handbook")
	mustAdd(t, a, "alice", "acme.handbook", "leave", "# Leave\n\nHoliday requests go to your manager two weeks ahead.")

	b := openReplica() // added later: loads what exists
	hits, err := search(t, b, "bob", "acme.handbook", "where do holiday requests go?")
	if err != nil || len(hits) == 0 || hits[0].Document != "leave" {
		t.Fatalf("late replica: %+v %v", hits, err)
	}
	mustAdd(t, a, "alice", "acme.handbook", "laptops", "# Laptops\n\nIT replaces laptops every three years.")
	deadline := time.Now().Add(time.Second)
	for {
		hits, err := search(t, b, "bob", "acme.handbook", "how often are laptops replaced?")
		if err == nil && len(hits) > 0 && hits[0].Document == "laptops" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("write on replica a not visible on b within 1 s: %+v %v", hits, err)
		}
		time.Sleep(10 * time.Millisecond) // polling for visibility; the bound is the assertion
	}
	// A collection created on b is usable on a at once (read through to Redis).
	mustCreate(t, b, "bob", "", "mine")
	mustAdd(t, a, "bob", "mine", "x", "# X\n\nbob's own text")
}

// TestFileStoreCompacts: a log of mostly superseded records is rewritten at
// start, and what it holds survives the rewrite.
func TestFileStoreCompacts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "knowledge.log")
	fs, err := knowledge.OpenFileStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newService(t, fs)
	mustCreate(t, s, "alice", "", "docs")
	for i := range 40 {
		mustAdd(t, s, "alice", "docs", "log", fmt.Sprintf("# Version %d\n\nThe release notes of version %d.", i, i))
	}
	fs.Close()
	before, _ := os.Stat(path)
	fs, err = knowledge.OpenFileStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	after, _ := os.Stat(path)
	if after.Size()*5 > before.Size() {
		t.Fatalf("log not compacted: %d → %d bytes", before.Size(), after.Size())
	}
	docs, err := newService(t, fs).ListDocuments(context.Background(), "alice", "docs")
	if err != nil || len(docs) != 1 || docs[0].Title != "Version 39" {
		t.Fatalf("after compaction: %+v %v", docs, err)
	}
}

// TestOwnerOrg: a user's partition has no organisation; the API reports
// Collection.org from it, empty for the caller's own collections.
func TestOwnerOrg(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		owner knowledge.Owner
		org   string
		ok    bool
	}{
		{knowledge.UserOwner("alice"), "", false},
		{knowledge.OrgOwner("acme"), "acme", true},
	} {
		if org, ok := tc.owner.Org(); org != tc.org || ok != tc.ok {
			t.Errorf("%s.Org() = %q, %v; want %q, %v", tc.owner, org, ok, tc.org, tc.ok)
		}
	}
}

// TestSignedOrganisations: organisations the gateway signed into the
// caller's identity count like the operator's mapping, for that user only.
func TestSignedOrganisations(t *testing.T) {
	t.Parallel()
	s := newService(t, knowledge.NewMemoryStore())
	signed := identity.WithOrgs(identity.WithUser(context.Background(), "dave"), []string{"acme"})
	if _, err := s.CreateCollection(signed, "dave", "acme", knowledge.Collection{Key: knowledge.Key{Name: "wiki"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddDocument(signed, "dave", knowledge.AddInput{Collection: "acme.wiki", Document: "d", Content: "# Wiki\n\nThe wiki lives here."}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Search(signed, "dave", knowledge.SearchInput{Collections: []string{"acme.wiki"}, Query: "where is the wiki"}); err != nil {
		t.Fatalf("member: %v", err)
	}
	unsigned := identity.WithUser(context.Background(), "dave")
	if _, _, err := s.Search(unsigned, "dave", knowledge.SearchInput{Collections: []string{"acme.wiki"}, Query: "wiki"}); !errors.Is(err, knowledge.ErrNotFound) {
		t.Fatalf("without signed organisations: %v", err)
	}
	// The organisations belong to the context's user, not to another one.
	if _, _, err := s.Search(signed, "erin", knowledge.SearchInput{Collections: []string{"acme.wiki"}, Query: "wiki"}); !errors.Is(err, knowledge.ErrNotFound) {
		t.Fatalf("another user on a signed context: %v", err)
	}
}
