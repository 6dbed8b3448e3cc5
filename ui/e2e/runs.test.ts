// Runs outlive the page that started them: a run waiting for approval is
// still waiting, and shown so, after its page was closed and the thread
// opened in another; a tool card tells a cancelled call from a finished one;
// a message over the gateway's body limit stays in the box, with the reason.
import { describe, expect, test } from "vitest";

import { OUTLIVE_ANSWER, OUTLIVE_CONTENT, OUTLIVE_PATH, SLEEP_COMMAND } from "./fixtures.js";
import { client, currentThreadId, finalRunStatus, newPage, openNewThread, readFile, screenshot, send, signIn, suites, useBrowser, users, waitForAnswer, waitForIdle } from "./helpers.js";

const browser = useBrowser();
const alice = users.alice;

describe.each(suites)("on the $backend backend", ({ backend, url }) => {
  const wick = client(url, alice.token);

  test("a run waiting for approval survives its closed page: another page shows the approval, and approving finishes it", async () => {
    const { context, page, errors } = await newPage(browser());
    try {
      await signIn(page, url, alice.token);
      await openNewThread(page, "outliver");
      await send(page, "Write the file.");
      await page.getByTestId("approval-card").waitFor();
      const threadId = await currentThreadId(page);
      const runId = await page.locator(".approvals").getAttribute("data-run-id");
      await page.close({ runBeforeUnload: true });
      // The server keeps the run waiting without a page following it.
      const { data } = await wick.api.GET("/runs/{run_id}", { params: { path: { run_id: runId! } } });
      expect(data?.run?.status).toBe("waiting_approval");

      // Another tab of the same browser: its own session storage, so nothing of the first page's.
      const again = await context.newPage();
      again.on("pageerror", (err) => errors.push(String(err)));
      await signIn(again, url, alice.token);
      await again.goto(`${url}/#/agents/outliver/threads/${encodeURIComponent(threadId)}`);
      const card = again.getByTestId("approval-card");
      await card.waitFor();
      expect(await card.textContent()).toContain("write_file");
      expect(JSON.parse(await again.getByTestId("approval-args").inputValue())).toEqual({ path: OUTLIVE_PATH, content: OUTLIVE_CONTENT });
      await again.locator('[data-testid="thread-item"][aria-current="true"][data-status="interrupted"]').waitFor();
      if (backend === "local") await screenshot(again, "runs-approval-after-close");

      await again.getByTestId("approval-approve").click();
      await waitForAnswer(again, OUTLIVE_ANSWER);
      await waitForIdle(again);
      await again.locator('[data-testid="tool-card"][data-tool-name="write_file"][data-state="done"]').waitFor();
      expect(await readFile(wick, "outliver", OUTLIVE_PATH)).toBe(OUTLIVE_CONTENT);
      expect(await finalRunStatus(wick, runId!)).toBe("done");
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test("cancel mid tool call: the card says cancelled, during the run and after a reload", async () => {
    const { context, page, errors } = await newPage(browser());
    try {
      await signIn(page, url, alice.token);
      await openNewThread(page, "sleeper");
      const started = page.waitForResponse((r) => /\/agents\/[^/]+\/stream$/.test(r.url()));
      await send(page, "Wait.");
      await started;
      const card = page.locator('[data-testid="tool-card"][data-tool-name="execute"]');
      await page.locator('[data-testid="tool-card"][data-tool-name="execute"][data-state="running"]').waitFor();
      expect(await card.textContent()).toContain(SLEEP_COMMAND);
      const cancel = page.waitForRequest((r) => r.method() === "POST" && /\/runs\/[^/]+\/cancel$/.test(r.url()));
      await page.getByTestId("chat-stop").click();
      const runId = decodeURIComponent(/\/runs\/([^/]+)\/cancel$/.exec((await cancel).url())![1]!);
      await waitForIdle(page);
      expect(await finalRunStatus(wick, runId)).toBe("cancelled");
      await page.locator('[data-testid="tool-card"][data-tool-name="execute"][data-state="cancelled"]').waitFor();
      expect(await card.getByTestId("tool-state").textContent()).toBe("cancelled");
      if (backend === "local") await screenshot(page, "runs-cancelled-tool");

      // From the thread's history: the call's result says it was cancelled.
      await page.reload();
      await page.locator('[data-testid="tool-card"][data-tool-name="execute"][data-state="cancelled"]').waitFor();
      expect(await card.getByTestId("tool-state").textContent()).toBe("cancelled");
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test("a message over the body limit is not sent: it stays in the box, the reason names the limit in MiB", async () => {
    const { context, page, errors } = await newPage(browser());
    try {
      await signIn(page, url, alice.token);
      await openNewThread(page, "hello");
      // 5 MiB: past the gateway's 4 MiB limit on request bodies.
      const big = "y".repeat(5 * 1024 * 1024);
      const box = page.getByTestId("chat-input");
      await box.fill(big);
      await page.getByTestId("chat-send").click();
      const refusal = page.getByTestId("composer-error");
      await refusal.waitFor();
      expect(await refusal.textContent()).toContain("4 MiB");
      expect(await refusal.textContent()).not.toContain("4194304");
      expect((await box.inputValue()).length).toBe(big.length);
      expect(await page.locator('[data-testid="message"][data-role="user"]').count()).toBe(0);
      // The reason wraps inside the page.
      expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
      if (backend === "local") await screenshot(page, "runs-oversized-message");
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test("a long message shows folded, with Show more", async () => {
    const { context, page, errors } = await newPage(browser());
    try {
      await signIn(page, url, alice.token);
      await openNewThread(page, "hello");
      const long = "word ".repeat(400_000); // 2 MB
      await page.getByTestId("chat-input").fill(long);
      await page.getByTestId("chat-send").click();
      const msg = page.locator('[data-testid="message"][data-role="user"]').last();
      const more = msg.getByTestId("show-more");
      await more.waitFor();
      expect((await msg.textContent())!.length).toBeLessThan(5_000);
      await waitForIdle(page);
      if (backend === "local") await screenshot(page, "runs-long-message");
      await more.click();
      expect((await msg.textContent())!.length).toBeGreaterThan(long.trim().length);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
