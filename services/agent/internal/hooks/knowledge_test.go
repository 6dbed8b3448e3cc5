package hooks_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/hashembed"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/knowledge"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// hashEmbedder embeds in-process with the offline model the gateway serves.
type hashEmbedder struct{ e *hashembed.Embedder }

func (h hashEmbedder) Embed(_ context.Context, _ string, texts []string) ([][]float32, string, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = h.e.Embed(t)
	}
	return out, "hash", nil
}

const kbUser = "alice"

// newKnowledgeBase returns a knowledge base with kbUser's collection "docs"
// holding two documents.
func newKnowledgeBase(t *testing.T) *knowledge.Service {
	t.Helper()
	e, _ := hashembed.New(hashembed.DefaultDimensions)
	kb, err := knowledge.NewService(knowledge.NewMemoryStore(), hashEmbedder{e})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := kb.CreateCollection(ctx, kbUser, "", knowledge.Collection{Key: knowledge.Key{Name: "docs"}}); err != nil {
		t.Fatal(err)
	}
	for id, text := range map[string]string{
		"redis":   "# Redis\n\nSet -redis-addr so that every agent replica shares threads, runs and the knowledge base through Redis.",
		"sandbox": "# Sandbox\n\nEach sandbox container drops all Linux capabilities and runs without a network.",
	} {
		if _, err := kb.AddDocument(ctx, kbUser, knowledge.AddInput{Collection: "docs", Document: id, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	return kb
}

func TestKnowledgeHookInjectsSourcesAndReportsThem(t *testing.T) {
	t.Parallel()
	h := hooks.NewKnowledgeHook(newKnowledgeBase(t), []string{"docs"}, 0, nil)
	var events []loop.StreamEvent
	model := &recordingModel{}
	cfg := &loop.AgentConfig{SystemPrompt: "You help.", Collections: []string{"docs"}}
	r := loop.NewRunner(cfg, model, []loop.Hook{h}, nil)
	state := &loop.AgentState{ThreadID: "t"}
	ctx := identity.WithUser(context.Background(), kbUser)
	err := r.Run(ctx, "run", state, []llm.Message{{Role: llm.RoleUser, Content: "How do agent replicas share state with Redis?"}},
		func(ev loop.StreamEvent) { events = append(events, ev) }, func(context.Context, *loop.AgentState) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	sys := model.first[0].Content
	if !strings.Contains(sys, "<knowledge>") || !strings.Contains(sys, "[1] Redis") || strings.Contains(sys, "Sandbox") {
		t.Fatalf("system message:\n%s", sys)
	}
	var got []string
	for _, ev := range events {
		if ev.Event() == "on_knowledge_retrieval" {
			for _, s := range ev.DataMap()["sources"].([]any) {
				src := s.(map[string]any)
				got = append(got, fmt.Sprintf("%v:%v", src["n"], src["document"]))
			}
		}
	}
	if strings.Join(got, ",") != "1:redis" {
		t.Fatalf("retrieval event sources %v", got)
	}
}

func TestKnowledgeHookNeedsAUser(t *testing.T) {
	t.Parallel()
	h := hooks.NewKnowledgeHook(newKnowledgeBase(t), []string{"docs"}, 0, nil)
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "redis replicas"}}
	out, err := h.ModifyRequest(context.Background(), msgs)
	if err != nil || len(out) != 1 {
		t.Fatalf("without a user the request must pass unchanged: %v %v", out, err)
	}
}

// recordingModel answers "ok" and keeps the first request's messages.
type recordingModel struct {
	first []llm.Message
}

func (m *recordingModel) Stream(_ context.Context, req llm.Request, emit llm.Emit) (llm.Result, error) {
	if m.first == nil {
		m.first = req.Messages
	}
	_ = emit(llm.Event{Delta: "ok"})
	return llm.Result{Content: "ok", FinishReason: llm.FinishStop}, nil
}

// countingSearcher counts the searches that reach the knowledge base.
type countingSearcher struct {
	hooks.KnowledgeSearcher
	n int
}

func (c *countingSearcher) Search(ctx context.Context, user string, in knowledge.SearchInput) ([]knowledge.Hit, float64, error) {
	c.n++
	return c.KnowledgeSearcher.Search(ctx, user, in)
}

// TestKnowledgeHookSearchesOncePerQuery: the turns of one user message
// (tool rounds) reuse the first search; a new message searches again.
func TestKnowledgeHookSearchesOncePerQuery(t *testing.T) {
	t.Parallel()
	kb := &countingSearcher{KnowledgeSearcher: newKnowledgeBase(t)}
	h := hooks.NewKnowledgeHook(kb, []string{"docs"}, 0, nil)
	ctx := identity.WithUser(context.Background(), kbUser)
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "How do replicas share state with Redis?"}}
	for turn := range 3 {
		out, err := h.ModifyRequest(ctx, msgs)
		if err != nil || !strings.Contains(out[0].Content, "<knowledge>") {
			t.Fatalf("turn %d: %v %v", turn, out, err)
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: "thinking"})
	}
	if kb.n != 1 {
		t.Fatalf("%d searches for one user message, want 1", kb.n)
	}
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: "And the sandbox network?"})
	if _, err := h.ModifyRequest(ctx, msgs); err != nil || kb.n != 2 {
		t.Fatalf("a new message: %d searches, %v", kb.n, err)
	}
}
