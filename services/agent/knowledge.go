package agent

import (
	"context"
	"errors"
	"fmt"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
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
	kb, err := knowledge.NewService(store, gatewayEmbedder{s.llm}, opts...)
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

// gatewayEmbedder embeds through the LLM gateway's Embed RPC.
type gatewayEmbedder struct {
	llm llmv1.LLMServiceClient
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
	if len(res.GetEmbeddings()) != len(texts) {
		return nil, "", fmt.Errorf("the LLM gateway returned %d vectors for %d texts", len(res.GetEmbeddings()), len(texts))
	}
	out := make([][]float32, len(texts))
	for i, e := range res.GetEmbeddings() {
		out[i] = e.GetVector()
	}
	return out, res.GetProvider(), nil
}
