// Message actions and the chat's helpers in the browser, against the real
// suite: a new thread's example prompts, copy / retry / edit-and-send-again
// (each a new run on the same thread, the earlier turns kept), the
// scroll-to-bottom button while a long reply streams, and the keyboard
// shortcuts with their help sheet.
import type { Page } from "playwright-core";
import { describe, expect, test } from "vitest";

import { HELLO_TEXT, SCRIPTS, SLOW_END } from "./fixtures.js";
import { client, currentThreadId, newPage, openNewThread, screenshot, send, signIn, suites, useBrowser, users, waitForAnswer, waitForIdle, words } from "./helpers.js";

const browser = useBrowser();
const alice = users.alice;

/** The user messages of a thread as the API stores them. */
async function storedUserTexts(wick: ReturnType<typeof client>, threadId: string): Promise<string[]> {
  const { data } = await wick.api.GET("/threads/{thread_id}", { params: { path: { thread_id: threadId } } });
  return (data?.thread?.messages ?? []).filter((m) => m.role === "user").map((m) => String(m.content ?? ""));
}

/** How far (px) the message list is from its bottom. */
function fromBottom(page: Page): Promise<number> {
  return page.locator(".messages").evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
}

/** Leaves every field, so that single-key shortcuts reach the page. */
async function leaveFields(page: Page): Promise<void> {
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
}

/**
 * scrollUpUntilAway scrolls the messages to the top until the list shows
 * its scroll-to-bottom control. A scroll made by a script in the very frame
 * a streamed token is followed can be undone by that follow on a loaded
 * machine, so it is made again, as a reader's next wheel turn would.
 */
async function scrollUpUntilAway(page: Page): Promise<void> {
  const list = page.locator(".messages");
  await expect
    .poll(async () => {
      await list.evaluate((el) => el.scrollTo({ top: 0 }));
      return page.getByTestId("scroll-to-bottom").count();
    })
    .toBe(1);
}

describe.each(suites)("on the $backend backend", ({ url, backend }) => {
  const wick = client(url, alice.token);

  test("a new thread shows the agent and example prompts; one, chosen by keyboard, fills the box", async () => {
    const { context, page, errors } = await newPage(browser());
    try {
      await signIn(page, url, alice.token);
      await openNewThread(page, "hello");
      const empty = page.getByTestId("empty-state");
      await empty.waitFor();
      expect(await empty.getByRole("heading").textContent()).toBe("Hello agent");
      expect(words(await page.getByTestId("empty-state-description").textContent())).not.toBe("");
      const prompts = page.getByRole("button", { name: /workspace/ });
      expect(await page.getByTestId("example-prompt").count()).toBe(4);
      if (backend === "local") await screenshot(page, "actions-empty-state");
      const first = prompts.first();
      const prompt = (await first.textContent()) ?? "";
      await first.focus();
      await page.keyboard.press("Enter");
      const box = page.getByTestId("chat-input");
      expect(await box.inputValue()).toBe(prompt);
      expect(await box.evaluate((el) => el === document.activeElement)).toBe(true);
      await page.keyboard.press("Enter");
      await waitForAnswer(page, HELLO_TEXT);
      await waitForIdle(page);
      expect(await page.getByTestId("empty-state").count()).toBe(0);
      expect(await storedUserTexts(wick, await currentThreadId(page))).toEqual([prompt]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test("copy gives the reply's text; retry answers the last message again; an edited message is sent as a new run on the thread", async () => {
    const { context, page, errors } = await newPage(browser());
    try {
      await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: url });
      await signIn(page, url, alice.token);
      await openNewThread(page, "hello");
      await send(page, "Say hello.");
      await waitForAnswer(page, HELLO_TEXT);
      await waitForIdle(page);
      const threadId = await currentThreadId(page);

      const reply = page.locator(".msg-with-actions").filter({ has: page.locator('[data-role="assistant"]') }).last();
      await reply.hover();
      await reply.getByTestId("message-retry").waitFor();
      if (backend === "local") await screenshot(page, "actions-message");
      const copy = reply.getByTestId("message-copy");
      await copy.click();
      await expect.poll(() => copy.getAttribute("aria-label")).toBe("Copied");
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(HELLO_TEXT);

      // Retry: the script's next turn answers the same question again.
      await reply.getByTestId("message-retry").click();
      await waitForAnswer(page, SCRIPTS.hello.end_text);
      await waitForIdle(page);
      await expect.poll(() => storedUserTexts(wick, threadId)).toEqual(["Say hello.", "Say hello."]);
      // Only the newest reply offers a retry.
      expect(await page.getByTestId("message-retry").count()).toBe(1);

      // Edit the first message: the edited text goes out as a new message at the end.
      await page.locator(".msg-with-actions-user").first().hover();
      await page.getByTestId("message-edit").first().click();
      const editor = page.getByTestId("message-editor-input");
      expect(await editor.inputValue()).toBe("Say hello.");
      await editor.fill("Say hello once more.");
      // The new reply reads as the one before it: the answer counts only once
      // its own bubble is there.
      const replies = page.locator('[data-testid="message"][data-role="assistant"]');
      const repliesBefore = await replies.count();
      await editor.press("Enter");
      await expect.poll(() => replies.count()).toBe(repliesBefore + 1);
      await waitForAnswer(page, SCRIPTS.hello.end_text);
      await waitForIdle(page);
      await expect.poll(() => storedUserTexts(wick, threadId)).toEqual(["Say hello.", "Say hello.", "Say hello once more."]);
      const shown = await page.locator('[data-testid="message"][data-role="user"]').allTextContents();
      expect(shown.map(words)).toEqual(["Say hello.", "Say hello.", "Say hello once more."]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test("scrolled up while a reply streams, the view stays put and a button (or End) goes to the bottom; retry and edit wait for the run", async () => {
    const { context, page, errors } = await newPage(browser(), { height: 420 });
    try {
      await signIn(page, url, alice.token);
      await openNewThread(page, "slow");
      await send(page, "Count slowly.");
      const list = page.locator(".messages");
      // Long enough to scroll, and still streaming.
      await expect.poll(() => list.evaluate((el) => el.scrollHeight - el.clientHeight)).toBeGreaterThan(150);
      expect(await fromBottom(page)).toBeLessThan(80);
      expect(await page.getByTestId("scroll-to-bottom").count()).toBe(0);
      expect(await page.getByTestId("message-edit").isDisabled()).toBe(true);

      const jump = page.getByTestId("scroll-to-bottom");
      await scrollUpUntilAway(page);
      // New tokens arrive below; the view does not follow them.
      await expect.poll(() => jump.getAttribute("data-unread")).toBe("true");
      expect(await list.evaluate((el) => el.scrollTop)).toBe(0);
      if (backend === "local") await screenshot(page, "actions-scroll-to-bottom");
      await jump.click();
      await expect.poll(() => fromBottom(page)).toBeLessThan(2);
      await jump.waitFor({ state: "detached" });

      await scrollUpUntilAway(page);
      await leaveFields(page);
      await page.keyboard.press("End");
      await expect.poll(() => fromBottom(page)).toBeLessThan(2);
      await jump.waitFor({ state: "detached" });
      await waitForIdle(page, 60_000);

      // At the bottom, the view follows what comes: the next message and its reply.
      const height = await list.evaluate((el) => el.scrollHeight);
      await send(page, "Once more.");
      await waitForAnswer(page, SLOW_END);
      await waitForIdle(page);
      expect(await list.evaluate((el) => el.scrollHeight)).toBeGreaterThan(height);
      expect(await fromBottom(page)).toBeLessThan(2);
      expect(await page.getByTestId("scroll-to-bottom").count()).toBe(0);
      expect(await page.getByTestId("message-edit").first().isDisabled()).toBe(false);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test("shortcuts: ? opens the help sheet, / searches threads, Ctrl+K writes, Ctrl+Shift+O starts a new thread", async () => {
    const { context, page, errors } = await newPage(browser());
    try {
      await signIn(page, url, alice.token);
      await openNewThread(page, "hello");
      await send(page, "Say hello.");
      await waitForAnswer(page, HELLO_TEXT);
      await waitForIdle(page);
      const threadId = await currentThreadId(page);

      await leaveFields(page);
      await page.keyboard.press("?");
      const sheet = page.getByTestId("shortcuts");
      await sheet.waitFor();
      const rows = (await sheet.getByTestId("shortcut").allTextContents()).map(words);
      for (const does of ["Write a message", "Start a new thread", "Search the threads", "Go to the newest message", "Cancel the run"]) {
        expect(rows.some((r) => r.includes(does))).toBe(true);
      }
      if (backend === "local") await screenshot(page, "actions-shortcuts");
      await page.keyboard.press("Escape");
      await sheet.waitFor({ state: "detached" });
      // And from its button.
      await page.getByRole("button", { name: "Keyboard shortcuts" }).click();
      await sheet.waitFor();
      await page.getByTestId("shortcuts-close").click();
      await sheet.waitFor({ state: "detached" });

      // "?" typed in the box is a character.
      await page.getByTestId("chat-input").fill("");
      await page.getByTestId("chat-input").press("?");
      expect(await page.getByTestId("chat-input").inputValue()).toBe("?");
      expect(await sheet.count()).toBe(0);
      await page.getByTestId("chat-input").fill("");

      await leaveFields(page);
      await page.keyboard.press("/");
      await expect.poll(() => page.getByTestId("thread-search").evaluate((el) => el === document.activeElement)).toBe(true);
      expect(await page.getByTestId("thread-search").inputValue()).toBe("");
      await page.keyboard.press("Control+K");
      await expect.poll(() => page.getByTestId("chat-input").evaluate((el) => el === document.activeElement)).toBe(true);

      await page.keyboard.press("Control+Shift+O");
      await page.getByTestId("empty-state").waitFor();
      expect(await page.evaluate(() => location.hash)).not.toContain(threadId);
      await expect.poll(() => page.getByTestId("chat-input").evaluate((el) => el === document.activeElement)).toBe(true);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
