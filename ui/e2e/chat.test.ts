// Chat against the real suite: the token prompt, tokens streamed in order,
// tool cards with the written file in Files and the Canvas, Cancel mid-run and
// a reload mid-run that resumes without a duplicate.
import { describe, expect, test } from "vitest";

import { HELLO_TEXT, REPORT_HEADING, REPORT_PATH, SLOW_END, SLOW_TEXT, SLOW_WORDS, TODO_STATUS, TODO_TITLE, TOOLS_ANSWER } from "./fixtures.js";
import {
  agentItem,
  client,
  currentThreadId,
  finalRunStatus,
  inNewPage,
  lastAssistantText,
  openNewThread,
  readFile,
  recordAssistantText,
  send,
  signIn,
  suites,
  useBrowser,
  users,
  waitForAnswer,
  waitForIdle,
  words,
} from "./helpers.js";

const browser = useBrowser();

const alice = users.alice;

// Each test has its own browser context; the files of the run (and these
// tests) run in parallel, so every test opens a thread of its own.
describe.each(suites)("on the $backend backend", ({ url }) => {
  const wick = client(url, alice.token);

  test("the page asks for a token; a wrong one is refused, the right one shows the agents", async () => {
    await inNewPage(browser(), async (page, errors) => {
      await page.goto(url + "/");
      await page.getByTestId("token-dialog").waitFor();
      expect(await page.getByTestId("agent-list").count()).toBe(0);
      await page.getByTestId("token-input").fill("not-a-token");
      await page.getByTestId("token-submit").click();
      // Refused: the prompt stays and says why; nothing of the user shows.
      await expect.poll(() => page.getByTestId("token-dialog").getByRole("alert").textContent()).toMatch(/token/i);
      expect(await page.getByTestId("token-dialog").isVisible()).toBe(true);
      expect(await page.getByTestId("agent-list").count()).toBe(0);
      await page.getByTestId("token-input").fill(alice.token);
      await page.getByTestId("token-submit").click();
      await page.getByTestId("agent-list").waitFor();
      for (const id of ["hello", "writer", "slow", "approve"]) await agentItem(page, id).waitFor();
      // The token is kept for the tab: a reload asks no more.
      await page.reload();
      await page.getByTestId("agent-list").waitFor();
      await agentItem(page, "hello").waitFor();
      expect(await page.getByTestId("token-dialog").count()).toBe(0);
      expect(errors).toEqual([]);
    });
  });

  test("tokens arrive in order and the final text is exact", async () => {
    await inNewPage(browser(), async (page, errors) => {
      await signIn(page, url, alice.token);
      await openNewThread(page, "hello");
      // Nothing to send yet: Send waits for text.
      expect(await page.getByTestId("chat-send").isEnabled()).toBe(false);
      const snapshots = await recordAssistantText(page);
      await send(page, "Say hello, token by token.");
      await page.locator('[data-testid="message"][data-role="user"]').last().waitFor();
      await waitForAnswer(page, HELLO_TEXT);
      await waitForIdle(page);
      const seen = await snapshots();
      // Streamed, not shown at once: several texts on the way. The browser
      // may paint a burst of tokens as one text when the machine is busy, so
      // the count is a floor, not the token count.
      expect(seen.length).toBeGreaterThan(2);
      for (let i = 1; i < seen.length; i++) {
        expect(seen[i]!.startsWith(seen[i - 1]!), `text ${i} ${JSON.stringify(seen[i])} does not continue ${JSON.stringify(seen[i - 1])}`).toBe(true);
      }
      expect(seen[seen.length - 1]).toBe(HELLO_TEXT);
      await page.getByTestId("run-usage").last().waitFor();
      expect(await page.getByTestId("run-error").count()).toBe(0);
      expect(errors).toEqual([]);
    });
  });

  test("tool cards end done; the written file is in Todos, Files and the Canvas", async () => {
    await inNewPage(browser(), async (page, errors) => {
      await signIn(page, url, alice.token);
      await openNewThread(page, "writer");
      await send(page, "Plan, then write the report.");
      await waitForAnswer(page, TOOLS_ANSWER);
      await waitForIdle(page);
      for (const name of ["write_todos", "write_file"]) {
        await page.locator(`[data-testid="tool-card"][data-tool-name="${name}"][data-state="done"]`).waitFor();
      }
      expect(await page.locator('[data-testid="tool-card"]:not([data-state="done"])').count()).toBe(0);
      // The file is in the workspace: the API says so.
      expect(await readFile(wick, "writer", REPORT_PATH)).toContain(REPORT_HEADING);

      await page.getByTestId("panel-tab-todos").click();
      await expect.poll(() => page.getByTestId("todo-item").allTextContents()).toEqual([expect.stringContaining(TODO_TITLE)]);
      expect(await page.getByTestId("todo-item").first().getAttribute("data-status")).toBe(TODO_STATUS);

      await page.getByTestId("panel-tab-files").click();
      await page.getByTestId("files-tree").waitFor();
      await page.locator('[data-testid="file-entry"][data-path$="report.md"]').first().waitFor();

      await page.getByTestId("panel-tab-canvas").click();
      await page.getByTestId("canvas").waitFor();
      await page.locator('[data-testid="canvas-item"][data-path$="report.md"]').first().waitFor();
      await expect.poll(() => page.getByTestId("canvas-markdown").first().textContent()).toContain(REPORT_HEADING);
      expect(errors).toEqual([]);
    });
  });

  test("Cancel mid-run: the run ends cancelled, no card keeps running, the next message works", async () => {
    await inNewPage(browser(), async (page, errors) => {
      await signIn(page, url, alice.token);
      await openNewThread(page, "slow");
      await send(page, "Count slowly.");
      await expect.poll(async () => words(await lastAssistantText(page).textContent()).split(" ").length).toBeGreaterThan(5);
      const cancel = page.waitForRequest((r) => r.method() === "POST" && /\/runs\/[^/]+\/cancel$/.test(r.url()));
      await page.getByTestId("chat-stop").click();
      const runId = /\/runs\/([^/]+)\/cancel$/.exec((await cancel).url())![1]!;
      await waitForIdle(page);
      expect(await finalRunStatus(wick, decodeURIComponent(runId))).toBe("cancelled");
      expect(await page.locator('[data-testid="tool-card"][data-state="running"]').count()).toBe(0);
      // Stopped short of the end.
      expect(words(await lastAssistantText(page).textContent())).not.toBe(SLOW_TEXT);

      await send(page, "Go on.");
      // The model's next turn: the end text, or the whole text again when
      // the cancelled reply was not kept.
      await expect
        .poll(async () => words(await lastAssistantText(page).textContent()), { timeout: 30_000 })
        .toMatch(new RegExp(`^(${SLOW_END.replace(".", "\\.")}|${SLOW_TEXT})$`));
      await waitForIdle(page);
      expect(await page.getByTestId("run-error").count()).toBe(0);
      expect(errors).toEqual([]);
    });
  });

  test("a reload mid-run resumes: the final text is exact, no word twice", async () => {
    await inNewPage(browser(), async (page, errors) => {
      await signIn(page, url, alice.token);
      await openNewThread(page, "slow");
      await send(page, "Count slowly, I will reload.");
      await expect.poll(async () => words(await lastAssistantText(page).textContent()).split(" ").length).toBeGreaterThan(20);
      const threadId = await currentThreadId(page);
      await page.reload();
      // The app reopens the thread by itself (its URL names it), marked open in the list.
      await page.locator(`[data-testid="thread-item"][data-thread-id="${threadId}"][aria-current="true"]`).waitFor();
      await waitForAnswer(page, SLOW_TEXT, 30_000);
      const got = words(await lastAssistantText(page).textContent()).split(" ");
      expect(got).toEqual(SLOW_WORDS);
      await waitForIdle(page);
      expect(await page.locator('[data-testid="message"][data-role="assistant"]').count()).toBe(1);
      expect(errors).toEqual([]);
    });
  });
});
