package hooks

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/knowledge"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// ToolSearchKnowledge is the tool the knowledge hook registers.
const ToolSearchKnowledge = "search_knowledge"

// Bounds of what the knowledge hook searches with and injects.
const (
	// contextBytes is how much of the message before the latest user
	// message joins the query: enough to resolve "and what about X?".
	contextBytes = 300
	// snippetBytes bounds a source's snippet in the retrieval event.
	snippetBytes = 240
)

// KnowledgeSearcher is the slice of the knowledge base the hook uses.
type KnowledgeSearcher interface {
	Search(ctx context.Context, user string, in knowledge.SearchInput) ([]knowledge.Hit, float64, error)
}

// KnowledgeHook searches the agent's collections before each model call with
// the latest user message and a little recent context (by default the top 5
// hits scoring at least 0.7), injects the hits as a <knowledge> section
// of the system message with numbered sources, and reports them as an
// on_knowledge_retrieval event. It also gives the model search_knowledge for
// queries of its own.
type KnowledgeHook struct {
	loop.BaseHook
	kb          KnowledgeSearcher
	collections []string
	k           int
	minScore    *float64
	// lastQuery and lastHits keep a turn's retrieval for the next turns of
	// the same user message: the query has not changed, so neither have the
	// hits, and the event is not repeated.
	lastQuery string
	lastHits  []knowledge.Hit
}

// NewKnowledgeHook returns the hook for an agent's collections; k 0 and
// minScore nil take the defaults.
func NewKnowledgeHook(kb KnowledgeSearcher, collections []string, k int, minScore *float64) *KnowledgeHook {
	return &KnowledgeHook{kb: kb, collections: collections, k: k, minScore: minScore}
}

// Name implements loop.Hook.
func (h *KnowledgeHook) Name() string { return NameKnowledge }

// Phases implements loop.Hook.
func (h *KnowledgeHook) Phases() []string { return phasesOf(NameKnowledge) }

// BeforeAgent registers search_knowledge.
func (h *KnowledgeHook) BeforeAgent(_ context.Context, state *loop.AgentState) error {
	loop.RegisterToolOnState(state, &loop.FuncTool{
		ToolName: ToolSearchKnowledge,
		ToolDesc: "Search the knowledge base (collections: " + strings.Join(h.collections, ", ") + ") by meaning. " +
			"Returns the best matching passages with their sources and scores.",
		ToolParams: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"query": map[string]any{"type": "string", "description": "What to look for, in words"},
				"k":     map[string]any{"type": "integer", "description": "How many passages, 1..100 (default 5)"},
			},
			"required": []string{"query"},
		},
		Fn: h.searchTool,
	})
	return nil
}

func (h *KnowledgeHook) searchTool(ctx context.Context, args map[string]any) (string, error) {
	q, _ := args["query"].(string)
	k := h.k
	if f, ok := args["k"].(float64); ok {
		k = int(f)
	}
	hits, err := h.search(ctx, q, k)
	if err != nil {
		return "", err
	}
	if len(hits) == 0 {
		return "No passage of the knowledge base matches.", nil
	}
	return formatHits(hits), nil
}

func (h *KnowledgeHook) search(ctx context.Context, query string, k int) ([]knowledge.Hit, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	hits, _, err := h.kb.Search(ctx, user, knowledge.SearchInput{Collections: h.collections, Query: query, K: k, MinScore: h.minScore})
	return hits, err
}

// ModifyRequest implements loop.Hook.
func (h *KnowledgeHook) ModifyRequest(ctx context.Context, msgs []llm.Message) ([]llm.Message, error) {
	query := retrievalQuery(msgs)
	if query == "" {
		return msgs, nil
	}
	if query != h.lastQuery {
		hits, err := h.search(ctx, query, h.k)
		if err != nil {
			// The run goes on without knowledge; the client sees why.
			loop.Emit(ctx, loop.StreamEvent{Name: NameKnowledge, Data: knowledgeData(&agentv1.KnowledgeRetrievalData{Query: query, Error: proto.String(err.Error())})})
			return msgs, nil
		}
		h.lastQuery, h.lastHits = query, hits
		loop.Emit(ctx, loop.StreamEvent{Name: NameKnowledge, Data: knowledgeData(&agentv1.KnowledgeRetrievalData{Query: query, Sources: sources(hits)})})
	}
	if len(h.lastHits) == 0 {
		return msgs, nil
	}
	return loop.AppendSystem(msgs, "<knowledge>\nPassages from the knowledge base that may help; cite them as [n] when you use them.\n\n"+formatHits(h.lastHits)+"</knowledge>"), nil
}

// retrievalQuery is the latest user message, preceded by the end of the
// message before it, which often says what a short follow-up refers to.
func retrievalQuery(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != llm.RoleUser {
			continue
		}
		q := strings.TrimSpace(msgs[i].Content)
		if q == "" {
			return ""
		}
		if i > 0 && msgs[i-1].Role != llm.RoleSystem {
			if prev := strings.TrimSpace(msgs[i-1].Content); prev != "" {
				q = Clip(prev, contextBytes, true) + "\n" + q
			}
		}
		return Clip(q, knowledge.MaxQueryBytes, true)
	}
	return ""
}

// Clip keeps at most n bytes of s: the end when fromEnd, else the start,
// on a rune boundary.
func Clip(s string, n int, fromEnd bool) string {
	if len(s) <= n {
		return s
	}
	if fromEnd {
		s = s[len(s)-n:]
		for len(s) > 0 && s[0]&0xC0 == 0x80 {
			s = s[1:]
		}
		return s
	}
	s = s[:n]
	for len(s) > 0 && s[len(s)-1]&0xC0 == 0x80 {
		s = s[:len(s)-1]
	}
	return s
}

func formatHits(hits []knowledge.Hit) string {
	var b strings.Builder
	for i, hit := range hits {
		fmt.Fprintf(&b, "[%d] %s", i+1, hit.Title)
		if hit.Chunk.Heading != "" {
			fmt.Fprintf(&b, " — %s", hit.Chunk.Heading)
		}
		fmt.Fprintf(&b, " (%s, score %.2f)\n%s\n\n", hit.ChunkID(), hit.Score, hit.Chunk.Text)
	}
	return b.String()
}

// sources is the event's view of the hits: KnowledgeHit's JSON names, the
// text cut to a snippet, and n as cited in the prompt.
func sources(hits []knowledge.Hit) []*agentv1.KnowledgeSource {
	out := make([]*agentv1.KnowledgeSource, len(hits))
	for i, hit := range hits {
		out[i] = &agentv1.KnowledgeSource{
			N: int32(i + 1), ChunkId: hit.ChunkID(), Collection: proto.String(hit.Collection.ID()), Document: proto.String(hit.Document),
			Title: proto.String(hit.Title), Heading: proto.String(hit.Chunk.Heading), Source: proto.String(hit.Source), Score: hit.Score,
			Text: proto.String(Clip(hit.Chunk.Text, snippetBytes, false)),
		}
	}
	return out
}

// knowledgeData is an on_knowledge_retrieval event's data.
func knowledgeData(d *agentv1.KnowledgeRetrievalData) *agentv1.RunEventData {
	return &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnKnowledgeRetrieval{OnKnowledgeRetrieval: d}}
}
