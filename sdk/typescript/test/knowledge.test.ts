// The knowledge calls against the real suite (its offline wick-hash
// embedder): collections, documents, search, ownership, organisations, bad
// input, and the retrieval event of an agent that names a collection.
import { beforeAll, describe, expect, test } from "vitest";

import type { KnowledgeHit, NewDocument } from "../src/index.js";
import { KB_ANSWER, KB_SCRIPT, ORG } from "./fixtures.js";
import { client, failure, userMessage } from "./helpers.js";

const alice = client("alice");
const bob = client("bob");

/** A name no other run of this file uses: the suite lives for the whole run. */
function unique(prefix: string): string {
  return `${prefix}-${Math.random().toString(16).slice(2, 10)}`;
}

/** One Markdown document per topic, each on its own subject, so that a question has one right document. */
const TOPICS: Record<string, string> = {
  redis: "Agent replicas share threads, runs and the knowledge base through a Redis stream.",
  tomatoes: "Tomato plants need six hours of sun and deep watering twice a week.",
  ferry: "The ferry to the island leaves every hour from pier seven.",
  leave: "Parental leave requests go to human resources eight weeks ahead.",
  bees: "Honey bees communicate the direction of flowers with a waggle dance.",
};

function markdown(id: string, text: string): string {
  return `# ${id}\n\n## Summary\n\n${text}\n\n## Notes\n\nA document of the SDK test.\n`;
}

/** A collection of alice's with the topics in it. */
async function handbook(org?: string) {
  const c = await alice.knowledge.createCollection({ name: unique("handbook"), description: "how things work", ...(org ? { org } : {}) });
  for (const [id, text] of Object.entries(TOPICS)) {
    await alice.knowledge.addDocument(c.collection, { document: id, content: markdown(id, text), metadata: { topic: id } });
  }
  return c;
}

function expectBestFirst(hits: KnowledgeHit[]) {
  for (let i = 1; i < hits.length; i++) expect(hits[i - 1]!.score).toBeGreaterThanOrEqual(hits[i]!.score);
}

describe("knowledge", () => {
  test("collections, documents and search", async () => {
    const c = await handbook();
    expect(c).toMatchObject({ org: "", description: "how things work", embed_model: "", dimensions: 384, document_count: 0 });
    expect(c.collection).toBe(c.name);

    const docs = await alice.knowledge.listDocuments(c.collection);
    expect(docs.map((d) => d.document)).toEqual(Object.keys(TOPICS).sort());
    for (const d of docs) {
      expect(d).toMatchObject({ collection: c.collection, title: d.document, source: "text", content_type: "markdown" });
      expect(d.chunk_count).toBeGreaterThan(0);
      expect(d.size_bytes).toBe(new TextEncoder().encode(markdown(d.document, TOPICS[d.document]!)).length);
    }
    const listed = (await alice.knowledge.listCollections()).find((x) => x.collection === c.collection);
    expect(listed?.document_count).toBe(docs.length);
    expect(listed?.chunk_count).toBe(docs.reduce((n, d) => n + d.chunk_count, 0));
    expect(listed?.dimensions).toBe(384);

    const { hits, min_score } = await alice.knowledge.search(c.collection, "who do I ask for parental leave?", { k: 3, min_score: 0 });
    expect(min_score).toBe(0);
    expect(hits.length).toBe(3);
    expect(hits[0]).toMatchObject({ collection: c.collection, document: "leave", title: "leave", source: "text", metadata: { topic: "leave" } });
    expect(hits[0]!.heading).toContain("Summary");
    expect(hits[0]!.chunk_id).toMatch(new RegExp(`^${c.collection}/leave#\\d+$`));
    expectBestFirst(hits);

    // A threshold above every score leaves nothing; a filter keeps one document.
    expect((await alice.knowledge.search(c.collection, "ferry", { min_score: 0.999 })).hits).toEqual([]);
    const filtered = await alice.knowledge.search(c.collection, "ferry", { min_score: 0, filter: { topic: "bees" } });
    expect(new Set(filtered.hits.map((h) => h.document))).toEqual(new Set(["bees"]));

    // The same text again embeds nothing; a deletion says what it removed.
    const again = await alice.knowledge.addDocument(c.collection, { document: "ferry", content: markdown("ferry", TOPICS.ferry!), metadata: { topic: "ferry" } });
    expect(again).toMatchObject({ unchanged: true, embedded_chunks: 0 });
    const ferry = docs.find((d) => d.document === "ferry")!;
    expect(await alice.knowledge.deleteDocument(c.collection, "ferry")).toBe(ferry.chunk_count);
    expect((await alice.knowledge.listDocuments(c.collection)).map((d) => d.document)).not.toContain("ferry");

    await alice.knowledge.deleteCollection(c.collection);
    expect((await alice.knowledge.listCollections()).map((x) => x.collection)).not.toContain(c.collection);
  });

  test("a document from a workspace file", async () => {
    const c = await alice.knowledge.createCollection({ name: unique("files") });
    await alice.upload("default", "/workspace/sdk/kb/guide.md", "# Guide\n\n## Setup\n\nRun make run and open the printed URL.\n");
    const { document } = await alice.knowledge.addDocument(c.collection, { path: "/workspace/sdk/kb/guide.md", agent_id: "default" });
    expect(document).toMatchObject({ source: "/workspace/sdk/kb/guide.md", title: "Guide", content_type: "markdown" });
    const { hits } = await alice.knowledge.search(c.collection, "how do I set it up?", { min_score: 0 });
    expect(hits[0]).toMatchObject({ document: document.document, heading: "Guide > Setup" });
  });

  test("another user's collection does not exist for bob", async () => {
    const c = await alice.knowledge.createCollection({ name: unique("private") });
    await alice.knowledge.addDocument(c.collection, { document: "a", content: "# A\n\nSecret of alice." });
    const calls = [
      () => bob.knowledge.listDocuments(c.collection),
      () => bob.knowledge.search(c.collection, "secret"),
      () => bob.knowledge.addDocument(c.collection, { content: "# B\n\nBob's text." }),
      () => bob.knowledge.deleteDocument(c.collection, "a"),
      () => bob.knowledge.deleteCollection(c.collection),
    ];
    for (const call of calls) {
      expect(await failure(call())).toMatchObject({ status: 404, code: "NOT_FOUND" });
    }
    expect((await bob.knowledge.listCollections()).map((x) => x.collection)).not.toContain(c.collection);
    // Still there for alice.
    expect((await alice.knowledge.listDocuments(c.collection)).map((d) => d.document)).toEqual(["a"]);
  });

  test("an organisation's collection is every member's", async () => {
    const c = await handbook(ORG);
    expect(c).toMatchObject({ org: ORG, collection: `${ORG}.${c.name}` });
    expect((await bob.knowledge.listCollections()).find((x) => x.collection === c.collection)).toMatchObject({ org: ORG, document_count: 5 });
    const { hits } = await bob.knowledge.search(c.collection, "when does the ferry leave?", { k: 2, min_score: 0 });
    expect(hits[0]?.document).toBe("ferry");
    expectBestFirst(hits);
    await bob.knowledge.deleteCollection(c.collection);
    expect((await alice.knowledge.listCollections()).map((x) => x.collection)).not.toContain(c.collection);
  });

  describe("bad input is a WickError naming what was wrong", () => {
    const c = { collection: "" };
    beforeAll(async () => {
      c.collection = (await alice.knowledge.createCollection({ name: unique("bad") })).collection;
    });
    const cases: { name: string; call: () => Promise<unknown>; code: string; says: RegExp }[] = [
      { name: "k 0", call: () => alice.knowledge.search(c.collection, "x", { k: 0 }), code: "INVALID_ARGUMENT", says: /\bk\b/ },
      { name: "k 101", call: () => alice.knowledge.search(c.collection, "x", { k: 101 }), code: "INVALID_ARGUMENT", says: /\bk\b/ },
      { name: "min score 1.5", call: () => alice.knowledge.search(c.collection, "x", { min_score: 1.5 }), code: "INVALID_ARGUMENT", says: /min_score/ },
      { name: "an empty document", call: () => alice.knowledge.addDocument(c.collection, { content: " \n" }), code: "INVALID_ARGUMENT", says: /empty/ },
      {
        name: "content and path",
        call: () => alice.knowledge.addDocument(c.collection, { content: "# A", path: "/workspace/a.md", agent_id: "default" } as unknown as NewDocument),
        code: "INVALID_ARGUMENT",
        says: /content|path/,
      },
      { name: "a name with a space", call: () => alice.knowledge.createCollection({ name: "two words" }), code: "INVALID_ARGUMENT", says: /name|collection/ },
      { name: "an unknown embedding model", call: () => alice.knowledge.createCollection({ name: unique("x"), embed_model: "wick-hash-3" }), code: "INVALID_ARGUMENT", says: /wick-hash/ },
      { name: "an organisation alice is not in", call: () => alice.knowledge.createCollection({ name: unique("x"), org: "globex" }), code: "NOT_FOUND", says: /globex/ },
      { name: "a collection that does not exist", call: () => alice.knowledge.search(unique("missing"), "x"), code: "NOT_FOUND", says: /missing/ },
    ];
    for (const tc of cases) {
      test(tc.name, async () => {
        const err = await failure(tc.call());
        expect(err.code).toBe(tc.code);
        expect(err.message).toMatch(tc.says);
      });
    }
  });

  test("a run of an agent that names a collection reports its sources", async () => {
    const c = await handbook();
    const agentId = unique("librarian");
    await alice.api.POST("/agents", { body: { agent_id: agentId, model: `script:${KB_SCRIPT}`, collections: [c.collection], knowledge_min_score: 0.1 } });
    const events = await alice.stream(agentId, userMessage("How do agent replicas share threads and the knowledge base?")).toArray();

    const retrievals = events.filter((ev) => ev.event === "on_knowledge_retrieval");
    expect(retrievals).toHaveLength(1);
    const ev = retrievals[0]!;
    if (ev.event !== "on_knowledge_retrieval") return;
    expect(ev.data.query).toContain("replicas");
    expect(ev.data.error).toBeUndefined();
    const { sources } = ev.data;
    expect(sources[0]).toMatchObject({ n: 1, collection: c.collection, document: "redis", title: "redis", source: "text" });
    expect(sources.map((s) => s.n)).toEqual(sources.map((_, i) => i + 1));
    for (let i = 1; i < sources.length; i++) expect(sources[i - 1]!.score).toBeGreaterThanOrEqual(sources[i]!.score);
    expect(events.map((e) => (e.event === "on_chat_model_stream" ? e.data.delta : "")).join("")).toBe(KB_ANSWER);
  });
});
