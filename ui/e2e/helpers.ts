// What the browser tests share: the suites and users the global setup
// started, a browser, signing in, and the app's data-testids.
import { mkdir } from "node:fs/promises";
import path from "node:path";

import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { Wick } from "@wick-agent/sdk";
import { afterAll, beforeAll, expect, inject } from "vitest";

import { launchChromium } from "./harness/browser.mjs";
import { repoRoot } from "./harness/suite.mjs";

export const suites = inject("suites");
export const users = inject("users");

/** How long the app may take to show what a test waits for. */
export const UI_TIMEOUT_MS = 20_000;

/** Where the test run writes its screenshots (linked from the README). */
export const screenshotDir = path.join(repoRoot, "docs", "ui");

/** Launches Chromium before the file's tests and closes it after them; call at the top level. */
export function useBrowser(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  return () => {
    if (!browser) throw new Error("Chromium is not running: useBrowser's beforeAll has not run");
    return browser;
  };
}

/** An API client of a suite as a user, to check what the UI did. */
export function client(url: string, token: string): Wick {
  return new Wick({ baseUrl: url, token, reconnect: false });
}

export interface PageOptions {
  width?: number;
  height?: number;
  colorScheme?: "light" | "dark";
}

/** A page in a fresh browser context (its own storage: another person). */
export async function newPage(browser: Browser, opts: PageOptions = {}): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({
    viewport: { width: opts.width ?? 1280, height: opts.height ?? 800 },
    colorScheme: opts.colorScheme ?? "light",
  });
  context.setDefaultTimeout(UI_TIMEOUT_MS);
  const page = await context.newPage();
  // Uncaught exceptions in the page fail the tests that look at them.
  const errors: string[] = [];
  page.on("pageerror", (err) => errors.push(String(err)));
  return { context, page, errors };
}

/** inNewPage runs fn on a page of a browser context of its own, closed after. */
export async function inNewPage(browser: Browser, fn: (page: Page, errors: string[]) => Promise<void>): Promise<void> {
  const { context, page, errors } = await newPage(browser);
  try {
    await fn(page, errors);
  } finally {
    await context.close();
  }
}

/** Opens the app and answers its token prompt; the agents are then listed (in the sidebar, closed on a narrow screen). */
export async function signIn(page: Page, url: string, token: string): Promise<void> {
  await page.goto(url + "/");
  await page.getByTestId("token-dialog").waitFor();
  await page.getByTestId("token-input").fill(token);
  await page.getByTestId("token-submit").click();
  await page.getByTestId("token-dialog").waitFor({ state: "hidden" });
  await page.getByTestId("agent-list").waitFor({ state: "attached" });
}

/**
 * Shows the sidebar: on a wide screen it is always there; on a narrow one
 * it covers the chat and opens with its toggle, as a person would open it.
 */
export async function showSidebar(page: Page): Promise<void> {
  const list = page.getByTestId("agent-list");
  await list.waitFor({ state: "attached" });
  if (await list.isVisible()) return;
  await page.getByTestId("sidebar-toggle").click();
  await list.waitFor();
}

/** The list entry of an agent. */
export function agentItem(page: Page, agentId: string): Locator {
  return page.locator(`[data-testid="agent-item"][data-agent-id="${agentId}"]`);
}

/** Selects an agent (opening the sidebar when it is closed). */
export async function selectAgent(page: Page, agentId: string): Promise<void> {
  await showSidebar(page);
  await agentItem(page, agentId).click();
  await expect.poll(() => agentItem(page, agentId).getAttribute("aria-current")).toBe("true");
}

/** Selects an agent and starts a new thread with it. */
export async function openNewThread(page: Page, agentId: string): Promise<void> {
  await selectAgent(page, agentId);
  await page.getByTestId("thread-new").click();
  await page.getByTestId("chat-input").waitFor();
}

/** Sends a message with the send button. */
export async function send(page: Page, text: string): Promise<void> {
  await page.getByTestId("chat-input").fill(text);
  await page.getByTestId("chat-send").click();
}

/** The text of the newest assistant message. */
export function lastAssistantText(page: Page): Locator {
  return page.locator('[data-testid="message"][data-role="assistant"]').last().getByTestId("message-text");
}

/** Whitespace-normalised text. */
export function words(s: string | null): string {
  return (s ?? "").replace(/\s+/g, " ").trim();
}

/** Waits until the newest assistant message reads exactly want. */
export async function waitForAnswer(page: Page, want: string, timeout = UI_TIMEOUT_MS): Promise<void> {
  await expect.poll(async () => words(await lastAssistantText(page).textContent().catch(() => "")), { timeout }).toBe(want);
}

/**
 * Waits until the run of the open thread has ended: Stop is gone, Send is
 * back and the box takes a message (Send itself is enabled only when the box
 * has text in it).
 */
export async function waitForIdle(page: Page, timeout = UI_TIMEOUT_MS): Promise<void> {
  await page.getByTestId("chat-stop").waitFor({ state: "hidden", timeout });
  await page.getByTestId("chat-send").waitFor({ timeout });
  expect(await page.getByTestId("chat-input").isEnabled()).toBe(true);
}

/** The thread open in the page: the list entry marked as selected, else the newest. */
export async function currentThreadId(page: Page): Promise<string> {
  const selected = page.locator('[data-testid="thread-item"][aria-current="true"], [data-testid="thread-item"][aria-selected="true"]');
  const item = (await selected.count()) > 0 ? selected.first() : page.getByTestId("thread-item").first();
  const id = await item.getAttribute("data-thread-id");
  if (!id) throw new Error("the open thread's list entry has no data-thread-id");
  return id;
}

/** The run's status through the API, once it is no longer running. */
export async function finalRunStatus(wick: Wick, runId: string): Promise<string> {
  let status = "";
  await expect
    .poll(
      async () => {
        const { data } = await wick.api.GET("/runs/{run_id}", { params: { path: { run_id: runId } } });
        status = data?.run?.status ?? "";
        return status === "running";
      },
      { timeout: UI_TIMEOUT_MS },
    )
    .toBe(false);
  return status;
}

/** Reads a workspace file through the API. */
export async function readFile(wick: Wick, agentId: string, filePath: string): Promise<string> {
  return new TextDecoder().decode(await wick.download(agentId, filePath));
}

/** Saves a screenshot of the page as docs/ui/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(screenshotDir, { recursive: true });
  // Animations and the caret would make every run's images differ.
  await page.screenshot({ path: path.join(screenshotDir, `${name}.png`), animations: "disabled", caret: "hide" });
}

/** Records every text the newest assistant message shows, in order. */
export async function recordAssistantText(page: Page): Promise<() => Promise<string[]>> {
  await page.evaluate(() => {
    const w = window as unknown as { __snapshots: string[] };
    w.__snapshots = [];
    const read = () => {
      const msgs = document.querySelectorAll('[data-testid="message"][data-role="assistant"]');
      const text = msgs[msgs.length - 1]?.querySelector('[data-testid="message-text"]')?.textContent ?? "";
      const t = text.replace(/\s+/g, " ").trim();
      if (t && t !== w.__snapshots[w.__snapshots.length - 1]) w.__snapshots.push(t);
    };
    new MutationObserver(read).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  return () => page.evaluate(() => (window as unknown as { __snapshots: string[] }).__snapshots);
}

/** Types a command into the terminal panel (open) and waits until a row reads want. */
export async function runInTerminal(page: Page, command: string, want: string, timeout = UI_TIMEOUT_MS): Promise<void> {
  const term = page.getByTestId("terminal");
  await term.locator(".xterm-rows").waitFor();
  // Typed before the shell's first prompt, the line is echoed by the
  // terminal and the prompt lands on the output's row: wait for a prompt.
  const rows = async () => (await term.locator(".xterm-rows > *").allTextContents()).map((r) => r.trim());
  await expect.poll(async () => (await rows()).some((r) => /[$#]$/.test(r)), { timeout }).toBe(true);
  await term.click();
  await page.keyboard.type(command);
  await page.keyboard.press("Enter");
  // xterm's DOM renderer: one element per row.
  await expect.poll(rows, { timeout }).toContain(want);
}

/** Shows a tab of the side panel, opening the panel first when it is closed (it opens by itself only when it has something to show). */
export async function showPanelTab(page: Page, tab: string): Promise<void> {
  const t = page.getByTestId(`panel-tab-${tab}`);
  if (!(await t.isVisible())) await page.getByTestId("panel-toggle").click();
  await t.click();
}

/** Opens the open agent's settings dialog from the top bar. */
export async function openSettings(page: Page): Promise<Locator> {
  await page.getByTestId("agent-settings-open").click();
  const dialog = page.getByTestId("agent-settings");
  await dialog.waitFor();
  return dialog;
}

/** Shows a section of the open settings dialog: "general", or "sandbox" (sandbox, hooks and skills). */
export async function settingsTab(page: Page, tab: "general" | "sandbox"): Promise<void> {
  await page.getByTestId(`settings-tab-${tab}`).click();
}

/** Closes the settings dialog with Escape. */
export async function closeSettings(page: Page): Promise<void> {
  await page.keyboard.press("Escape");
  await page.getByTestId("agent-settings").waitFor({ state: "hidden" });
}
