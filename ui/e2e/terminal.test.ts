// The terminal panel: a shell in the agent's sandbox over the WebSocket.
import { describe, expect, test } from "vitest";

import { agentItem, newPage, runInTerminal, showPanelTab, signIn, suites, useBrowser, users } from "./helpers.js";

const browser = useBrowser();

describe.each(suites)("on the $backend backend", ({ url }) => {
  test("echo hi prints hi", async () => {
    const { context, page, errors } = await newPage(browser());
    try {
      await signIn(page, url, users.alice.token);
      await agentItem(page, "hello").click();
      await showPanelTab(page, "terminal");
      await runInTerminal(page, "echo hi", "hi", 30_000);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
