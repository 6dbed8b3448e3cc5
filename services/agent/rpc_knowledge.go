package agent

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/knowledge"
)

// CreateCollection implements agentv1.AgentServiceServer.
func (s *Service) CreateCollection(ctx context.Context, req *agentv1.CreateCollectionRequest) (*agentv1.CreateCollectionResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	in := req.GetCollection()
	if in == nil {
		return nil, invalid("collection", "required")
	}
	c, err := s.kb.CreateCollection(ctx, user, in.GetOrg(), knowledge.Collection{
		Key: knowledge.Key{Name: in.GetName()}, Description: in.GetDescription(), EmbedModel: in.GetEmbedModel(),
		ChunkSize: int(in.GetChunkSize()), ChunkOverlap: int(in.GetChunkOverlap()),
	})
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	return &agentv1.CreateCollectionResponse{Collection: collectionToProto(c)}, nil
}

// ListCollections implements agentv1.AgentServiceServer.
func (s *Service) ListCollections(ctx context.Context, _ *agentv1.ListCollectionsRequest) (*agentv1.ListCollectionsResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := s.kb.ListCollections(ctx, user)
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	out := &agentv1.ListCollectionsResponse{Collections: make([]*agentv1.Collection, len(cs))}
	for i, c := range cs {
		out.Collections[i] = collectionToProto(c)
	}
	return out, nil
}

// DeleteCollection implements agentv1.AgentServiceServer.
func (s *Service) DeleteCollection(ctx context.Context, req *agentv1.DeleteCollectionRequest) (*agentv1.DeleteCollectionResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.kb.DeleteCollection(ctx, user, req.GetCollection()); err != nil {
		return nil, rpcErr(ctx, err)
	}
	return &agentv1.DeleteCollectionResponse{}, nil
}

// AddDocument implements agentv1.AgentServiceServer.
func (s *Service) AddDocument(ctx context.Context, req *agentv1.AddDocumentRequest) (*agentv1.AddDocumentResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.kb.AddDocument(ctx, user, knowledge.AddInput{
		Collection: req.GetCollection(), Document: req.GetDocument(), Title: req.GetTitle(), Content: req.GetContent(),
		Path: req.GetPath(), AgentID: req.GetAgentId(), ContentType: req.GetContentType(), Metadata: req.GetMetadata(),
	})
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	key := req.GetCollection()
	return &agentv1.AddDocumentResponse{Document: documentToProto(key, res.Document), Unchanged: res.Unchanged, EmbeddedChunks: int32(res.Embedded)}, nil
}

// ListDocuments implements agentv1.AgentServiceServer.
func (s *Service) ListDocuments(ctx context.Context, req *agentv1.ListDocumentsRequest) (*agentv1.ListDocumentsResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	docs, err := s.kb.ListDocuments(ctx, user, req.GetCollection())
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	out := &agentv1.ListDocumentsResponse{Documents: make([]*agentv1.KnowledgeDocument, len(docs))}
	for i, d := range docs {
		out.Documents[i] = documentToProto(req.GetCollection(), d)
	}
	return out, nil
}

// DeleteDocument implements agentv1.AgentServiceServer.
func (s *Service) DeleteDocument(ctx context.Context, req *agentv1.DeleteDocumentRequest) (*agentv1.DeleteDocumentResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	n, err := s.kb.DeleteDocument(ctx, user, req.GetCollection(), req.GetDocument())
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	return &agentv1.DeleteDocumentResponse{DeletedChunks: int32(n)}, nil
}

// SearchKnowledge implements agentv1.AgentServiceServer.
func (s *Service) SearchKnowledge(ctx context.Context, req *agentv1.SearchKnowledgeRequest) (*agentv1.SearchKnowledgeResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	in := knowledge.SearchInput{Collections: []string{req.GetCollection()}, Query: req.GetQuery(), MinScore: req.MinScore, Filter: req.GetFilter()}
	if req.K != nil {
		in.K = int(req.GetK())
		if in.K <= 0 {
			return nil, invalid("k", "must be between 1 and 100")
		}
	}
	hits, min, err := s.kb.Search(ctx, user, in)
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	out := &agentv1.SearchKnowledgeResponse{Hits: make([]*agentv1.KnowledgeHit, len(hits)), MinScore: min}
	for i, h := range hits {
		out.Hits[i] = &agentv1.KnowledgeHit{
			ChunkId: h.ChunkID(), Collection: h.Collection.ID(), Document: h.Document, Title: h.Title,
			Heading: h.Chunk.Heading, Source: h.Source, Score: h.Score, Text: h.Chunk.Text, Metadata: h.Metadata,
		}
	}
	return out, nil
}

func collectionToProto(c knowledge.Collection) *agentv1.Collection {
	org, _ := c.Key.Owner.Org()
	return &agentv1.Collection{
		Collection: c.Key.ID(), Name: c.Key.Name, Org: org, Description: c.Description, EmbedModel: c.EmbedModel,
		Dimensions: int32(c.Dimensions), ChunkSize: int32(c.ChunkSize), ChunkOverlap: int32(c.ChunkOverlap),
		DocumentCount: c.Documents, ChunkCount: c.Chunks, CreatedAt: timestamppb.New(c.CreatedAt),
	}
}

func documentToProto(collection string, d knowledge.Document) *agentv1.KnowledgeDocument {
	return &agentv1.KnowledgeDocument{
		Document: d.ID, Collection: collection, Title: d.Title, Source: d.Source, ContentType: d.ContentType,
		ContentHash: d.Hash, SizeBytes: d.Size, ChunkCount: int32(d.Chunks), Metadata: d.Metadata, UpdatedAt: timestamppb.New(d.UpdatedAt),
	}
}
