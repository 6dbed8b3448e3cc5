// Screenshots of each main view, written to docs/ui/*.png on every run (the
// README links them), on the local backend. Each view is also checked for
// what it must show, and the narrow one for fitting in 375 px.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

import { HELLO_TEXT, REPORT_HEADING, TOOLS_ANSWER } from "./fixtures.js";
import { agentItem, closeSettings, newPage, openNewThread, openSettings, runInTerminal, settingsTab, screenshot, send, showPanelTab, signIn, suites, useBrowser, users, waitForAnswer, waitForIdle } from "./helpers.js";

/** The narrowest viewport the UI must work in. */
const NARROW = 375;

const browser = useBrowser();

const carol = users.carol;
const local = suites.filter((s) => s.backend === "local");

describe.each(local)("screenshots ($backend backend)", ({ url }) => {
  let page: Page;
  let errors: string[];
  beforeAll(async () => {
    ({ page, errors } = await newPage(browser()));
    await signIn(page, url, carol.token);
  });
  afterAll(async () => {
    await page?.context().close();
  });

  // The tests of this file build on each other: one thread, several views.
  test("chat with tool cards", async () => {
    await openNewThread(page, "writer");
    await send(page, "Plan, then write the report.");
    await waitForAnswer(page, TOOLS_ANSWER);
    await waitForIdle(page);
    await page.locator('[data-testid="tool-card"][data-state="done"]').nth(1).waitFor();
    // The run wrote the report: the Canvas opened by itself and shows it.
    await expect.poll(() => page.getByTestId("canvas-markdown").first().textContent()).toContain(REPORT_HEADING);
    await screenshot(page, "chat");
  });

  test("files", async () => {
    await page.getByTestId("panel-tab-files").click();
    await page.locator('[data-testid="file-entry"][data-path$="report.md"]').first().click();
    await page.getByTestId("file-editor").waitFor();
    await screenshot(page, "files");
  });

  test("canvas", async () => {
    await page.getByTestId("panel-tab-canvas").click();
    await expect.poll(() => page.getByTestId("canvas-markdown").first().textContent()).toContain(REPORT_HEADING);
    await screenshot(page, "canvas");
  });

  test("terminal", async () => {
    await showPanelTab(page, "terminal");
    await runInTerminal(page, "echo hi && ls", "hi");
    // The shell starts in the workspace: the report is there.
    await expect.poll(async () => (await page.getByTestId("terminal").locator(".xterm-rows > *").allTextContents()).join("\n")).toContain("report.md");
    await screenshot(page, "terminal");
  });

  test("approval card", async () => {
    await openNewThread(page, "approve");
    await send(page, "Write the file.");
    await page.getByTestId("approval-card").waitFor();
    await screenshot(page, "approval");
    await page.getByTestId("approval-approve").click();
    await waitForIdle(page);
  });

  test("agents and settings", async () => {
    await agentItem(page, "writer").click();
    await openSettings(page);
    await settingsTab(page, "sandbox");
    await page.getByTestId("container-state").waitFor();
    await page.getByTestId("backend-select").waitFor();
    await screenshot(page, "settings");
    await closeSettings(page);
    await page.getByTestId("agent-new").click();
    await page.getByTestId("agent-form").waitFor();
    await screenshot(page, "agents");
    await page.keyboard.press("Escape");
    expect(errors).toEqual([]);
  });

  // The dark one has tool cards and the Canvas in it: the views whose colours matter most.
  for (const { name, colorScheme, width, height, agent, ask, answer } of [
    { name: "mobile", colorScheme: "light", width: NARROW, height: 740, agent: "hello", ask: "Say hello.", answer: HELLO_TEXT },
    { name: "dark", colorScheme: "dark", width: 1280, height: 800, agent: "writer", ask: "Plan, then write the report.", answer: TOOLS_ANSWER },
  ] as const) {
    test(`${name}: ${width} px, ${colorScheme}`, async () => {
      const p = await newPage(browser(), { width, height, colorScheme });
      try {
        await signIn(p.page, url, carol.token);
        await openNewThread(p.page, agent);
        await send(p.page, ask);
        await waitForAnswer(p.page, answer);
        await waitForIdle(p.page);
        if (agent === "writer") await expect.poll(() => p.page.getByTestId("canvas-markdown").first().textContent()).toContain(REPORT_HEADING);
        // Nothing wider than the viewport: no sideways scrolling.
        const scrollWidth = await p.page.evaluate(() => document.scrollingElement?.scrollWidth ?? 0);
        expect(scrollWidth).toBeLessThanOrEqual(width);
        if (colorScheme === "dark") {
          // The theme follows prefers-color-scheme: a dark background.
          const bg = await p.page.evaluate(() => getComputedStyle(document.body).backgroundColor);
          const [r = 255, g = 255, b = 255] = (bg.match(/\d+/g) ?? []).map(Number);
          expect(r + g + b).toBeLessThan(3 * 128);
        }
        await screenshot(p.page, name);
        expect(p.errors).toEqual([]);
      } finally {
        await p.context.close();
      }
    });
  }
});
