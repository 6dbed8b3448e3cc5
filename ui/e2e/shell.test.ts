// The shell: the layout at 1280 and 375 px, the theme switch, the settings
// dialog, an accessibility check of the main views in light and dark, and
// the main flow by keyboard alone. Layout does not depend on the sandbox:
// the local backend only.
import AxeBuilder from "@axe-core/playwright";
import type { Page } from "playwright-core";
import { describe, expect, test } from "vitest";

import { APPROVE_ANSWER, REPORT_HEADING, TOOLS_ANSWER } from "./fixtures.js";
import { closeSettings, newPage, openNewThread, openSettings, screenshot, settingsTab, send, showSidebar, signIn, suites, useBrowser, users, waitForAnswer, waitForIdle } from "./helpers.js";

const browser = useBrowser();
// Not bob: users.test.ts checks that bob has no thread at all.
const dave = users.dave;
const local = suites.filter((s) => s.backend === "local");

/** The chat's readable measure at 1280 px: about 720 px. */
const MEASURE = { min: 600, max: 760 };
const NARROW = 375;

/** The width the message list gives its messages (its content box). */
function measure(page: Page): Promise<number> {
  return page.locator(".messages").evaluate((el) => {
    const s = getComputedStyle(el);
    return el.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
  });
}

function panelOpen(page: Page): Promise<boolean> {
  return page.getByTestId("side-panel").isVisible();
}

/** Whether the element is inside the viewport, horizontally and vertically. */
function inViewport(page: Page, testId: string): Promise<boolean> {
  return page.getByTestId(testId).evaluate((el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight;
  });
}

/** The sum of the body's background channels: under 384 is dark. */
async function bodyBrightness(page: Page): Promise<number> {
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const [r = 0, g = 0, b = 0] = (bg.match(/\d+/g) ?? []).map(Number);
  return r + g + b;
}

/** Presses Tab until the focused element matches selector; fails after max presses. */
async function tabTo(page: Page, selector: string, max = 80): Promise<void> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press("Tab");
    if (await page.evaluate((sel) => document.activeElement?.matches(sel) ?? false, selector)) return;
  }
  throw new Error(`Tab never reached ${selector}`);
}

/** The serious and critical axe violations of the page, as "rule: target" lines. */
async function axeProblems(page: Page): Promise<string[]> {
  const { violations } = await new AxeBuilder({ page }).analyze();
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(" ")} (${n.failureSummary?.split("\n")[1]?.trim() ?? ""})`));
}

describe.each(local)("the shell ($backend backend)", ({ url }) => {
  test("1280 px: the chat keeps a readable measure, the side panel opens when the agent writes a file, its width is kept", async () => {
    const { context, page, errors } = await newPage(browser(), { width: 1280, height: 800 });
    try {
      await signIn(page, url, dave.token);
      await openNewThread(page, "writer");
      // A fresh thread: nothing to show beside it.
      expect(await panelOpen(page)).toBe(false);
      const m = await measure(page);
      expect(m).toBeGreaterThanOrEqual(MEASURE.min);
      expect(m).toBeLessThanOrEqual(MEASURE.max);
      await screenshot(page, "layout-fresh");

      await send(page, "Plan, then write the report.");
      await waitForAnswer(page, TOOLS_ANSWER);
      await waitForIdle(page);
      await expect.poll(() => panelOpen(page)).toBe(true);
      await expect.poll(() => page.getByTestId("canvas-markdown").first().textContent()).toContain(REPORT_HEADING);
      expect(await measure(page)).toBeLessThanOrEqual(MEASURE.max);

      // The panel's edge: the arrow keys widen it, the width outlives a reload.
      const handle = page.getByTestId("panel-resize");
      const before = Number(await handle.getAttribute("aria-valuenow"));
      await handle.focus();
      await page.keyboard.press("ArrowLeft");
      await page.keyboard.press("ArrowLeft");
      const wider = Number(await handle.getAttribute("aria-valuenow"));
      expect(wider).toBeGreaterThan(before);
      await expect.poll(() => page.getByTestId("side-panel").evaluate((el) => Math.round(el.getBoundingClientRect().width))).toBe(wider);
      await screenshot(page, "layout-written");
      await page.reload();
      // The thread has a plan: the panel opens with it again, as wide as it was.
      await expect.poll(() => panelOpen(page)).toBe(true);
      expect(Number(await page.getByTestId("panel-resize").getAttribute("aria-valuenow"))).toBe(wider);
      // Closed with its own button.
      await page.getByTestId("panel-close").click();
      expect(await panelOpen(page)).toBe(false);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test("375 px: every tab and control reachable, the panel closes, no placeholder cut, nothing wider than the screen", async () => {
    const { context, page, errors } = await newPage(browser(), { width: NARROW, height: 740 });
    const fits = async () => expect(await page.evaluate(() => (document.scrollingElement?.scrollWidth ?? 0) <= innerWidth)).toBe(true);
    try {
      await signIn(page, url, dave.token);
      await openNewThread(page, "approve");
      for (const id of ["sidebar-toggle", "agent-settings-open", "theme-menu", "panel-toggle", "chat-input"]) {
        expect(await inViewport(page, id), id).toBe(true);
      }
      await fits();

      // The approval card: its reason box shows its whole placeholder.
      await send(page, "Write the file.");
      await page.getByTestId("approval-card").waitFor();
      const reason = page.getByTestId("approval-reason");
      await reason.scrollIntoViewIfNeeded();
      const [textWidth, room] = await reason.evaluate((el: HTMLInputElement) => {
        const s = getComputedStyle(el);
        const ctx = document.createElement("canvas").getContext("2d")!;
        ctx.font = `${s.fontSize} ${s.fontFamily}`;
        return [ctx.measureText(el.placeholder).width, el.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight)];
      });
      expect(textWidth).toBeLessThanOrEqual(room);
      expect(await inViewport(page, "approval-reject")).toBe(true);
      await fits();
      await screenshot(page, "narrow-approval");
      await page.getByTestId("approval-approve").click();
      await waitForAnswer(page, APPROVE_ANSWER);

      // Every tab of the panel can be brought into view and chosen.
      await page.getByTestId("panel-toggle").click();
      for (const tab of ["todos", "tasks", "files", "canvas", "knowledge", "usage", "terminal"]) {
        const t = page.getByTestId(`panel-tab-${tab}`);
        await t.scrollIntoViewIfNeeded();
        expect(await inViewport(page, `panel-tab-${tab}`), tab).toBe(true);
        await t.click();
        expect(await t.getAttribute("aria-selected")).toBe("true");
      }
      await fits();
      expect(await inViewport(page, "panel-close")).toBe(true);
      await screenshot(page, "narrow-panel");
      await page.getByTestId("panel-close").click();
      expect(await panelOpen(page)).toBe(false);
      await fits();
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test("the theme switch: Dark, kept across a reload, Light on a dark system, then System", async () => {
    const { context, page, errors } = await newPage(browser(), { colorScheme: "light" });
    try {
      await signIn(page, url, dave.token);
      expect(await bodyBrightness(page)).toBeGreaterThan(3 * 128);
      await page.getByTestId("theme-menu").click();
      await page.getByTestId("theme-dark").click();
      await expect.poll(() => bodyBrightness(page)).toBeLessThan(3 * 128);
      expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe("dark");
      await page.reload();
      // Set before the app runs: the first paint is already dark.
      expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe("dark");
      expect(await bodyBrightness(page)).toBeLessThan(3 * 128);
      expect(await page.getByTestId("theme-menu").getAttribute("data-theme-choice")).toBe("dark");

      await page.emulateMedia({ colorScheme: "dark" });
      await page.getByTestId("theme-menu").click();
      await page.getByTestId("theme-light").click();
      await expect.poll(() => bodyBrightness(page)).toBeGreaterThan(3 * 128);
      await page.getByTestId("theme-menu").click();
      await page.getByTestId("theme-system").click();
      await expect.poll(() => bodyBrightness(page)).toBeLessThan(3 * 128);
      expect(await page.evaluate(() => localStorage.getItem("wick.theme"))).toBeNull();
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test("the settings dialog: opened by keyboard, Tab stays inside, Escape closes it and focus returns", async () => {
    const { context, page, errors } = await newPage(browser());
    try {
      await signIn(page, url, dave.token);
      await openNewThread(page, "writer");
      // Settings are not in the sidebar any more.
      expect(await page.getByTestId("container-state").count()).toBe(0);
      const open = page.getByTestId("agent-settings-open");
      await open.focus();
      await page.keyboard.press("Enter");
      const dialog = page.getByTestId("agent-settings");
      await dialog.waitFor();
      expect(await dialog.getAttribute("role")).toBe("dialog");
      await settingsTab(page, "sandbox");
      await page.getByTestId("container-state").waitFor();
      for (let i = 0; i < 12; i++) {
        await page.keyboard.press("Tab");
        expect(await dialog.evaluate((el) => el.contains(document.activeElement))).toBe(true);
      }
      await screenshot(page, "settings-dialog");
      // Tab may have stopped on Close, whose tooltip the first Escape would
      // close (the innermost layer goes first): Escape from a tab of the dialog.
      await page.getByTestId("settings-tab-sandbox").focus();
      await page.keyboard.press("Escape");
      await dialog.waitFor({ state: "hidden" });
      expect(await open.evaluate((el) => el === document.activeElement)).toBe(true);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  for (const colorScheme of ["light", "dark"] as const) {
    test(`axe: no serious or critical violations in the main views, ${colorScheme}`, async () => {
      const { context, page, errors } = await newPage(browser(), { colorScheme });
      try {
        await signIn(page, url, dave.token);
        expect(await axeProblems(page), "start").toEqual([]);
        await openNewThread(page, "writer");
        await send(page, "Plan, then write the report.");
        await waitForAnswer(page, TOOLS_ANSWER);
        await waitForIdle(page);
        await expect.poll(() => page.getByTestId("canvas-markdown").first().textContent()).toContain(REPORT_HEADING);
        expect(await axeProblems(page), "chat and canvas").toEqual([]);
        for (const tab of ["todos", "files"]) {
          await page.getByTestId(`panel-tab-${tab}`).click();
          expect(await axeProblems(page), tab).toEqual([]);
        }
        await openSettings(page);
        expect(await axeProblems(page), "settings, general").toEqual([]);
        await settingsTab(page, "sandbox");
        await page.getByTestId("container-state").waitFor();
        expect(await axeProblems(page), "settings").toEqual([]);
        await closeSettings(page);
        await openNewThread(page, "approve");
        await send(page, "Write the file.");
        await page.getByTestId("approval-card").waitFor();
        expect(await axeProblems(page), "approval").toEqual([]);
        await page.getByTestId("approval-approve").click();
        await waitForIdle(page);
        await showSidebar(page);
        await page.getByTestId("agent-new").click();
        await page.getByTestId("agent-form").waitFor();
        expect(await axeProblems(page), "agent form").toEqual([]);
        expect(errors).toEqual([]);
      } finally {
        await context.close();
      }
      // Two runs and seven axe scans: longer than the default on a busy machine.
    }, 180_000);
  }

  test("by keyboard alone: pick an agent, write, send, approve", async () => {
    const { context, page, errors } = await newPage(browser());
    try {
      await signIn(page, url, dave.token);
      await page.locator("body").focus();
      await tabTo(page, '[data-testid="agent-item"][data-agent-id="approve"]');
      await page.keyboard.press("Enter");
      await tabTo(page, '[data-testid="thread-new"]');
      await page.keyboard.press("Enter");
      await tabTo(page, '[data-testid="chat-input"]');
      await page.keyboard.type("Write the file.");
      await tabTo(page, '[data-testid="chat-send"]');
      await page.keyboard.press("Enter");
      await page.getByTestId("approval-card").waitFor();
      await tabTo(page, '[data-testid="approval-approve"]');
      await page.keyboard.press("Enter");
      await waitForAnswer(page, APPROVE_ANSWER);
      await waitForIdle(page);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
