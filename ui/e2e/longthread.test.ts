// A thread of 10,000 messages in a real browser: it opens at its bottom with
// only the items near the view in the DOM, scrolls to its first message and
// back to its last, and a reply streamed at its end keeps the view at the
// bottom. The thread is written through the public API as a client would:
// runs of 99 user messages each (Invoke takes at most 100 per run), each
// answered by the agent's scripted model.
import { describe, expect, test } from "vitest";

import { client, newPage, screenshot, send, signIn, suites, useBrowser, users, waitForAnswer, waitForIdle, words } from "./helpers.js";

const browser = useBrowser();

const RUNS = 100;
const USER_MESSAGES_PER_RUN = 99;
/** Every run adds its user messages and one reply. */
const MESSAGES = RUNS * (USER_MESSAGES_PER_RUN + 1);
/** More item nodes than this in the DOM means the list is not virtualised. */
const MAX_ITEM_NODES = 300;

const userText = (n: number) => `Long thread message ${n}.`;
const replyText = (run: number) => `Reply ${run} of ${RUNS}.`;
/** The reply to the message the browser sends: long enough to stream over many frames. */
const FINAL_WORDS = Array.from({ length: 150 }, (_, i) => `streamed${i}`);
const FINAL_TEXT = FINAL_WORDS.join(" ");
/** A reply taller than the view (a paragraph a word) and shorter than a folded message, streamed 20 ms a word. */
const TALL_WORDS = Array.from({ length: 400 }, (_, i) => `t${i}`);
const TALL_TEXT = TALL_WORDS.join("\n\n");

/**
 * The agent's model: one short reply per seeding run (a scripted model
 * plays its turns by the number of replies in the conversation), then the
 * long one and a tall one, streamed 20 ms a word.
 */
const SCRIPT = {
  delay: "20ms",
  turns: [...Array.from({ length: RUNS }, (_, r) => ({ text: replyText(r + 1) })), { text: FINAL_TEXT }, { text: TALL_TEXT }],
};

/** How far (px) the message view is from its bottom. */
function distanceFromBottom(page: import("playwright-core").Page): Promise<number> {
  return page.locator(".messages").evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
}

describe.each(suites)("on the $backend backend", ({ url, backend }) => {
  test("a thread of 10,000 messages keeps a few hundred item nodes, scrolls end to end and follows a streamed reply", { timeout: 240_000 }, async () => {
    const agentId = `long-${backend}-${Math.random().toString(16).slice(2, 8)}`;
    const wick = client(url, users.alice.token);
    // Summarizing would only change what the model is sent, not the thread; off, the runs are quicker.
    await wick.api.POST("/agents", { body: { agent_id: agentId, name: "Long thread", model: `script:${JSON.stringify(SCRIPT)}`, hooks: { summarization: false } } });
    const { context, page, errors } = await newPage(browser());
    try {
      let threadId = "";
      for (let r = 0; r < RUNS; r++) {
        const messages = Array.from({ length: USER_MESSAGES_PER_RUN }, (_, i) => ({ role: "user", content: userText(r * (USER_MESSAGES_PER_RUN + 1) + i + 1) }));
        const { data } = await wick.api.POST("/agents/{agent_id}/invoke", {
          params: { path: { agent_id: agentId } },
          body: { messages, ...(threadId ? { thread_id: threadId } : {}) },
        });
        threadId = data?.thread_id ?? "";
        expect(threadId).not.toBe("");
      }
      const { data: stored } = await wick.api.GET("/threads/{thread_id}", { params: { path: { thread_id: threadId } } });
      expect(stored?.thread?.messages?.length).toBe(MESSAGES);

      await signIn(page, url, users.alice.token);
      await page.goto(`${url}/#/agents/${agentId}/threads/${encodeURIComponent(threadId)}`);
      const list = page.getByTestId("message-list");
      await expect.poll(() => list.getAttribute("data-count"), { timeout: 60_000 }).toBe(String(MESSAGES));

      // Opened at its bottom, with the last reply in view and few nodes.
      const last = list.getByText(replyText(RUNS), { exact: true });
      await last.waitFor();
      await expect.poll(() => distanceFromBottom(page)).toBeLessThan(1);
      const itemNodes = () => page.locator('[role="listitem"]').count();
      expect(await itemNodes()).toBeGreaterThan(0);
      expect(await itemNodes()).toBeLessThanOrEqual(MAX_ITEM_NODES);
      expect(await page.getByTestId("message").count()).toBeLessThanOrEqual(MAX_ITEM_NODES);
      // Each row tells assistive technology where it is in the whole thread.
      expect(await page.locator('[role="listitem"]').last().getAttribute("aria-setsize")).toBe(String(MESSAGES));
      expect(await page.locator('[role="listitem"]').last().getAttribute("aria-posinset")).toBe(String(MESSAGES));

      // The rows' action buttons share one tooltip: it names the button under the pointer.
      const copy = page.locator(".msg-with-actions").last().getByTestId("message-copy");
      await copy.hover();
      await expect.poll(() => page.getByRole("tooltip").textContent()).toBe("Copy message");
      if (backend === "local") await screenshot(page, "long-thread-tooltip");
      await page.mouse.move(0, 0);
      await page.getByRole("tooltip").waitFor({ state: "detached" });

      // To the top (the scroll lands again as the items there are measured).
      const first = list.getByText(userText(1), { exact: true });
      await expect
        .poll(async () => {
          await page.locator(".messages").evaluate((el) => el.scrollTo({ top: 0 }));
          return first.isVisible();
        })
        .toBe(true);
      expect(await itemNodes()).toBeLessThanOrEqual(MAX_ITEM_NODES);
      expect(await last.count()).toBe(0);

      // Back with the control that goes to the newest message.
      await page.getByTestId("scroll-to-bottom").click();
      await last.waitFor();
      await expect.poll(() => distanceFromBottom(page)).toBeLessThan(1);
      await page.getByTestId("scroll-to-bottom").waitFor({ state: "detached" });

      // A message at the end: its reply streams, and the view stays at the bottom while it does.
      // Every frame while the reply streams, in the page: its distance from the bottom.
      const recorded = page.evaluate(
        () =>
          new Promise<number[]>((resolve) => {
            const out: number[] = [];
            let seen = false;
            const frame = () => {
              const el = document.querySelector(".messages")!;
              const streaming = document.querySelector('[data-testid="message"][data-role="assistant"][data-streaming]');
              if (streaming) {
                seen = true;
                out.push(el.scrollHeight - el.scrollTop - el.clientHeight);
              } else if (seen) return resolve(out);
              requestAnimationFrame(frame);
            };
            requestAnimationFrame(frame);
          }),
      );
      await send(page, "One more, please.");
      const distances = await recorded;
      await waitForAnswer(page, FINAL_TEXT);
      await waitForIdle(page);
      // Frames are few on a loaded machine: a handful still shows the view kept at the bottom.
      expect(distances.length).toBeGreaterThan(2);
      expect(Math.max(...distances)).toBeLessThan(80);
      expect(await distanceFromBottom(page)).toBeLessThan(1);
      expect(words(await page.getByTestId("message").last().textContent())).toContain(FINAL_WORDS.at(-1));
      expect(await page.getByTestId("scroll-to-bottom").count()).toBe(0);
      expect(await itemNodes()).toBeLessThanOrEqual(MAX_ITEM_NODES);
      if (backend === "local") await screenshot(page, "long-thread");

      // A scroll up made in the frame a streamed token grows the reply (taller
      // than the view, so it starts above it) is the reader's: the list's size
      // correction, written from the position before that scroll, does not
      // undo it. The scroll is written from an animation frame after a
      // token's change, before the frame's resize observations, as a wheel
      // turn's would land.
      const scrolledTo = page.evaluate(
        () =>
          new Promise<number>((resolve) => {
            const el = document.querySelector(".messages")!;
            const seen = new MutationObserver(() => {
              const msg = document.querySelector('[data-testid="message"][data-role="assistant"][data-streaming]');
              if (!msg || msg.getBoundingClientRect().height < 1200) return;
              seen.disconnect();
              requestAnimationFrame(() => {
                el.scrollTop -= 600;
                const wanted = el.scrollTop;
                // Two frames on: the scroll's event and the token's measure are handled.
                requestAnimationFrame(() => requestAnimationFrame(() => resolve(el.scrollTop - wanted)));
              });
            });
            seen.observe(el, { subtree: true, childList: true, characterData: true });
          }),
      );
      await send(page, "And a tall one.");
      expect(await scrolledTo).toBeLessThan(1);
      await waitForIdle(page);
      await page.locator(".messages").evaluate((el) => el.scrollTo({ top: el.scrollHeight }));
      await list.getByText(TALL_WORDS.at(-1)!, { exact: true }).waitFor();
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await wick.api.DELETE("/agents/{agent_id}", { params: { path: { agent_id: agentId } } }).catch(() => {});
    }
  });
});
