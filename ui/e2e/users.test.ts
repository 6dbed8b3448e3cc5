// A second user, with another token in a fresh browser context, sees none of
// the first user's threads.
import { describe, expect, test } from "vitest";

import { HELLO_TEXT } from "./fixtures.js";
import { agentItem, client, currentThreadId, newPage, openNewThread, send, signIn, suites, useBrowser, users, waitForAnswer, waitForIdle } from "./helpers.js";

const browser = useBrowser();

describe.each(suites)("on the $backend backend", ({ url }) => {
  test("bob sees none of alice's threads", async () => {
    const a = await newPage(browser());
    const b = await newPage(browser());
    try {
      await signIn(a.page, url, users.alice.token);
      await openNewThread(a.page, "hello");
      await send(a.page, "A thread of alice.");
      await waitForAnswer(a.page, HELLO_TEXT);
      await waitForIdle(a.page);
      const aliceThread = await currentThreadId(a.page);
      const { data: aliceThreads } = await client(url, users.alice.token).api.GET("/threads");
      expect(aliceThreads?.threads?.map((t) => t.thread_id)).toContain(aliceThread);

      await signIn(b.page, url, users.bob.token);
      await agentItem(b.page, "hello").click();
      await b.page.getByTestId("thread-list").waitFor();
      expect(await b.page.getByTestId("thread-item").count()).toBe(0);
      expect(await b.page.content()).not.toContain(aliceThread);
      expect(await b.page.getByTestId("message").count()).toBe(0);
      const { data: bobThreads } = await client(url, users.bob.token).api.GET("/threads");
      expect(bobThreads?.threads ?? []).toEqual([]);
      expect([...a.errors, ...b.errors]).toEqual([]);
    } finally {
      await a.context.close();
      await b.context.close();
    }
  });
});
