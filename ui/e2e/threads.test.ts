// The thread list and the first screen in a real browser: each thread with
// its time, grouped by day and searchable; repeated first messages told
// apart; renaming in the row, kept after a reload and a later run; deletion
// with undo; a thread or agent of the URL that does not
// exist shown as such (no list entry for it); a fresh browser on the
// default agent; a new tab back on the agent and thread open last; and no
// request of the page answered with an error (the favicon among them).
import type { Page, Response } from "playwright-core";
import { describe, expect, test } from "vitest";

import { HELLO_TEXT } from "./fixtures.js";
import { agentItem, client, currentThreadId, newPage, screenshot, send, signIn, suites, useBrowser, users, waitForAnswer, waitForIdle } from "./helpers.js";

const browser = useBrowser();

/** The same first message twice: the list must still tell the two threads apart. */
const REPEATED = "What is 6 * 7?";

/** failedResponses collects the page's answers with an error status, from now on. */
function failedResponses(page: Page): string[] {
  const failed: string[] = [];
  page.on("response", (r: Response) => {
    if (r.status() >= 400) failed.push(`${r.status()} ${new URL(r.url()).pathname}`);
  });
  return failed;
}

/** selectedAgent is the agent the sidebar marks as open. */
async function selectedAgent(page: Page): Promise<string | null> {
  const sel = page.locator('[data-testid="agent-item"][aria-current="true"]');
  return (await sel.count()) > 0 ? sel.first().getAttribute("data-agent-id") : null;
}

async function newThreadWith(page: Page, text: string): Promise<string> {
  await page.getByTestId("thread-new").click();
  await send(page, text);
  await waitForAnswer(page, HELLO_TEXT);
  await waitForIdle(page);
  return currentThreadId(page);
}

describe.each(suites)("on the $backend backend", ({ url, backend }) => {
  test("a fresh browser opens the default agent, and a new tab the agent and thread open last", async () => {
    const { context, page, errors } = await newPage(browser());
    try {
      const failed = failedResponses(page);
      await signIn(page, url, users.alice.token);
      await expect.poll(() => selectedAgent(page)).toBe("default");
      expect(new URL(page.url()).hash).toBe("#/agents/default");
      // The icon is linked and served: no /favicon.ico guess, no error answer.
      const icon = await page.locator('link[rel="icon"]').getAttribute("href");
      expect(icon).toBe("/favicon.svg");
      const res = await page.request.get(url + icon);
      expect(res.status()).toBe(200);
      expect(res.headers()["content-type"]).toBe("image/svg+xml");

      await agentItem(page, "hello").click();
      const threadId = await newThreadWith(page, `A thread to come back to (${backend}).`);

      // Another tab of the same browser: a new session (the token is asked
      // again), the same local storage.
      const again = await context.newPage();
      const failedAgain = failedResponses(again);
      await signIn(again, url, users.alice.token);
      await expect.poll(() => new URL(again.url()).hash).toBe(`#/agents/hello/threads/${threadId}`);
      await again.locator(`[data-testid="thread-item"][data-thread-id="${threadId}"][aria-current="true"]`).waitFor();
      await waitForAnswer(again, HELLO_TEXT);
      expect(await selectedAgent(again)).toBe("hello");
      expect([...failed, ...failedAgain]).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test("threads show their time, group by day, are searched by title, tell repeated titles apart and delete with undo", async () => {
    // An agent of this test's own, so that no other test's threads are listed.
    const agentId = `threads-${backend}-${Math.random().toString(16).slice(2, 8)}`;
    const wick = client(url, users.alice.token);
    await wick.api.POST("/agents", { body: { agent_id: agentId, name: "Thread list", model: "script:hello" } });
    const { context, page, errors } = await newPage(browser());
    try {
      await signIn(page, url, users.alice.token);
      await agentItem(page, agentId).click();
      const first = await newThreadWith(page, REPEATED);
      const second = await newThreadWith(page, REPEATED);
      const other = await newThreadWith(page, "Plan the trip");
      const items = page.getByTestId("thread-item");
      await expect.poll(() => items.count()).toBe(3);

      // Time: relative, with the full date as the tooltip; all of today.
      expect(await page.getByTestId("thread-group").allTextContents()).toEqual(["Today"]);
      const time = items.first().getByTestId("thread-time");
      expect(await time.textContent()).toMatch(/^(just now|1 minute ago)$/);
      expect(await time.getAttribute("title")).toContain(String(new Date().getFullYear()));
      expect(Date.parse((await time.getAttribute("datetime")) ?? "")).not.toBeNaN();

      // Repeated first messages: two different titles.
      const title = (id: string) => page.locator(`[data-testid="thread-item"][data-thread-id="${id}"]`).getByTestId("thread-title").textContent();
      const [t1, t2] = [await title(first), await title(second)];
      expect(t1).toContain(REPEATED);
      expect(t2).toContain(REPEATED);
      expect(t1).not.toBe(t2);

      // Search by title.
      await page.getByTestId("thread-search").fill("6 * 7");
      await expect.poll(async () => (await items.evaluateAll((els) => els.map((e) => e.getAttribute("data-thread-id")))).sort()).toEqual([first, second].sort());
      if (backend === "local") await screenshot(page, "threads");
      await page.getByTestId("thread-search").fill("trip");
      await expect.poll(() => items.evaluateAll((els) => els.map((e) => e.getAttribute("data-thread-id")))).toEqual([other]);
      await page.getByTestId("thread-search").fill("");

      // Delete, undo: the thread stays, listed and stored.
      const row = (id: string) => page.locator(`.thread-row:has([data-thread-id="${id}"])`);
      await row(other).getByTestId("thread-delete").click();
      await page.getByTestId("thread-undo").waitFor();
      await expect.poll(() => items.count()).toBe(2);
      await page.getByTestId("thread-undo-button").click();
      await expect.poll(() => items.count()).toBe(3);
      await page.getByTestId("thread-undo").waitFor({ state: "detached" });

      // Delete for real: stored until the undo delay ends, then gone.
      await row(second).getByTestId("thread-delete").click();
      await expect.poll(() => items.count()).toBe(2);
      const exists = async (id: string) => (await wick.api.GET("/threads/{thread_id}", { params: { path: { thread_id: id } } }).then(() => true, () => false));
      await expect.poll(() => exists(second)).toBe(false);
      await page.getByTestId("thread-undo").waitFor({ state: "detached" });
      expect(await exists(other)).toBe(true);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await wick.api.DELETE("/agents/{agent_id}", { params: { path: { agent_id: agentId } } }).catch(() => {});
    }
  });

  test("a thread renamed in its row keeps the title after a reload and a later run", async () => {
    const agentId = `rename-${backend}-${Math.random().toString(16).slice(2, 8)}`;
    const wick = client(url, users.alice.token);
    await wick.api.POST("/agents", { body: { agent_id: agentId, name: "Rename", model: "script:hello" } });
    const { context, page, errors } = await newPage(browser());
    try {
      await signIn(page, url, users.alice.token);
      await agentItem(page, agentId).click();
      const threadId = await newThreadWith(page, "Hello there");
      const item = page.locator(`[data-testid="thread-item"][data-thread-id="${threadId}"]`);
      const row = page.locator(`.thread-row:has([data-thread-id="${threadId}"])`);
      await expect.poll(() => item.getByTestId("thread-title").textContent()).toBe("Hello there");

      // Escape leaves the title as it was.
      await page.getByRole("button", { name: "Rename thread Hello there" }).click();
      const input = page.getByRole("textbox", { name: "New title for the thread “Hello there”" });
      await input.fill("Not this one");
      await input.press("Escape");
      await expect.poll(() => item.getByTestId("thread-title").textContent()).toBe("Hello there");

      // Enter saves: shown at once, stored.
      await row.getByTestId("thread-rename").click();
      await input.fill("Greetings, renamed ✓");
      if (backend === "local") await screenshot(page, "thread-rename");
      await input.press("Enter");
      await expect.poll(() => item.getByTestId("thread-title").textContent()).toBe("Greetings, renamed ✓");
      const listed = async () => (await wick.api.GET("/threads", { params: { query: { agent_id: agentId } } })).data?.threads?.[0];
      const before = await listed();
      expect(before?.title).toBe("Greetings, renamed ✓");

      // A reload reads it back (the tab keeps its token); a later run on
      // the thread keeps it.
      await page.reload();
      await expect.poll(() => item.getByTestId("thread-title").textContent()).toBe("Greetings, renamed ✓");
      await item.click();
      await waitForAnswer(page, HELLO_TEXT);
      await send(page, "Hello again");
      await expect.poll(async () => (await listed())?.message_count ?? 0).toBeGreaterThan(before?.message_count ?? 0);
      await waitForIdle(page);
      await expect.poll(() => item.getByTestId("thread-title").textContent()).toBe("Greetings, renamed ✓");
      expect((await listed())?.title).toBe("Greetings, renamed ✓");
      if (backend === "local") await screenshot(page, "thread-renamed");
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await wick.api.DELETE("/agents/{agent_id}", { params: { path: { agent_id: agentId } } }).catch(() => {});
    }
  });

  test("a thread or agent of the URL that does not exist is shown as not found, with no list entry", async () => {
    const { context, page, errors } = await newPage(browser());
    try {
      await signIn(page, url, users.alice.token);
      await page.goto(`${url}/#/agents/hello/threads/th_doesnotexist0000000000`);
      await page.getByTestId("thread-not-found").waitFor();
      await page.getByTestId("thread-list").waitFor();
      expect(await page.locator('[data-testid="thread-item"][data-thread-id="th_doesnotexist0000000000"]').count()).toBe(0);
      expect(await page.locator('[data-testid="thread-item"][aria-current="true"]').count()).toBe(0);
      if (backend === "local") await screenshot(page, "thread-not-found");

      await page.goto(`${url}/#/agents/no-such-agent`);
      await page.getByTestId("agent-not-found").waitFor();
      expect(await page.getByText("Loading the thread…").count()).toBe(0);
      if (backend === "local") await screenshot(page, "agent-not-found");
      await page.getByTestId("not-found-action").click();
      await expect.poll(() => selectedAgent(page)).toBe("default");
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
