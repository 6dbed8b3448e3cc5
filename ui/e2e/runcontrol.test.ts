// Run control in the browser: Stop lets the step in flight finish and
// Continue goes on from there, also after a reload; the question card of ask_user survives a
// reload and is answered with a choice.
import { describe, expect, test } from "vitest";

import { ASK_ANSWER, ASK_QUESTION, SLOW_TEXT, STEP_ANSWER } from "./fixtures.js";
import { client, finalRunStatus, inNewPage, lastAssistantText, openNewThread, send, signIn, suites, useBrowser, users, waitForAnswer, waitForIdle, words } from "./helpers.js";

const browser = useBrowser();
const alice = users.alice;

describe.each(suites)("on the $backend backend", ({ url }) => {
  const wick = client(url, alice.token);

  test("Stop ends the run after its step; after a reload Continue goes on from there", async () => {
    await inNewPage(browser(), async (page, errors) => {
      await signIn(page, url, alice.token);
      await openNewThread(page, "stepper");
      await send(page, "Work it out.");
      await expect.poll(async () => words(await lastAssistantText(page).textContent()).split(" ").length).toBeGreaterThan(5);
      const stop = page.waitForRequest((r) => r.method() === "POST" && /\/runs\/[^/]+\/stop$/.test(r.url()));
      await page.getByTestId("chat-stop-step").click();
      const runId = decodeURIComponent(/\/runs\/([^/]+)\/stop$/.exec((await stop).url())![1]!);
      await page.getByTestId("run-stopped").waitFor();
      await waitForIdle(page);
      expect(await finalRunStatus(wick, runId)).toBe("stopped");
      // The step finished: the whole text and the calculation's result.
      expect(words(await lastAssistantText(page).textContent())).toBe(SLOW_TEXT);
      await page.locator('[data-testid="tool-card"][data-tool-name="calculate"][data-state="done"]').waitFor();

      await page.reload();
      await page.getByTestId("run-stopped").waitFor();
      await page.getByTestId("chat-continue").click();
      await waitForAnswer(page, STEP_ANSWER);
      await waitForIdle(page);
      expect(await page.getByTestId("chat-continue").count()).toBe(0);
      expect(await page.getByTestId("run-error").count()).toBe(0);
      expect(errors).toEqual([]);
    });
  });

  test("the question card survives a reload and a choice answers it", async () => {
    await inNewPage(browser(), async (page, errors) => {
      await signIn(page, url, alice.token);
      await openNewThread(page, "asker");
      await send(page, "Paint it.");
      await page.getByTestId("question-card").waitFor();
      await page.reload();
      const card = page.getByTestId("question-card");
      await card.waitFor();
      expect(await card.textContent()).toContain(ASK_QUESTION);
      expect(await page.getByTestId("question-choice").allTextContents()).toEqual(["red", "blue"]);
      await page.getByTestId("question-choice").last().click();
      await waitForAnswer(page, ASK_ANSWER);
      await waitForIdle(page);
      await page.locator('[data-testid="tool-card"][data-tool-name="ask_user"][data-state="done"]').waitFor();
      expect(await page.getByTestId("question-card").count()).toBe(0);
      expect(errors).toEqual([]);
    });
  });
});
