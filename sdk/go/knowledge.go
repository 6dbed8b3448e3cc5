package wick

import (
	"context"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// Types of the knowledge base.
type (
	// Collection is a knowledge collection: documents split into chunks
	// and embedded by one embedding model.
	Collection = agentv1.Collection
	// Document is one document of a collection.
	Document = agentv1.KnowledgeDocument
	// Hit is one chunk a search found, with its score and source.
	Hit = agentv1.KnowledgeHit
	// AddedDocument is what AddDocument did: the document as stored, whether
	// its text was already there, and how many chunks were embedded.
	AddedDocument = agentv1.AddDocumentResponse
)

// NewDocument is a document to add: Content, or Path in AgentID's workspace.
type NewDocument struct {
	// ID is the document's id; empty derives one from Path, Title or the text.
	ID    string
	Title string
	// Content is the text (Markdown unless ContentType says "text").
	Content string
	// Path and AgentID name a workspace file instead of Content.
	Path, AgentID string
	// ContentType is "markdown" or "text"; empty guesses from Path.
	ContentType string
	// Metadata are key/value pairs a search can filter on.
	Metadata map[string]string
}

// CreateCollection creates a collection: c.Name is required; c.Org makes
// it an organisation's collection; c.EmbedModel picks the embedding model.
func (c *Client) CreateCollection(ctx context.Context, coll *Collection) (*Collection, error) {
	res, err := c.api.CreateCollection(ctx, &agentv1.CreateCollectionRequest{Collection: coll})
	if err != nil {
		return nil, err
	}
	return res.GetCollection(), nil
}

// ListCollections lists the caller's and their organisations' collections.
func (c *Client) ListCollections(ctx context.Context) ([]*Collection, error) {
	res, err := c.api.ListCollections(ctx, &agentv1.ListCollectionsRequest{})
	if err != nil {
		return nil, err
	}
	return res.GetCollections(), nil
}

// DeleteCollection removes a collection with all its documents.
func (c *Client) DeleteCollection(ctx context.Context, collection string) error {
	_, err := c.api.DeleteCollection(ctx, &agentv1.DeleteCollectionRequest{Collection: collection})
	return err
}

// AddDocument chunks, embeds and stores a document; adding the same text
// again embeds nothing.
func (c *Client) AddDocument(ctx context.Context, collection string, d NewDocument) (*AddedDocument, error) {
	return c.api.AddDocument(ctx, &agentv1.AddDocumentRequest{
		Collection: collection, Document: d.ID, Title: d.Title, Content: d.Content, Path: d.Path,
		AgentId: d.AgentID, ContentType: d.ContentType, Metadata: d.Metadata,
	})
}

// ListDocuments lists a collection's documents.
func (c *Client) ListDocuments(ctx context.Context, collection string) ([]*Document, error) {
	res, err := c.api.ListDocuments(ctx, &agentv1.ListDocumentsRequest{Collection: collection})
	if err != nil {
		return nil, err
	}
	return res.GetDocuments(), nil
}

// DeleteDocument removes a document and its chunks, and says how many
// chunks went.
func (c *Client) DeleteDocument(ctx context.Context, collection, document string) (int, error) {
	res, err := c.api.DeleteDocument(ctx, &agentv1.DeleteDocumentRequest{Collection: collection, Document: document})
	if err != nil {
		return 0, err
	}
	return int(res.GetDeletedChunks()), nil
}

// SearchOption refines a Search.
type SearchOption func(*agentv1.SearchKnowledgeRequest)

// TopK asks for at most k hits (1..100; default 5).
func TopK(k int) SearchOption {
	return func(r *agentv1.SearchKnowledgeRequest) { n := int32(k); r.K = &n }
}

// MinScore keeps hits scoring at least s (0..1; default the collection
// model's: 0.7, or 0.3 for the offline wick-hash models).
func MinScore(s float64) SearchOption {
	return func(r *agentv1.SearchKnowledgeRequest) { r.MinScore = &s }
}

// Filter keeps hits of documents whose metadata has every pair of m.
func Filter(m map[string]string) SearchOption {
	return func(r *agentv1.SearchKnowledgeRequest) { r.Filter = m }
}

// Search returns a collection's chunks nearest in meaning to query, best first.
func (c *Client) Search(ctx context.Context, collection, query string, opts ...SearchOption) ([]*Hit, error) {
	req := &agentv1.SearchKnowledgeRequest{Collection: collection, Query: query}
	for _, o := range opts {
		o(req)
	}
	res, err := c.api.SearchKnowledge(ctx, req)
	if err != nil {
		return nil, err
	}
	return res.GetHits(), nil
}
