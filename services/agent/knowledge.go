package agent

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/llmpb"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/knowledge"
	"github.com/wick-agent/wick/services/agent/internal/sandboxfs"
)

// Knowledge base defaults, re-exported for the programs that configure it.
const (
	DefaultKnowledgeChunkSize    = knowledge.DefaultChunkSize
	DefaultKnowledgeChunkOverlap = knowledge.DefaultChunkOverlap
	DefaultMaxDocumentBytes      = knowledge.DefaultMaxDocumentBytes
)

// WithKnowledgeDir keeps the knowledge base in dir (an append-only log
// replayed at start) when the service has no Redis; without it, and without
// Redis, the knowledge base lives in memory only.
func WithKnowledgeDir(dir string) Option { return func(o *options) { o.knowledgeDir = dir } }

// WithOrganisations maps users to the organisations whose knowledge
// collections they share: user → organisation names.
func WithOrganisations(orgs map[string][]string) Option {
	return func(o *options) { o.knowledge = append(o.knowledge, knowledge.WithOrganisations(orgs)) }
}

// WithKnowledgeChunking sets the default chunk size and overlap in bytes.
func WithKnowledgeChunking(size, overlap int) Option {
	return func(o *options) { o.knowledge = append(o.knowledge, knowledge.WithChunking(size, overlap)) }
}

// WithMaxDocumentBytes bounds one knowledge document.
func WithMaxDocumentBytes(n int) Option {
	return func(o *options) { o.knowledge = append(o.knowledge, knowledge.WithMaxDocumentBytes(n)) }
}

// KnowledgeConfig is the knowledge base's configuration as flags give it.
type KnowledgeConfig struct {
	// Dir keeps the embedded store; empty keeps it in memory (ignored with Redis).
	Dir string
	// Orgs maps users to organisations: "alice=acme+research,bob=acme".
	Orgs             string
	ChunkSize        int
	ChunkOverlap     int
	MaxDocumentBytes int
}

// DefaultKnowledgeConfig returns the defaults.
func DefaultKnowledgeConfig() KnowledgeConfig {
	return KnowledgeConfig{ChunkSize: DefaultKnowledgeChunkSize, ChunkOverlap: DefaultKnowledgeChunkOverlap, MaxDocumentBytes: DefaultMaxDocumentBytes}
}

// RegisterFlags defines the knowledge flags on fs, writing into c.
func (c *KnowledgeConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Dir, "knowledge-dir", c.Dir, "directory of the embedded knowledge base (kept across restarts); empty keeps it in memory; ignored with Redis, which then holds it")
	fs.StringVar(&c.Orgs, "knowledge-orgs", c.Orgs, "organisations whose knowledge collections users share: user=org1+org2,user2=org1")
	fs.IntVar(&c.ChunkSize, "knowledge-chunk-size", c.ChunkSize, "target size of a knowledge chunk in bytes")
	fs.IntVar(&c.ChunkOverlap, "knowledge-chunk-overlap", c.ChunkOverlap, "bytes repeated between consecutive chunks of a section")
	fs.IntVar(&c.MaxDocumentBytes, "knowledge-max-document-bytes", c.MaxDocumentBytes, "largest knowledge document; larger ones are refused (InvalidArgument)")
}

// Options returns the service options of c.
func (c KnowledgeConfig) Options() ([]Option, error) {
	orgs, err := ParseOrganisations(c.Orgs)
	if err != nil {
		return nil, fmt.Errorf("-knowledge-orgs: %w", err)
	}
	opts := []Option{WithKnowledgeChunking(c.ChunkSize, c.ChunkOverlap), WithMaxDocumentBytes(c.MaxDocumentBytes), WithOrganisations(orgs)}
	if c.Dir != "" {
		opts = append(opts, WithKnowledgeDir(c.Dir))
	}
	return opts, nil
}

// ParseOrganisations reads "user=org1+org2,user2=org1".
func ParseOrganisations(s string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, pair := range strings.Split(s, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		user, orgs, ok := strings.Cut(pair, "=")
		if !ok || user == "" || orgs == "" {
			return nil, fmt.Errorf("%q: want user=org1+org2", pair)
		}
		for _, o := range strings.Split(orgs, "+") {
			if err := knowledge.ValidName("organisation", o); err != nil {
				return nil, err
			}
			out[user] = append(out[user], o)
		}
	}
	return out, nil
}

// openKnowledge builds the knowledge base over the store the service's
// state calls for: Redis when replicas share state, else the embedded log
// in the knowledge dir, else memory. The returned func closes what it opened.
func (s *Service) openKnowledge(ctx context.Context) (*knowledge.Service, func() error, error) {
	var store knowledge.Store
	closeStore := func() error { return nil }
	switch {
	case s.st.Redis != nil:
		rs, err := knowledge.NewRedisStore(ctx, s.st.Redis, s.st.prefix, s.logger)
		if err != nil {
			return nil, nil, err
		}
		store, closeStore = rs, rs.Close
	case s.cfg.knowledgeDir != "":
		fs, err := knowledge.OpenFileStore(s.cfg.knowledgeDir, s.logger)
		if err != nil {
			return nil, nil, err
		}
		store, closeStore = fs, fs.Close
	default:
		store = knowledge.NewMemoryStore()
	}
	opts := append([]knowledge.Option{knowledge.WithFileReader(s.readForKnowledge)}, s.cfg.knowledge...)
	kb, err := knowledge.NewService(store, gatewayEmbedder{s.llm, s.recordUsage}, opts...)
	if err != nil {
		_ = closeStore()
		return nil, nil, fmt.Errorf("agent: knowledge: %w", err)
	}
	return kb, closeStore, nil
}

// readForKnowledge reads a workspace file of one of the caller's agents.
func (s *Service) readForKnowledge(ctx context.Context, agentID, path string, max int64) (string, error) {
	fs, _, err := s.fsForReads(ctx, agentID, max)
	if err != nil {
		return "", err
	}
	text, err := fs.ReadFile(ctx, path)
	if errors.Is(err, sandboxfs.ErrTooLarge) {
		return "", fmt.Errorf("%w: %s is larger than %d bytes, the most a document may have", knowledge.ErrInvalid, path, max)
	}
	return text, err
}

// gatewayEmbedder embeds through the LLM gateway's Embed RPC and records
// each batch's usage on KnowledgeAgent.
type gatewayEmbedder struct {
	llm    llmv1.LLMServiceClient
	record func(ctx context.Context, user, agentID, provider, model string, u llm.Usage)
}

func (g gatewayEmbedder) Embed(ctx context.Context, model string, texts []string) ([][]float32, string, error) {
	req := &llmv1.EmbedRequest{Texts: texts}
	if model != "" {
		req.Model = &llmv1.ModelSpec{Spec: model}
	}
	res, err := g.llm.Embed(ctx, req)
	if err != nil {
		return nil, "", err
	}
	if user, ok := identity.User(ctx); ok {
		g.record(ctx, user, KnowledgeAgent, res.GetProvider(), res.GetModel(), llmpb.UsageFromProto(res.GetUsage()))
	}
	if len(res.GetEmbeddings()) != len(texts) {
		return nil, "", fmt.Errorf("the LLM gateway returned %d vectors for %d texts", len(res.GetEmbeddings()), len(texts))
	}
	out := make([][]float32, len(texts))
	for i, e := range res.GetEmbeddings() {
		out[i] = e.GetVector()
	}
	return out, res.GetProvider(), nil
}
