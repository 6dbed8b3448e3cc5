// The thread list reads threads a page at a time: scrolling to its end
// reads the next page, each thread listed once; the search asks the server,
// so it finds a thread of a page not read yet. A run started in one browser
// is re-joined from another (a fresh context: another device of the same
// user): the new thread waiting for approval is listed there with its
// badge, and approving it there finishes the run in both.
import type { Page } from "playwright-core";
import { describe, expect, test } from "vitest";

import { APPROVE_ANSWER, APPROVE_CONTENT, APPROVE_PATH, HELLO_TEXT } from "./fixtures.js";
import { agentItem, client, currentThreadId, newPage, openNewThread, readFile, screenshot, send, signIn, suites, useBrowser, users, waitForAnswer, waitForIdle } from "./helpers.js";

const browser = useBrowser();
const alice = users.alice;

/** The UI's page size (sidebar/useThreadPages.ts); the test makes a few more threads than that. */
const PAGE = 50;
const THREADS = PAGE + 5;
/** The oldest thread's first message: on the second page. */
const OLDEST = "Kiwis, the oldest";

/** The ids of the thread rows, in the list's order. */
function listedIds(page: Page): Promise<(string | null)[]> {
  return page.getByTestId("thread-item").evaluateAll((els) => els.map((e) => e.getAttribute("data-thread-id")));
}

describe.each(suites)("on the $backend backend", ({ backend, url }) => {
  const wick = client(url, alice.token);

  test("scrolling reads the next page, each thread once; the search finds a thread of a page not read", async () => {
    // An agent of this test's own, without a sandbox: only its threads are listed.
    const agentId = `pages-${backend}-${Math.random().toString(16).slice(2, 8)}`;
    await wick.api.POST("/agents", { body: { agent_id: agentId, name: "Paged threads", model: "script:hello" } });
    const { context, page, errors } = await newPage(browser());
    try {
      // One short run each: the oldest alone first, then the others a few at a time.
      const start = async (text: string) => {
        const run = wick.stream(agentId, { messages: [{ role: "user", content: text }] });
        await run.toArray();
        return run.threadId!;
      };
      const oldest = await start(OLDEST);
      const made = [oldest];
      for (let i = 1; i < THREADS; i += 6) {
        const batch = Array.from({ length: Math.min(6, THREADS - i) }, (_, k) => start(`Thread ${String(i + k).padStart(2, "0")}`));
        made.push(...(await Promise.all(batch)));
      }

      await signIn(page, url, alice.token);
      await agentItem(page, agentId).click();
      // The first page: the newest threads, the oldest not among them.
      await page.getByTestId("thread-more").waitFor({ state: "attached" });
      await expect.poll(async () => (await listedIds(page)).length).toBe(PAGE);
      expect(await listedIds(page)).not.toContain(oldest);

      // The list's end scrolled into view: the next page, to the end.
      await page.getByTestId("thread-more").scrollIntoViewIfNeeded();
      await page.getByTestId("thread-more").waitFor({ state: "detached" });
      const all = await listedIds(page);
      expect(all).toHaveLength(THREADS);
      expect(new Set(all).size).toBe(THREADS);
      expect([...all].sort()).toEqual([...made].sort());
      expect(all[all.length - 1]).toBe(oldest);
      if (backend === "local") {
        await page.locator(`[data-testid="thread-item"][data-thread-id="${oldest}"]`).scrollIntoViewIfNeeded();
        await screenshot(page, "thread-pages");
      }

      // A reload reads the first page again; the search asks the server.
      await page.reload();
      await page.getByTestId("thread-more").waitFor({ state: "attached" });
      await expect.poll(async () => (await listedIds(page)).length).toBe(PAGE);
      expect(await listedIds(page)).not.toContain(oldest);
      await page.getByTestId("thread-search").fill("KIWIS");
      await expect.poll(() => listedIds(page)).toEqual([oldest]);
      await page.getByTestId("thread-search").fill("");
      await expect.poll(async () => (await listedIds(page)).length).toBe(PAGE);

      // The oldest opens from the list, read by the search, with its answer.
      await page.getByTestId("thread-search").fill("kiwis");
      await page.locator(`[data-testid="thread-item"][data-thread-id="${oldest}"]`).click();
      await waitForAnswer(page, HELLO_TEXT);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await wick.api.DELETE("/agents/{agent_id}", { params: { path: { agent_id: agentId } } }).catch(() => {});
    }
  });

  test("a run waiting for approval in one browser is listed, joined and approved in another; both see it finish", async () => {
    const agentId = `rejoin-${backend}-${Math.random().toString(16).slice(2, 8)}`;
    await wick.api.POST("/agents", {
      body: { agent_id: agentId, name: "Approval from another device", model: "script:approve", approval: "interactive", backend: { type: backend } },
    });
    const a = await newPage(browser());
    const b = await newPage(browser());
    try {
      await signIn(a.page, url, alice.token);
      await openNewThread(a.page, agentId);
      await send(a.page, "Write the file.");
      await a.page.getByTestId("approval-card").waitFor();
      const threadId = await currentThreadId(a.page);

      // Another browser: none of the first one's storage.
      await signIn(b.page, url, alice.token);
      await agentItem(b.page, agentId).click();
      const row = b.page.locator(`[data-testid="thread-item"][data-thread-id="${threadId}"]`);
      await row.waitFor();
      expect(await row.getAttribute("data-status")).toBe("interrupted");
      expect(await row.textContent()).toContain("needs approval");
      expect(await row.getByTestId("thread-title").textContent()).toBe("Write the file.");
      await row.click();
      const card = b.page.getByTestId("approval-card");
      await card.waitFor();
      expect(await card.textContent()).toContain("write_file");
      expect(JSON.parse(await b.page.getByTestId("approval-args").inputValue())).toEqual({ path: APPROVE_PATH, content: APPROVE_CONTENT });
      // The thread as it was, once: the message, and the run's text before its call.
      expect(await b.page.locator('[data-testid="message"][data-role="user"]').count()).toBe(1);
      await expect.poll(() => b.page.locator('[data-testid="message"][data-role="assistant"]').allTextContents()).toEqual(["I will write a file once you approve."]);
      if (backend === "local") await screenshot(b.page, "thread-rejoined");

      await b.page.getByTestId("approval-approve").click();
      for (const p of [b.page, a.page]) {
        await waitForAnswer(p, APPROVE_ANSWER);
        await waitForIdle(p);
        await p.locator('[data-testid="tool-card"][data-tool-name="write_file"][data-state="done"]').waitFor();
        await p.locator(`[data-testid="thread-item"][data-thread-id="${threadId}"][data-status="idle"]`).waitFor();
      }
      expect(await b.page.locator('[data-testid="tool-card"][data-tool-name="write_file"]').count()).toBe(1);
      const { data } = await wick.api.GET("/threads/{thread_id}", { params: { path: { thread_id: threadId } } });
      expect(data?.summary?.active_run_id ?? "").toBe("");
      expect(await readFile(wick, agentId, APPROVE_PATH)).toBe(APPROVE_CONTENT);
      expect([...a.errors, ...b.errors]).toEqual([]);
    } finally {
      await a.context.close();
      await b.context.close();
      await wick.api.DELETE("/agents/{agent_id}", { params: { path: { agent_id: agentId } } }).catch(() => {});
    }
  });
});
