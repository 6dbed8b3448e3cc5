package knowledge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wick-agent/wick/llm/hashembed"
	"github.com/wick-agent/wick/platform/identity"
)

// Embedder turns texts into L2-normalised vectors with one model ("" is the
// gateway's default embedding model). It reports the provider that answered.
type Embedder interface {
	Embed(ctx context.Context, model string, texts []string) (vecs [][]float32, provider string, err error)
}

// FileReader reads a file of an agent's workspace for the caller.
type FileReader func(ctx context.Context, agentID, path string, max int64) (string, error)

// Service is the knowledge base: ownership, chunking, dedupe and validation
// over a Store, with embeddings from an Embedder.
type Service struct {
	store Store
	emb   Embedder
	read  FileReader
	orgs  map[string][]string
	cfg   config
	now   func() time.Time
}

type config struct {
	chunkSize, chunkOverlap int
	maxDocBytes             int
	maxCollections          int
	maxChunks               int
}

// Option configures a Service.
type Option func(*Service)

// WithChunking sets the default chunk size and overlap in bytes.
func WithChunking(size, overlap int) Option {
	return func(s *Service) { s.cfg.chunkSize, s.cfg.chunkOverlap = size, overlap }
}

// WithMaxDocumentBytes bounds one document's text.
func WithMaxDocumentBytes(n int) Option { return func(s *Service) { s.cfg.maxDocBytes = n } }

// WithMaxCollections bounds the collections of one owner.
func WithMaxCollections(n int) Option { return func(s *Service) { s.cfg.maxCollections = n } }

// WithMaxChunks bounds the chunks of one collection.
func WithMaxChunks(n int) Option { return func(s *Service) { s.cfg.maxChunks = n } }

// WithOrganisations maps users to the organisations whose collections they
// share (the operator's mapping, -knowledge-orgs).
func WithOrganisations(orgs map[string][]string) Option {
	return func(s *Service) { s.orgs = orgs }
}

// WithFileReader lets documents come from agents' workspaces.
func WithFileReader(r FileReader) Option { return func(s *Service) { s.read = r } }

// NewService returns the knowledge base over store.
func NewService(store Store, emb Embedder, opts ...Option) (*Service, error) {
	s := &Service{store: store, emb: emb, now: time.Now, cfg: config{
		chunkSize: DefaultChunkSize, chunkOverlap: DefaultChunkOverlap, maxDocBytes: DefaultMaxDocumentBytes,
		maxCollections: DefaultMaxCollections, maxChunks: DefaultMaxChunks,
	}}
	for _, o := range opts {
		o(s)
	}
	if err := checkChunking(s.cfg.chunkSize, s.cfg.chunkOverlap); err != nil {
		return nil, err
	}
	if s.cfg.maxDocBytes <= 0 || s.cfg.maxCollections <= 0 || s.cfg.maxChunks <= 0 {
		return nil, errors.New("knowledge: limits must be positive")
	}
	for user, orgs := range s.orgs {
		for _, o := range orgs {
			if err := ValidName("organisation of "+user, o); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

func checkChunking(size, overlap int) error {
	if size < MinChunkSize || size > MaxChunkSize {
		return invalid("chunk_size %d outside %d..%d", size, MinChunkSize, MaxChunkSize)
	}
	if overlap < 0 || overlap >= size/2 {
		return invalid("chunk_overlap %d must be in 0..%d (less than half the chunk size)", overlap, size/2-1)
	}
	return nil
}

// orgsOf are the organisations of user: those the operator maps the user
// to (-knowledge-orgs), and those signed into the caller's identity by the
// gateway (its token file), which ctx carries.
func (s *Service) orgsOf(ctx context.Context, user string) []string {
	out := slices.Clone(s.orgs[user])
	if u, ok := identity.User(ctx); ok && u == user {
		for _, o := range identity.Orgs(ctx) {
			if !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
	}
	return out
}

// readers are the partitions user may read: their own and their
// organisations'.
func (s *Service) readers(ctx context.Context, user string) []Owner {
	out := []Owner{UserOwner(user)}
	for _, o := range s.orgsOf(ctx, user) {
		out = append(out, OrgOwner(o))
	}
	return out
}

// resolve turns a collection id into a key the user may use. An id the user
// cannot read is NotFound, exactly like one that does not exist, so that ids
// of others' collections cannot be probed.
func (s *Service) resolve(ctx context.Context, user, id string) (Key, error) {
	org, name, isOrg := strings.Cut(id, ".")
	if !isOrg {
		if err := ValidName("collection", id); err != nil {
			return Key{}, err
		}
		return Key{Owner: UserOwner(user), Name: id}, nil
	}
	if ValidName("organisation", org) != nil || ValidName("collection", name) != nil {
		return Key{}, invalid("collection %q: an id is a name or org.name", id)
	}
	if !slices.Contains(s.orgsOf(ctx, user), org) {
		return Key{}, fmt.Errorf("collection %s: %w", id, ErrNotFound)
	}
	return Key{Owner: OrgOwner(org), Name: name}, nil
}

// CreateCollection creates a collection owned by user, or by org when org
// is set (user must belong to it). Its first embedding — a probe — checks
// that the model exists and fixes the collection's dimensions.
func (s *Service) CreateCollection(ctx context.Context, user, org string, c Collection) (Collection, error) {
	if err := ValidName("collection name", c.Key.Name); err != nil {
		return c, err
	}
	c.Key.Owner = UserOwner(user)
	if org != "" {
		if err := ValidName("organisation", org); err != nil {
			return c, err
		}
		if !slices.Contains(s.orgsOf(ctx, user), org) {
			return c, fmt.Errorf("organisation %s: %w (you are not a member)", org, ErrNotFound)
		}
		c.Key.Owner = OrgOwner(org)
	}
	if len(c.Description) > 1024 {
		return c, invalid("description is longer than 1024 bytes")
	}
	if c.ChunkSize == 0 {
		c.ChunkSize = s.cfg.chunkSize
	}
	if c.ChunkOverlap == 0 {
		c.ChunkOverlap = min(s.cfg.chunkOverlap, c.ChunkSize/2-1)
	}
	if err := checkChunking(c.ChunkSize, c.ChunkOverlap); err != nil {
		return c, err
	}
	existing, err := s.store.Collections(ctx, []Owner{c.Key.Owner})
	if err != nil {
		return c, err
	}
	if len(existing) >= s.cfg.maxCollections {
		return c, fmt.Errorf("%w: %s has %d collections, the most allowed", ErrLimit, c.Key.Owner, len(existing))
	}
	vecs, provider, err := s.emb.Embed(ctx, c.EmbedModel, []string{"dimension probe"})
	if err != nil {
		return c, fmt.Errorf("embedding model %q: %w", c.EmbedModel, err)
	}
	c.Dimensions, c.Provider = len(vecs[0]), provider
	c.CreatedAt = s.now().UTC()
	if err := s.store.CreateCollection(ctx, c); err != nil {
		return c, err
	}
	return c, nil
}

// ListCollections lists the user's and their organisations' collections.
func (s *Service) ListCollections(ctx context.Context, user string) ([]Collection, error) {
	return s.store.Collections(ctx, s.readers(ctx, user))
}

// DeleteCollection removes a collection the user can read.
func (s *Service) DeleteCollection(ctx context.Context, user, id string) error {
	k, err := s.resolve(ctx, user, id)
	if err != nil {
		return err
	}
	return s.store.DeleteCollection(ctx, k)
}

// AddInput is a document to add. Exactly one of Content and Path is set.
type AddInput struct {
	Collection  string
	Document    string
	Title       string
	Content     string
	Path        string
	AgentID     string
	ContentType string
	Metadata    map[string]string
}

// AddResult says what AddDocument did.
type AddResult struct {
	Document  Document
	Unchanged bool
	Embedded  int
}

// AddDocument chunks and embeds a document. Text that is already stored
// (same document, or for a document without an id anywhere in the
// collection) is not embedded again; when a document changes, chunks whose
// text did not change keep their vectors.
func (s *Service) AddDocument(ctx context.Context, user string, in AddInput) (AddResult, error) {
	var res AddResult
	k, err := s.resolve(ctx, user, in.Collection)
	if err != nil {
		return res, err
	}
	coll, err := s.store.Collection(ctx, k)
	if err != nil {
		return res, err
	}
	text, source, err := s.text(ctx, in)
	if err != nil {
		return res, err
	}
	ct, err := contentType(in.ContentType, in.Path)
	if err != nil {
		return res, err
	}
	if len(in.Metadata) > MaxMetadata {
		return res, invalid("metadata has %d pairs, at most %d", len(in.Metadata), MaxMetadata)
	}
	sum := sha256.Sum256([]byte(text))
	hash := hex.EncodeToString(sum[:])
	id := in.Document
	if id == "" {
		if d, ok, err := s.findHash(ctx, k, hash); err != nil {
			return res, err
		} else if ok {
			return AddResult{Document: d, Unchanged: true}, nil
		}
		id = documentID(in.Path, hash)
	}
	if !docPattern.MatchString(id) {
		return res, invalid("document id %q: use 1..128 letters, digits, '.', '-' or '_'", id)
	}
	old, oldChunks, err := s.store.Document(ctx, k, id)
	switch {
	case err == nil && old.Hash == hash && maps.Equal(old.Metadata, in.Metadata):
		return AddResult{Document: old, Unchanged: true}, nil
	case err != nil && !errors.Is(err, ErrNotFound):
		return res, err
	}
	chunks := Split(text, ct, coll.ChunkSize, coll.ChunkOverlap)
	if len(chunks) == 0 {
		return res, invalid("the document has no text to index (only white space)")
	}
	if coll.Chunks-int64(len(oldChunks))+int64(len(chunks)) > int64(s.cfg.maxChunks) {
		return res, fmt.Errorf("%w: collection %s would hold more than %d chunks", ErrLimit, k.ID(), s.cfg.maxChunks)
	}
	title := in.Title
	if title == "" {
		title = firstHeading(text, ct)
	}
	if title == "" {
		title = source
	}
	reuse := map[string][]float32{}
	for _, c := range oldChunks {
		reuse[c.Hash] = c.Vector
	}
	var todo []int
	for i := range chunks {
		h := sha256.Sum256([]byte(embedText(title, chunks[i])))
		chunks[i].Hash = hex.EncodeToString(h[:16])
		if v, ok := reuse[chunks[i].Hash]; ok {
			chunks[i].Vector = v
			continue
		}
		todo = append(todo, i)
	}
	for start := 0; start < len(todo); start += EmbedBatch {
		batch := todo[start:min(start+EmbedBatch, len(todo))]
		texts := make([]string, len(batch))
		for j, i := range batch {
			texts[j] = embedText(title, chunks[i])
		}
		vecs, _, err := s.emb.Embed(ctx, coll.EmbedModel, texts)
		if err != nil {
			return res, fmt.Errorf("embed: %w", err)
		}
		for j, i := range batch {
			if len(vecs[j]) != coll.Dimensions {
				return res, fmt.Errorf("%w: collection %s holds %d-dimensional vectors but its model now returns %d; did the gateway's default embedding model change? Create a new collection for the new model", ErrDimensions, k.ID(), coll.Dimensions, len(vecs[j]))
			}
			chunks[i].Vector = vecs[j]
		}
	}
	doc := Document{
		ID: id, Title: title, Source: source, ContentType: ct, Hash: hash, Size: int64(len(text)),
		Chunks: len(chunks), Metadata: in.Metadata, UpdatedAt: s.now().UTC(),
	}
	if err := s.store.PutDocument(ctx, k, doc, chunks); err != nil {
		return res, err
	}
	return AddResult{Document: doc, Embedded: len(todo)}, nil
}

// embedText is what is embedded for a chunk: its text under its document
// title and heading, which often name the topic the text only implies.
func embedText(title string, c Chunk) string {
	var b strings.Builder
	b.WriteString(title)
	if c.Heading != "" {
		b.WriteString("\n")
		b.WriteString(c.Heading)
	}
	b.WriteString("\n\n")
	b.WriteString(c.Text)
	return b.String()
}

func (s *Service) findHash(ctx context.Context, k Key, hash string) (Document, bool, error) {
	docs, err := s.store.Documents(ctx, k)
	if err != nil {
		return Document{}, false, err
	}
	for _, d := range docs {
		if d.Hash == hash {
			return d, true, nil
		}
	}
	return Document{}, false, nil
}

// text returns the document's text and its source, within the size limit.
func (s *Service) text(ctx context.Context, in AddInput) (string, string, error) {
	switch {
	case in.Content != "" && in.Path != "":
		return "", "", invalid("give content or path, not both")
	case in.Path != "":
		if in.AgentID == "" {
			return "", "", invalid("path needs agent_id: the agent whose workspace holds the file")
		}
		if s.read == nil {
			return "", "", invalid("this server cannot read workspace files into the knowledge base")
		}
		text, err := s.read(ctx, in.AgentID, in.Path, int64(s.cfg.maxDocBytes))
		if err != nil {
			return "", "", err
		}
		if strings.HasPrefix(text, "base64:") {
			return "", "", invalid("%s is a binary file; only text and Markdown can be added", in.Path)
		}
		if err := s.checkText(text); err != nil {
			return "", "", fmt.Errorf("%s: %w", in.Path, err)
		}
		return text, in.Path, nil
	}
	if err := s.checkText(in.Content); err != nil {
		return "", "", err
	}
	return in.Content, "text", nil
}

func (s *Service) checkText(text string) error {
	if len(text) > s.cfg.maxDocBytes {
		return invalid("the document is %d bytes; at most %d bytes (-knowledge-max-document-bytes) are accepted, split it into several documents", len(text), s.cfg.maxDocBytes)
	}
	if strings.TrimSpace(text) == "" {
		return invalid("the document is empty")
	}
	if !utf8.ValidString(text) {
		return invalid("the document is not UTF-8 text")
	}
	return nil
}

func contentType(ct, p string) (string, error) {
	switch ct {
	case TypeMarkdown, TypeText:
		return ct, nil
	case "":
		if p == "" {
			return TypeMarkdown, nil
		}
		switch strings.ToLower(path.Ext(p)) {
		case ".md", ".markdown":
			return TypeMarkdown, nil
		}
		return TypeText, nil
	}
	return "", invalid("content_type %q: use %q or %q", ct, TypeMarkdown, TypeText)
}

// documentID derives an id: from the path, so that adding a file again
// updates it, else from the text's hash — never from the title, which two
// different documents may share.
func documentID(p, hash string) string {
	var b strings.Builder
	for _, r := range strings.TrimPrefix(p, "/") {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	id := strings.Trim(b.String(), "._")
	if id == "" {
		return hash[:16]
	}
	if len(id) > 128 {
		id = id[len(id)-128:]
	}
	return id
}

func firstHeading(text, ct string) string {
	if ct != TypeMarkdown {
		return ""
	}
	for _, line := range strings.Split(text, "\n") {
		if _, title := headingOf(line); title != "" {
			return title
		}
	}
	return ""
}

// ListDocuments lists a collection's documents.
func (s *Service) ListDocuments(ctx context.Context, user, id string) ([]Document, error) {
	k, err := s.resolve(ctx, user, id)
	if err != nil {
		return nil, err
	}
	return s.store.Documents(ctx, k)
}

// DeleteDocument removes a document and its chunks.
func (s *Service) DeleteDocument(ctx context.Context, user, id, doc string) (int, error) {
	k, err := s.resolve(ctx, user, id)
	if err != nil {
		return 0, err
	}
	return s.store.DeleteDocument(ctx, k, doc)
}

// SearchInput is a search over one or more collections.
type SearchInput struct {
	Collections []string
	Query       string
	// K is the most hits; 0 means DefaultTopK.
	K int
	// MinScore nil means the collection model's default.
	MinScore *float64
	Filter   map[string]string
}

// Search embeds the query once per embedding model of the collections and
// returns the best hits of all, best first, with the threshold applied (the
// lowest of the collections' defaults when MinScore is nil).
func (s *Service) Search(ctx context.Context, user string, in SearchInput) ([]Hit, float64, error) {
	if strings.TrimSpace(in.Query) == "" {
		return nil, 0, invalid("query is empty")
	}
	if len(in.Query) > MaxQueryBytes {
		return nil, 0, invalid("query is %d bytes, at most %d", len(in.Query), MaxQueryBytes)
	}
	k := in.K
	if k == 0 {
		k = DefaultTopK
	}
	if k < 1 || k > MaxTopK {
		return nil, 0, invalid("k %d outside 1..%d", in.K, MaxTopK)
	}
	if in.MinScore != nil && (math.IsNaN(*in.MinScore) || *in.MinScore < 0 || *in.MinScore > 1) {
		return nil, 0, invalid("min_score %v outside 0..1", *in.MinScore)
	}
	if len(in.Collections) == 0 {
		return nil, 0, invalid("no collection to search")
	}
	// One query vector per model: group the collections by model.
	type group struct {
		keys []Key
		min  float64
	}
	groups := map[string]*group{}
	var order []string
	threshold := 1.0
	for _, id := range in.Collections {
		key, err := s.resolve(ctx, user, id)
		if err != nil {
			return nil, 0, err
		}
		c, err := s.store.Collection(ctx, key)
		if err != nil {
			return nil, 0, err
		}
		min := DefaultMinScoreFor(c)
		if in.MinScore != nil {
			min = *in.MinScore
		}
		threshold = math.Min(threshold, min)
		g := groups[c.EmbedModel]
		if g == nil {
			g = &group{min: min}
			groups[c.EmbedModel] = g
			order = append(order, c.EmbedModel)
		}
		g.keys = append(g.keys, key)
		g.min = math.Min(g.min, min)
	}
	var hits []Hit
	for _, model := range order {
		g := groups[model]
		vecs, _, err := s.emb.Embed(ctx, model, []string{in.Query})
		if err != nil {
			return nil, 0, fmt.Errorf("embed query: %w", err)
		}
		found, err := s.store.Search(ctx, Query{Readers: s.readers(ctx, user), Collections: g.keys, Vector: vecs[0], K: k, MinScore: g.min, Filter: in.Filter})
		if err != nil {
			return nil, 0, err
		}
		hits = append(hits, found...)
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits, threshold, nil
}

// DefaultMinScoreFor is DefaultMinScore, or DefaultHashMinScore for the
// offline embedder, whose scores run lower.
func DefaultMinScoreFor(c Collection) float64 {
	if c.Provider == "hash" || hashembed.IsModel(c.EmbedModel) {
		return DefaultHashMinScore
	}
	return DefaultMinScore
}
