// The Knowledge panel against the real suite (the offline wick-hash
// embedder): a collection made and filled with Markdown files in the panel,
// searched there with the right file ranked first, an organisation's
// collection shown with its owner, and a scripted agent naming the
// collection whose reply shows its Sources. The local run writes
// docs/ui/knowledge.png.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

import { KB_ANSWER, ORG } from "./fixtures.js";
import { client, newPage, screenshot, send, showPanelTab, showSidebar, signIn, suites, useBrowser, users, waitForAnswer, waitForIdle } from "./helpers.js";

const browser = useBrowser();
const alice = users.alice;

const COLLECTION = "handbook";
/** The narrowest viewport the UI must work in. */
const NARROW = 375;
const QUESTION = "How do agent replicas share threads and runs?";

/** The Markdown files uploaded: one per subject, so that a question has one right file. */
const FILES = [
  {
    name: "redis-replicas.md",
    text: "# Redis\n\n## Replicas\n\nAgent replicas share threads, runs and the knowledge base through Redis.\n",
  },
  {
    name: "tomatoes.md",
    text: "# Tomatoes\n\n## Watering\n\nTomato plants need six hours of sun and deep watering twice a week.\n",
  },
  {
    name: "ferry.md",
    text: "# Ferry\n\n## Timetable\n\nThe ferry to the island leaves every hour from pier seven.\n",
  },
];
const RIGHT = "redis-replicas.md";

/** The collections listed in the panel, with their owners. */
async function listedCollections(page: Page): Promise<string[]> {
  const rows = page.getByTestId("kb-collection");
  const out: string[] = [];
  for (let i = 0; i < (await rows.count()); i++) {
    const row = rows.nth(i);
    out.push(`${await row.getAttribute("data-collection")} (${await row.getByTestId("kb-owner").textContent()})`);
  }
  return out;
}

async function search(page: Page, query: string): Promise<void> {
  await page.getByTestId("kb-query").fill(query);
  await page.getByTestId("kb-k").fill("3");
  await page.getByTestId("kb-min-score").fill("0");
  await page.getByTestId("kb-search").click();
  await page.getByTestId("kb-hit").first().waitFor();
}

describe.each(suites)("knowledge ($backend backend)", ({ backend, url }) => {
  let page: Page;
  let errors: string[];
  const wick = client(url, alice.token);
  beforeAll(async () => {
    ({ page, errors } = await newPage(browser()));
    await signIn(page, url, alice.token);
  });
  afterAll(async () => {
    await page?.context().close();
  });

  // The tests of this file build on each other: one collection, then an agent that reads it.
  test("create a collection and upload Markdown files", async () => {
    await showPanelTab(page, "knowledge");
    await page.getByText("No collections yet.", { exact: false }).waitFor();
    await page.getByTestId("kb-new").click();
    await page.getByTestId("kb-create-name").fill(COLLECTION);
    await page.getByTestId("kb-create-description").fill("how things work");
    await page.getByTestId("kb-create-submit").click();
    await expect.poll(() => listedCollections(page)).toEqual([`${COLLECTION} (you)`]);

    await page.getByTestId("kb-upload").setInputFiles(FILES.map((f) => ({ name: f.name, mimeType: "text/markdown", buffer: Buffer.from(f.text) })));
    await expect.poll(async () => page.getByTestId("kb-document").count()).toBe(FILES.length);
    const docs = await wick.knowledge.listDocuments(COLLECTION);
    expect(docs.map((d) => d.document).sort()).toEqual(FILES.map((f) => f.name).sort());
    for (const d of docs) {
      expect(d.content_type).toBe("markdown");
      // The panel shows each document's chunk count as the API has it.
      const row = page.locator(`[data-testid="kb-document"][data-document="${d.document}"]`);
      expect(await row.getByTestId("kb-chunks").textContent()).toBe(`${d.chunk_count} ${d.chunk_count === 1 ? "chunk" : "chunks"}`);
    }
  });

  test("an organisation's collection shows its owner", async () => {
    await page.getByTestId("kb-new").click();
    await page.getByTestId("kb-create-name").fill("policies");
    await page.getByTestId("kb-create-org").fill(ORG);
    await page.getByTestId("kb-create-submit").click();
    await expect.poll(() => listedCollections(page)).toEqual([`${ORG}.policies (org ${ORG})`, `${COLLECTION} (you)`]);
    // Creating it selected it; back to the handbook.
    await page.locator(`[data-testid="kb-collection"][data-collection="${COLLECTION}"]`).click();
    await expect.poll(async () => page.getByTestId("kb-document").count()).toBe(FILES.length);
  });

  test("search ranks the right file first, with a score", async () => {
    await search(page, QUESTION);
    const first = page.getByTestId("kb-hit").first();
    expect(await first.getAttribute("data-document")).toBe(RIGHT);
    expect(await first.textContent()).toContain("Redis > Replicas");
    const scores = (await page.getByTestId("kb-hit-score").allTextContents()).map(Number);
    expect(scores.length).toBeGreaterThan(0);
    expect(scores.length).toBeLessThanOrEqual(3);
    expect(scores[0]).toBeGreaterThan(0);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    // The same ranking as the API's.
    const { hits } = await wick.knowledge.search(COLLECTION, QUESTION, { k: 3, min_score: 0 });
    expect(hits.map((h) => h.score.toFixed(2))).toEqual(scores.map((s) => s.toFixed(2)));
  });

  test("a scripted agent that names the collection shows its Sources under the reply", async () => {
    const agentId = `librarian-${backend}`;
    await showSidebar(page);
    await page.getByTestId("agent-new").click();
    await page.getByTestId("agent-form-id").fill(agentId);
    await page.getByTestId("agent-form-model").fill("script:kb");
    await page.getByTestId("agent-form-collections").fill(COLLECTION);
    await page.getByTestId("agent-form-backend").selectOption("none");
    await page.getByTestId("agent-form-submit").click();
    await expect.poll(() => page.locator(`[data-testid="agent-item"][data-agent-id="${agentId}"]`).getAttribute("aria-current")).toBe("true");
    const { data } = await wick.api.GET("/agents/{agent_id}", { params: { path: { agent_id: agentId } } });
    expect(data?.agent?.collections).toEqual([COLLECTION]);

    await page.getByTestId("thread-new").click();
    await send(page, QUESTION);
    await waitForAnswer(page, KB_ANSWER);
    await waitForIdle(page);
    const reply = page.locator('[data-testid="message"][data-role="assistant"]').last();
    const sources = reply.getByTestId("source");
    await sources.first().waitFor();
    expect(await sources.first().getAttribute("data-document")).toBe(RIGHT);
    expect(await sources.first().getAttribute("value")).toBe("1");
    const first = await sources.first().textContent();
    expect(first).toContain(`${COLLECTION}/${RIGHT}`);
    expect(first).toContain("Redis > Replicas");
    expect(Number(await sources.first().getByTestId("source-score").textContent())).toBeGreaterThan(0);
    expect(errors).toEqual([]);

    if (backend === "local") {
      // The picture: the reply with its Sources, the panel with a search.
      await showPanelTab(page, "knowledge");
      await page.locator(`[data-testid="kb-collection"][data-collection="${COLLECTION}"]`).click();
      await expect.poll(async () => page.getByTestId("kb-document").count()).toBe(FILES.length);
      // Folded, as one would once the documents are in: the list and the hits fit.
      const add = page.getByTestId("kb-add");
      if ((await add.getAttribute("open")) !== null) await add.locator("summary").click();
      await search(page, QUESTION);
      await page.getByTestId("kb-hit").last().scrollIntoViewIfNeeded();
      await screenshot(page, "knowledge");
    }
  });

  test("the panel fits 375 px", async () => {
    const p = await newPage(browser(), { width: NARROW, height: 740 });
    try {
      await signIn(p.page, url, alice.token);
      await p.page.getByTestId("panel-toggle").click();
      await p.page.getByTestId("panel-tab-knowledge").click();
      await p.page.locator(`[data-testid="kb-collection"][data-collection="${COLLECTION}"]`).click();
      await search(p.page, QUESTION);
      const [pageWidth, panelWidth, panelClient] = await p.page.evaluate(() => {
        const panel = document.querySelector('[data-testid="knowledge-panel"]');
        return [document.scrollingElement?.scrollWidth ?? 0, panel?.scrollWidth ?? 0, panel?.clientWidth ?? 0];
      });
      expect(pageWidth).toBeLessThanOrEqual(NARROW);
      expect(panelWidth).toBeLessThanOrEqual(panelClient);
      expect(p.errors).toEqual([]);
    } finally {
      await p.context.close();
    }
  });
});
