import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import type { Collection, KnowledgeDocument, KnowledgeHit, Wick } from "@wick-agent/sdk";
import { afterEach, describe, expect, it, vi } from "vitest";

import KnowledgePanel from "./KnowledgePanel";

afterEach(cleanup);

function collection(name: string, org = "", docs = 0): Collection {
  return {
    collection: org ? `${org}.${name}` : name,
    name,
    org,
    description: "",
    embed_model: "",
    dimensions: 384,
    chunk_size: 1000,
    chunk_overlap: 150,
    document_count: docs,
    chunk_count: docs * 2,
    created_at: "",
  };
}

function doc(id: string, chunks: number): KnowledgeDocument {
  return { document: id, collection: "handbook", title: id, source: "text", content_type: "markdown", content_hash: "", size_bytes: 10, chunk_count: chunks, metadata: {}, updated_at: "" };
}

function hit(document: string, score: number, heading = ""): KnowledgeHit {
  return { chunk_id: `handbook/${document}#0`, collection: "handbook", document, title: document, heading, source: "text", score, text: `text of ${document}`, metadata: {} };
}

/** A fake of the SDK's knowledge calls: collections in memory. */
function fakeClient() {
  const collections = [collection("handbook", "", 2), collection("policies", "acme", 1)];
  const knowledge = {
    listCollections: vi.fn(async () => collections.slice()),
    listDocuments: vi.fn(async (c: string) => {
      if (!collections.some((x) => x.collection === c)) throw new Error(`collection ${c} not found`);
      return c === "handbook" ? [doc("redis", 3), doc("ferry", 1)] : [doc("expenses", 1)];
    }),
    createCollection: vi.fn(async (c: { name: string; org?: string }) => {
      const made = collection(c.name, c.org ?? "");
      collections.push(made);
      return made;
    }),
    deleteCollection: vi.fn(async (c: string) => {
      collections.splice(
        collections.findIndex((x) => x.collection === c),
        1,
      );
    }),
    addDocument: vi.fn(async () => ({ document: doc("x", 1), unchanged: false, embedded_chunks: 1 })),
    deleteDocument: vi.fn(async () => 1),
    search: vi.fn(async () => ({ hits: [hit("redis", 0.61, "Redis > Replicas"), hit("ferry", 0.12)], min_score: 0.1 })),
  };
  return { client: { knowledge } as unknown as Wick, knowledge };
}

describe("KnowledgePanel", () => {
  it("lists collections with their owners and a collection's documents with chunk counts", async () => {
    const { client, knowledge } = fakeClient();
    render(<KnowledgePanel client={client} agentId="default" onError={vi.fn()} />);
    const rows = await screen.findAllByTestId("kb-collection");
    expect(rows.map((r) => [r.dataset.collection, within(r).getByTestId("kb-owner").textContent])).toEqual([
      ["handbook", "you"],
      ["acme.policies", "org acme"],
    ]);
    // The first is selected and its documents listed.
    expect(rows[0]?.getAttribute("aria-current")).toBe("true");
    await waitFor(() => expect(screen.getAllByTestId("kb-document").map((d) => [d.dataset.document, within(d).getByTestId("kb-chunks").textContent])).toEqual([
      ["redis", "3 chunks"],
      ["ferry", "1 chunk"],
    ]));

    fireEvent.click(rows[1]!);
    await waitFor(() => expect(screen.getAllByTestId("kb-document").map((d) => d.dataset.document)).toEqual(["expenses"]));
    expect(knowledge.listDocuments).toHaveBeenLastCalledWith("acme.policies");
  });

  it("creates an organisation's collection and selects it", async () => {
    const { client, knowledge } = fakeClient();
    render(<KnowledgePanel client={client} agentId="default" onError={vi.fn()} />);
    await screen.findAllByTestId("kb-collection");
    fireEvent.click(screen.getByTestId("kb-new"));
    const submit = screen.getByTestId("kb-create-submit");
    fireEvent.change(screen.getByTestId("kb-create-name"), { target: { value: "two words" } });
    expect(submit).toHaveProperty("disabled", true);
    fireEvent.change(screen.getByTestId("kb-create-name"), { target: { value: "runbooks" } });
    fireEvent.change(screen.getByTestId("kb-create-org"), { target: { value: "acme" } });
    fireEvent.click(submit);
    await waitFor(() => expect(screen.queryByTestId("kb-create-form")).toBeNull());
    expect(knowledge.createCollection).toHaveBeenCalledWith({ name: "runbooks", org: "acme" });
    await waitFor(() => expect(screen.getByRole("button", { current: true }).dataset.collection).toBe("acme.runbooks"));
  });

  it("adds uploaded files, pasted text and workspace files", async () => {
    const { client, knowledge } = fakeClient();
    render(<KnowledgePanel client={client} agentId="writer" onError={vi.fn()} />);
    await screen.findAllByTestId("kb-document");
    const file = new File(["# Guide\n\nRun it."], "Setup guide.md", { type: "text/markdown" });
    fireEvent.change(screen.getByTestId("kb-upload"), { target: { files: [file] } });
    await waitFor(() =>
      expect(knowledge.addDocument).toHaveBeenCalledWith("handbook", { document: "Setup_guide.md", content: "# Guide\n\nRun it.", content_type: "markdown" }),
    );

    fireEvent.change(screen.getByTestId("kb-paste-text"), { target: { value: "Bees dance." } });
    fireEvent.click(screen.getByTestId("kb-paste-submit"));
    await waitFor(() => expect(knowledge.addDocument).toHaveBeenCalledWith("handbook", { content: "Bees dance." }));
    await waitFor(() => expect(screen.getByTestId<HTMLTextAreaElement>("kb-paste-text").value).toBe(""));

    fireEvent.change(screen.getByTestId("kb-path"), { target: { value: "/workspace/notes.md" } });
    fireEvent.click(screen.getByTestId("kb-path-submit"));
    await waitFor(() => expect(knowledge.addDocument).toHaveBeenCalledWith("handbook", { path: "/workspace/notes.md", agent_id: "writer" }));
  });

  it("searches with k and min score and shows the hits best first with scores and headings", async () => {
    const { client, knowledge } = fakeClient();
    render(<KnowledgePanel client={client} agentId="default" onError={vi.fn()} />);
    await screen.findAllByTestId("kb-collection");
    fireEvent.change(screen.getByTestId("kb-query"), { target: { value: "replicas" } });
    fireEvent.change(screen.getByTestId("kb-k"), { target: { value: "0" } });
    expect(screen.getByTestId("kb-search")).toHaveProperty("disabled", true);
    expect(screen.getByText("k is a whole number from 1 to 100")).toBeTruthy();
    fireEvent.change(screen.getByTestId("kb-k"), { target: { value: "3" } });
    fireEvent.change(screen.getByTestId("kb-min-score"), { target: { value: "0.1" } });
    fireEvent.click(screen.getByTestId("kb-search"));
    const hits = await screen.findAllByTestId("kb-hit");
    expect(knowledge.search).toHaveBeenCalledWith("handbook", "replicas", { k: 3, min_score: 0.1 });
    expect(hits.map((h) => [h.dataset.document, within(h).getByTestId("kb-hit-score").textContent])).toEqual([
      ["redis", "0.61"],
      ["ferry", "0.12"],
    ]);
    expect(hits[0]?.textContent).toContain("Redis > Replicas");
  });

  it("deletes a collection after asking, and moves on to the next", async () => {
    const { client, knowledge } = fakeClient();
    const onError = vi.fn();
    const confirm = vi.spyOn(window, "confirm").mockReturnValue(true);
    render(<KnowledgePanel client={client} agentId="default" onError={onError} />);
    await screen.findAllByTestId("kb-document");
    fireEvent.click(screen.getByTestId("kb-delete-collection"));
    await waitFor(() => expect(screen.getAllByTestId("kb-collection").map((r) => r.dataset.collection)).toEqual(["acme.policies"]));
    await waitFor(() => expect(screen.getAllByTestId("kb-document").map((d) => d.dataset.document)).toEqual(["expenses"]));
    expect(confirm).toHaveBeenCalledOnce();
    expect(knowledge.deleteCollection).toHaveBeenCalledWith("handbook");
    // The deleted collection's documents are never asked for again.
    expect(onError).not.toHaveBeenCalled();
    confirm.mockRestore();
  });

  it("reports a failed call and deletes a document", async () => {
    const { client, knowledge } = fakeClient();
    const onError = vi.fn();
    knowledge.deleteDocument.mockRejectedValueOnce(new Error("gone"));
    render(<KnowledgePanel client={client} agentId="default" onError={onError} />);
    await screen.findAllByTestId("kb-document");
    fireEvent.click(screen.getByRole("button", { name: "Delete the document ferry" }));
    await waitFor(() => expect(onError).toHaveBeenCalledWith(new Error("gone")));
    expect(knowledge.deleteDocument).toHaveBeenCalledWith("handbook", "ferry");
  });
});
