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

/**
 * How long a streamed reply may take from its message's send to its end
 * (ms): a wait in the page past it fails, naming what it waited on.
 */
const STREAM_MS = 60_000;
/** The assistant message being streamed. */
const STREAMING = '[data-testid="message"][data-role="assistant"][data-streaming]';

/** A frame painted while a reply streamed. */
interface Frame {
  /** How far (px) the view was from its bottom, or from where it was scrolled to. */
  px: number;
  /** Which element the streaming message was, in the order they were seen (0: the first); -1: none was in the DOM. */
  row: number;
}

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
      await expect.poll(() => list.getAttribute("data-count"), { timeout: 60_000, message: "the thread opened with all its messages" }).toBe(String(MESSAGES));

      // Opened at its bottom, with the last reply in view and few nodes.
      const last = list.getByText(replyText(RUNS), { exact: true });
      await last.waitFor();
      await expect.poll(() => distanceFromBottom(page), { message: "the thread opened at its bottom" }).toBeLessThan(1);
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
      await expect.poll(() => page.getByRole("tooltip").textContent(), { message: "the tooltip of Copy under the pointer" }).toBe("Copy message");
      if (backend === "local") await screenshot(page, "long-thread-tooltip");
      await page.mouse.move(0, 0);
      await page.getByRole("tooltip").waitFor({ state: "detached" });

      // To the top (the scroll lands again as the items there are measured).
      const first = list.getByText(userText(1), { exact: true });
      await expect
        .poll(
          async () => {
            await page.locator(".messages").evaluate((el) => el.scrollTo({ top: 0 }));
            return first.isVisible();
          },
          { message: "the first message in view after a scroll to the top" },
        )
        .toBe(true);
      expect(await itemNodes()).toBeLessThanOrEqual(MAX_ITEM_NODES);
      expect(await last.count()).toBe(0);

      // Back with the control that goes to the newest message.
      await page.getByTestId("scroll-to-bottom").click();
      await last.waitFor();
      await expect.poll(() => distanceFromBottom(page), { message: "the view at the bottom after the control that goes there" }).toBeLessThan(1);
      await page.getByTestId("scroll-to-bottom").waitFor({ state: "detached" });

      // A message at the end: its reply streams, and the view stays at the bottom while it does.
      // Every frame from the send to the reply's end, in the page: the view's
      // distance from its bottom, and which element the streaming message was
      // (each frame queries it again: a promise that held one would wait on it
      // forever once it left the DOM).
      const recorded = page.evaluate(
        ({ streaming, lastWord, ms }) =>
          new Promise<Frame[]>((resolve, reject) => {
            const frames: Frame[] = [];
            const seen: Element[] = [];
            let over = false;
            const giveUp = setTimeout(() => {
              over = true;
              const shown = frames.filter((f) => f.row >= 0).length;
              reject(new Error(`the streamed reply did not end (its last word "${lastWord}" in a finished message) within ${ms} ms: ${frames.length} frames, ${shown} with the streaming message`));
            }, ms);
            const frame = () => {
              if (over) return;
              const el = document.querySelector(".messages")!;
              const msg = document.querySelector(streaming);
              if (msg && !seen.includes(msg)) seen.push(msg);
              frames.push({ px: el.scrollHeight - el.scrollTop - el.clientHeight, row: msg ? seen.indexOf(msg) : -1 });
              const finished = Array.from(document.querySelectorAll('[data-testid="message"][data-role="assistant"]:not([data-streaming])'));
              if (finished.some((m) => (m.textContent ?? "").split(/\s+/).includes(lastWord))) {
                clearTimeout(giveUp);
                return resolve(frames);
              }
              requestAnimationFrame(frame);
            };
            requestAnimationFrame(frame);
          }),
        { streaming: STREAMING, lastWord: FINAL_WORDS.at(-1)!, ms: STREAM_MS },
      );
      await send(page, "One more, please.");
      const frames = await recorded;
      await waitForAnswer(page, FINAL_TEXT);
      await waitForIdle(page);
      const streamed = frames.slice(frames.findIndex((f) => f.row >= 0), frames.findLastIndex((f) => f.row >= 0) + 1);
      expect(streamed.length, "frames painted while the reply streamed").toBeGreaterThan(10);
      // One element from the first token to the last: a row taken out of the
      // DOM or mounted again mid-stream loses its measured size.
      expect(streamed.filter((f) => f.row !== 0), "frames whose streaming message was another element, or none").toEqual([]);
      expect(Math.max(...streamed.map((f) => f.px)), "the view's greatest distance from its bottom while the reply streamed").toBeLessThan(80);
      expect(await distanceFromBottom(page)).toBeLessThan(1);
      expect(words(await page.getByTestId("message").last().textContent())).toContain(FINAL_WORDS.at(-1));
      expect(await page.getByTestId("scroll-to-bottom").count()).toBe(0);
      expect(await itemNodes()).toBeLessThanOrEqual(MAX_ITEM_NODES);
      if (backend === "local") await screenshot(page, "long-thread");

      // A scroll up made in the frame a streamed token grows the reply (taller
      // than the view, so it starts above it) is the reader's: the list's size
      // correction, written from the position before that scroll, does not
      // undo it, and the view stays there until the reply has ended. The
      // scroll is written from an animation frame after a token's change,
      // before the frame's resize observations, as a wheel turn's would land.
      // Every frame from the scroll to the run's end (Stop gone), in the page:
      // how far the view moved from where it was scrolled to, and which
      // element the streaming message was.
      const afterScroll = page.evaluate(
        ({ streaming, ms }) =>
          new Promise<Frame[]>((resolve, reject) => {
            const el = document.querySelector(".messages")!;
            const frames: Frame[] = [];
            let waitingFor = "the tall reply streamed 1,200 px tall";
            let over = false;
            const giveUp = setTimeout(() => {
              over = true;
              tall.disconnect();
              reject(new Error(`${waitingFor}: not within ${ms} ms (${frames.length} frames since the scroll)`));
            }, ms);
            const tall = new MutationObserver(() => {
              const msg = document.querySelector(streaming);
              if (!msg || msg.getBoundingClientRect().height < 1200) return;
              tall.disconnect();
              requestAnimationFrame(() => {
                if (over) return;
                el.scrollTop -= 600;
                const wanted = el.scrollTop;
                waitingFor = "the tall reply's run ended (Stop gone) after the view was scrolled up";
                // Compared with, not waited on.
                const seen: Element[] = [msg];
                const frame = () => {
                  if (over) return;
                  if (!document.querySelector('[data-testid="chat-stop"]')) {
                    clearTimeout(giveUp);
                    return resolve(frames);
                  }
                  const now = document.querySelector(streaming);
                  if (now && !seen.includes(now)) seen.push(now);
                  frames.push({ px: el.scrollTop - wanted, row: now ? seen.indexOf(now) : -1 });
                  requestAnimationFrame(frame);
                };
                requestAnimationFrame(frame);
              });
            });
            tall.observe(el, { subtree: true, childList: true, characterData: true });
          }),
        { streaming: STREAMING, ms: STREAM_MS },
      );
      await send(page, "And a tall one.");
      const after = await afterScroll;
      // The reply went on for many frames after the scroll (1,200 px of its more than 10,000).
      expect(after.length, "frames painted after the scroll up while the reply streamed").toBeGreaterThan(10);
      expect(Math.max(...after.map((f) => Math.abs(f.px))), "how far the view moved from where it was scrolled to, until the reply ended").toBeLessThan(1);
      expect(after.filter((f) => f.row !== 0), "frames whose streaming message was another element, or none").toEqual([]);
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
