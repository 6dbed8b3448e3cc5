// The terminal panel: a shell in the agent's sandbox over the WebSocket.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

import { agentItem, launchChromium, newPage, signIn, suites, users } from "./helpers.js";

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

describe.each(suites)("on the $backend backend", ({ url }) => {
  test("echo hi prints hi", async () => {
    const { context, page, errors } = await newPage(browser);
    try {
      await signIn(page, url, users.alice.token);
      await agentItem(page, "hello").click();
      await page.getByTestId("panel-tab-terminal").click();
      const term = page.getByTestId("terminal");
      await term.locator(".xterm-rows").waitFor();
      await term.click();
      await page.keyboard.type("echo hi");
      await page.keyboard.press("Enter");
      // xterm's DOM renderer: one element per row.
      await expect.poll(async () => (await term.locator(".xterm-rows > *").allTextContents()).map((r) => r.trim()), { timeout: 30_000 }).toContain("hi");
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
