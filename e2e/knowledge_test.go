package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/wickserver/suite"
)

// kbTopics are the corpus: one Markdown file per topic, each on its own
// subject, so that a question has one right file.
var kbTopics = []string{
	"redis replicas share threads runs and the knowledge base through a redis stream",
	"sandbox containers drop every linux capability and run without a network",
	"the llm gateway retries a provider on 429 and 5xx with exponential backoff and jitter",
	"tomato plants need six hours of sun and deep watering twice a week",
	"sourdough bread rises overnight in a cool kitchen before baking at 250 degrees",
	"the marathon route crosses three bridges and ends in the old harbour",
	"invoices are paid by the finance team within thirty days of receipt",
	"the office coffee machine is descaled every friday afternoon",
	"bicycle chains last longer when cleaned and oiled every two hundred kilometres",
	"the quarterly planning meeting takes place on the first monday of the quarter",
	"passwords are rotated every ninety days and must be at least sixteen characters",
	"the rooftop garden grows basil mint and rosemary in raised beds",
	"penguins huddle together to survive antarctic winter storms",
	"the telescope on the hill observes saturn rings on clear summer nights",
	"chess openings like the sicilian defence reward careful preparation",
	"the library lends e-readers for three weeks with one renewal",
	"volcanic soil makes the island vineyards produce mineral white wines",
	"the support desk answers tickets within four business hours",
	"guitar strings should be changed every three months for a bright tone",
	"solar panels on the warehouse roof cover half its electricity",
	"the ferry to the island leaves every hour from pier seven",
	"parental leave requests go to human resources eight weeks ahead",
	"the museum closes on mondays and opens late on thursdays",
	"kubernetes manifests are rendered with kustomize overlays per environment",
	"honey bees communicate the direction of flowers with a waggle dance",
	"the city marathon registration closes at the end of march",
	"server rooms are kept at eighteen to twenty seven degrees celsius",
	"the bakery sells rye loaves only on saturdays",
	"holiday requests go to your manager two weeks ahead",
	"laptops are replaced by it every three years",
}

type kbClient struct {
	t   *testing.T
	url string
}

func (c kbClient) do(method, path, token string, body any) httpResult {
	c.t.Helper()
	if body == nil {
		return call(c.t, method, c.url+path, token, nil)
	}
	return call(c.t, method, c.url+path, token, jsonBody(body))
}

func (c kbClient) ok(method, path, token string, body any) map[string]any {
	c.t.Helper()
	r := c.do(method, path, token, body)
	if r.code != 200 {
		c.t.Fatalf("%s %s = %d %s", method, path, r.code, r)
	}
	var out map[string]any
	if err := json.Unmarshal(r.body, &out); err != nil {
		c.t.Fatal(err)
	}
	return out
}

// kbOrgs puts alice and bob in acme the way a token file does: the gateway
// signs the organisations with each user's identity (the Go SDK's tests use
// the agent's -knowledge-orgs mapping instead).
func kbOrgs(dir string) func(*suite.Config) {
	return func(c *suite.Config) {
		c.Gateway.Orgs = map[string][]string{"alice": {"acme"}, "bob": {"acme"}}
		if dir != "" {
			c.AgentOptions = append(c.AgentOptions, agent.WithKnowledgeDir(dir))
		}
	}
}

// TestKnowledgeRetrievalInTheLoop ingests a corpus of Markdown files, asks a
// scripted agent a question whose answer is in one of them, and checks the
// sources the knowledge hook injected and reported; then ownership,
// organisation sharing and bad input, all through the gateway's REST API.
func TestKnowledgeRetrievalInTheLoop(t *testing.T) {
	env := startWick(t, kbOrgs(""))
	c := kbClient{t, env.url}

	c.ok("POST", "/knowledge/collections", aliceToken, map[string]any{"name": "handbook", "description": "how things work"})
	for i, topic := range kbTopics {
		title := strings.Join(strings.Fields(topic)[:3], " ")
		md := fmt.Sprintf("# %s\n\n## Summary\n\n%s.\n\n## Notes\n\nFile %d of the handbook.\n", title, topic, i)
		if i == 0 {
			// One file comes from the agent's workspace.
			c.ok("PUT", "/agents/default/files/write", aliceToken, map[string]any{"path": "/workspace/redis.md", "content": md})
			r := c.ok("POST", "/knowledge/collections/handbook/documents", aliceToken, map[string]any{"path": "/workspace/redis.md", "agent_id": "default"})
			if doc := r["document"].(map[string]any); doc["document"] != "workspace_redis.md" || doc["source"] != "/workspace/redis.md" {
				t.Fatalf("workspace document %v", doc)
			}
			continue
		}
		c.ok("POST", "/knowledge/collections/handbook/documents", aliceToken, map[string]any{"document": fmt.Sprintf("topic%02d", i), "content": md})
	}
	docs := c.ok("GET", "/knowledge/collections/handbook/documents", aliceToken, nil)["documents"].([]any)
	if len(docs) != len(kbTopics) {
		t.Fatalf("%d documents listed, want %d", len(docs), len(kbTopics))
	}

	c.ok("POST", "/agents", aliceToken, map[string]any{"agent_id": "librarian", "model": "script:kb", "collections": []string{"handbook"}})
	resp := openSSE(t, t.Context(), "POST", env.url+"/agents/librarian/stream", aliceToken,
		jsonBody(userMessage("How do agent replicas share threads and the knowledge base?", nil)))
	frames := readEvents(t, resp.Body)
	oa := newOpenAPIChecker(t, env.url)
	for _, f := range frames {
		oa.event("RunEvent", f) // the retrieval event is what the document says
	}
	run := decodeRun(t, frames)
	ev := run.find("on_knowledge_retrieval", "")
	if ev == nil {
		t.Fatalf("no on_knowledge_retrieval event: %+v", run.frames)
	}
	var got []string
	for _, s := range ev.GetData().GetStructValue().GetFields()["sources"].GetListValue().GetValues() {
		got = append(got, s.GetStructValue().GetFields()["document"].GetStringValue())
	}
	if len(got) == 0 || got[0] != "workspace_redis.md" {
		t.Fatalf("sources %v: the Redis file should come first", got)
	}
	for _, d := range got {
		if d == "topic03" || d == "topic12" { // tomatoes, penguins
			t.Fatalf("sources %v include an unrelated file", got)
		}
	}
	if !strings.Contains(run.text(), "[1]") {
		t.Errorf("answer %q", run.text())
	}

	// The model's own query, through the search_knowledge tool.
	c.ok("POST", "/agents", aliceToken, map[string]any{"agent_id": "researcher", "model": "script:kbtool", "collections": []string{"handbook"}})
	resp = openSSE(t, t.Context(), "POST", env.url+"/agents/researcher/stream", aliceToken, jsonBody(userMessage("Look it up.", nil)))
	toolRun := decodeRun(t, readEvents(t, resp.Body))
	end := toolRun.find("on_tool_end", "search_knowledge")
	if end == nil {
		t.Fatalf("no search_knowledge call: %+v", toolRun.frames)
	}
	out := end.GetData().GetStructValue().GetFields()["output"].GetStringValue()
	if !strings.HasPrefix(out, "[1] ") || !strings.Contains(out, "handbook/topic21#") {
		t.Fatalf("search_knowledge output %q", out)
	}

	// Explicit search: hits with scores and sources.
	hits := c.ok("POST", "/knowledge/collections/handbook/search", aliceToken, map[string]any{"query": "who do I ask for parental leave?", "k": 3})["hits"].([]any)
	if len(hits) == 0 || hits[0].(map[string]any)["document"] != "topic21" {
		t.Fatalf("search hits %v", hits)
	}

	// Bob cannot see or search Alice's collection: it does not exist for him.
	for _, r := range []httpResult{
		c.do("GET", "/knowledge/collections/handbook/documents", bobToken, nil),
		c.do("POST", "/knowledge/collections/handbook/search", bobToken, map[string]any{"query": "redis"}),
		c.do("DELETE", "/knowledge/collections/handbook", bobToken, nil),
	} {
		if r.code != 404 {
			t.Fatalf("bob on alice's collection: %d %s", r.code, r)
		}
	}
	if cs := c.ok("GET", "/knowledge/collections", bobToken, nil)["collections"]; cs != nil && len(cs.([]any)) != 0 {
		t.Fatalf("bob lists %v", cs)
	}

	// Organisation sharing: Alice's acme collection is Bob's too.
	c.ok("POST", "/knowledge/collections", aliceToken, map[string]any{"name": "policies", "org": "acme"})
	c.ok("POST", "/knowledge/collections/acme.policies/documents", aliceToken, map[string]any{"document": "expenses", "content": "# Expenses\n\nTravel expenses are approved by the finance team within five days."})
	hits = c.ok("POST", "/knowledge/collections/acme.policies/search", bobToken, map[string]any{"query": "who approves travel expenses?"})["hits"].([]any)
	if len(hits) != 1 || hits[0].(map[string]any)["collection"] != "acme.policies" {
		t.Fatalf("bob in acme: %v", hits)
	}

	// Bad input, each refused with a status that says what was wrong.
	big := strings.Repeat("x", 9<<20)
	if r := call(t, "PUT", env.url+"/agents/default/files/raw/"+url.PathEscape("workspace/big.md"), aliceToken, strings.NewReader(big)); r.code != 200 {
		t.Fatalf("upload: %d %s", r.code, r)
	}
	for _, tc := range []struct {
		name, method, path string
		body               any
		code               int
		says               string
	}{
		{"empty document", "POST", "/knowledge/collections/handbook/documents", map[string]any{"content": " \n"}, 400, "empty"},
		{"document over -knowledge-max-document-bytes", "POST", "/knowledge/collections/handbook/documents", map[string]any{"path": "/workspace/big.md", "agent_id": "default"}, 400, "larger than"},
		{"50 MB body", "POST", "/knowledge/collections/handbook/documents", map[string]any{"content": strings.Repeat("y", 50<<20)}, 413, ""},
		{"k 0", "POST", "/knowledge/collections/handbook/search", map[string]any{"query": "x", "k": 0}, 400, "k"},
		{"k 101", "POST", "/knowledge/collections/handbook/search", map[string]any{"query": "x", "k": 101}, 400, "k"},
		{"min score 1.5", "POST", "/knowledge/collections/handbook/search", map[string]any{"query": "x", "min_score": 1.5}, 400, "min_score"},
		{"min score -0.1", "POST", "/knowledge/collections/handbook/search", map[string]any{"query": "x", "min_score": -0.1}, 400, "min_score"},
		{"unknown embedding model", "POST", "/knowledge/collections", map[string]any{"name": "x", "embed_model": "wick-hash-3"}, 400, "wick-hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := kbClient{t, env.url}.do(tc.method, tc.path, aliceToken, tc.body)
			if r.code != tc.code || !strings.Contains(r.String(), tc.says) {
				t.Fatalf("%d %.300s, want %d saying %q", r.code, r, tc.code, tc.says)
			}
		})
	}
}

// TestKnowledgeSurvivesRestart: the embedded store keeps collections when
// the suite stops and starts again on the same directory.
func TestKnowledgeSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	env := startWick(t, kbOrgs(dir))
	c := kbClient{t, env.url}
	c.ok("POST", "/knowledge/collections", aliceToken, map[string]any{"name": "kept"})
	c.ok("POST", "/knowledge/collections/kept/documents", aliceToken, map[string]any{"document": "a", "content": "# Ferry\n\nThe ferry leaves every hour from pier seven."})
	env.stop()

	env2 := startWick(t, kbOrgs(dir))
	hits := kbClient{t, env2.url}.ok("POST", "/knowledge/collections/kept/search", aliceToken, map[string]any{"query": "when does the ferry leave?"})["hits"].([]any)
	if len(hits) != 1 {
		t.Fatalf("after restart: %v", hits)
	}
}

// TestKnowledgeSharedThroughRedis: a replica started after a collection was
// written sees it, and a write on one replica is searchable on the other.
func TestKnowledgeSharedThroughRedis(t *testing.T) {
	addr := testenv.Redis(t)
	withRedis := func(c *suite.Config) { c.RedisAddr = addr }
	a := startWick(t, kbOrgs(""), withRedis)
	ca := kbClient{t, a.url}
	ca.ok("POST", "/knowledge/collections", aliceToken, map[string]any{"name": "shared"})
	ca.ok("POST", "/knowledge/collections/shared/documents", aliceToken, map[string]any{"document": "bees", "content": "# Bees\n\nHoney bees dance to tell where flowers are."})

	b := startWick(t, kbOrgs(""), withRedis)
	cb := kbClient{t, b.url}
	cs := cb.ok("GET", "/knowledge/collections", aliceToken, nil)["collections"].([]any)
	if len(cs) != 1 || cs[0].(map[string]any)["document_count"] != "1" {
		t.Fatalf("late replica lists %v", cs)
	}
	cb.ok("POST", "/knowledge/collections/shared/documents", aliceToken, map[string]any{"document": "ferry", "content": "# Ferry\n\nThe ferry leaves every hour from pier seven."})
	waitFor(t, "replica a finds what b wrote", time.Second, func() (bool, string) {
		hits, _ := ca.ok("POST", "/knowledge/collections/shared/search", aliceToken, map[string]any{"query": "when does the ferry leave?"})["hits"].([]any)
		return len(hits) > 0, fmt.Sprint(hits)
	})
}
