// An ACP agent in the browser (docs/acp.md): alice's agent runs the ACP test
// agent (services/agent/internal/acp/acptest/acp-test-agent) in its sandbox.
// Its thought shows in the Thinking block, apart from the answer; its plan in
// the Todos panel; its permission requests as the approval card, approved
// or rejected in the UI and checked through the API. Sequential: one thread.
import { readFile as readLocalFile } from "node:fs/promises";

import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";

import { client, closeSettings, lastAssistantText, newPage, openSettings, openNewThread, settingsTab, readFile, screenshot, send, showPanelTab, signIn, suites, useBrowser, users, waitForAnswer, waitForIdle, words } from "./helpers.js";

/** What the test agent's "hello" command streams (its Prompt doc comment). */
const THOUGHT = "The user greets me.";
const HELLO_ANSWER = "Hello from the ACP test agent.";
// The service marks a high-priority entry in its title (planTodos in
// services/agent/internal/acp/turn.go).
const PLAN = [
  { title: "(high priority) Greet the user", status: "done" },
  { title: "Wait for a task", status: "pending" },
];

/** The files the "ask" commands ask to write, the test agent's answers and what it writes. */
const ALLOWED_PATH = "/workspace/acp-ui.txt";
const ALLOWED_ANSWER = "Permission allow: written.";
const ALLOWED_CONTENT = "written with permission\n";
const ALWAYS_PATH = "/workspace/acp-always.txt";
const ALWAYS_NEXT_PATH = "/workspace/acp-always-next.txt";
const REJECTED_PATH = "/workspace/acp-no.txt";
const REJECTED_ANSWER = "Permission reject: nothing written.";

/** The agent's id, in alice's agents of each suite. */
const AGENT = "acp-ui";

const browser = useBrowser();
const alice = users.alice;
const agentBin = inject("acpAgentBin");

describe.each(suites)("ACP agent on the $backend backend", ({ backend, url }) => {
  const wick = client(url, alice.token);
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    await wick.api.POST("/agents", {
      body: {
        agent_id: AGENT,
        name: "ACP test agent",
        backend: { type: backend },
        approval: "interactive",
        // An upload is written without its executable bit, so the command
        // sets it before it replaces itself with the agent.
        acp: { command: "/bin/sh", args: ["-c", "chmod +x acp-test-agent && exec ./acp-test-agent"] },
      },
    });
    await wick.upload(AGENT, "/workspace/acp-test-agent", await readLocalFile(agentBin));
    ({ page, errors } = await newPage(browser()));
    await signIn(page, url, alice.token);
  });
  afterAll(async () => {
    await page?.context().close();
  });

  test("hello: the thought in its block, the answer apart, the plan in Todos", async () => {
    await openNewThread(page, AGENT);
    await send(page, "hello");
    await waitForAnswer(page, HELLO_ANSWER);
    await waitForIdle(page);
    const thought = page.getByTestId("thought");
    expect(await thought.count()).toBe(1);
    expect(words(await thought.getByTestId("thought-text").textContent())).toBe(THOUGHT);
    // Folded once the answer followed.
    expect(await thought.getAttribute("open")).toBeNull();
    expect(words(await thought.locator("summary").textContent())).toBe("Thought");
    expect(await thought.getByTestId("thought-text").isVisible()).toBe(false);
    // The answer is an ordinary assistant message, without the thought.
    expect(await lastAssistantText(page).textContent()).not.toContain(THOUGHT);
    // The ACP agent reports no token usage, so no usage line claims zero;
    // its settings say Wick's hooks do not apply to it.
    await page.getByTestId("run-end").last().waitFor({ state: "attached" });
    expect(await page.getByTestId("run-usage").count()).toBe(0);
    await openSettings(page);
    await settingsTab(page, "sandbox");
    expect(await page.getByTestId("hooks-acp").isVisible()).toBe(true);
    expect(await page.getByTestId("hook-toggle").count()).toBe(0);
    await closeSettings(page);
    // The plan, as the Todos panel's entries.
    await showPanelTab(page, "todos");
    await expect
      .poll(async () =>
        Promise.all(
          (await page.getByTestId("todo-item").all()).map(async (li) => ({
            title: words(await li.locator(".wp-todo-title").textContent()),
            status: await li.getAttribute("data-status"),
          })),
        ),
      )
      .toEqual(PLAN);
    // Opened by a click, the block shows its text.
    await thought.locator("summary").click();
    await thought.getByTestId("thought-text").waitFor();
    if (backend === "local") await screenshot(page, "acp");
    expect(errors).toEqual([]);
  });

  /**
   * Asks the agent to write path, decides the approval card with button and
   * waits for the answer; the call's tool card then ends in cardState.
   */
  async function decide(path: string, button: "approval-approve" | "approval-reject", answer: string, cardState: "done" | "error"): Promise<void> {
    await send(page, `ask ${path}`);
    const card = page.getByTestId("approval-card");
    await card.waitFor();
    // The card names the ACP tool call by its title.
    expect(words(await card.textContent())).toContain(`Write ${path}`);
    await page.getByTestId(button).click();
    await waitForAnswer(page, answer);
    await waitForIdle(page);
    await card.waitFor({ state: "hidden" });
    // The call's tool card ends as the agent reported it.
    await page.locator(`[data-testid="tool-card"][data-tool-name="edit"][data-tool-title="Write ${path}"][data-state="${cardState}"]`).waitFor();
  }

  test("ask, approved in the UI: the file is written", async () => {
    await decide(ALLOWED_PATH, "approval-approve", ALLOWED_ANSWER, "done");
    expect(await readFile(wick, AGENT, ALLOWED_PATH)).toBe(ALLOWED_CONTENT);
    expect(errors).toEqual([]);
  });

  test("ask, rejected in the UI: nothing is written", async () => {
    await decide(REJECTED_PATH, "approval-reject", REJECTED_ANSWER, "error");
    await expect(readFile(wick, AGENT, REJECTED_PATH)).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(errors).toEqual([]);
  });

  // Last: the remembered answer decides every later request of the kind on this thread.
  test("ask, approved for this thread: the next request of the kind is not asked", async () => {
    const asked = page.locator('[data-testid="approval-card"], [data-testid="approval-decided"]');
    await send(page, `ask ${ALWAYS_PATH}`);
    await page.getByTestId("approval-card").waitFor();
    await page.getByTestId("approval-always").check();
    await page.getByTestId("approval-approve").click();
    await page.locator(`[data-testid="tool-card"][data-tool-name="edit"][data-tool-title="Write ${ALWAYS_PATH}"][data-state="done"]`).waitFor();
    await waitForIdle(page);
    expect(words(await page.getByTestId("approval-decided").last().textContent())).toContain("remembered for this thread");
    const before = await asked.count();
    await send(page, `ask ${ALWAYS_NEXT_PATH}`);
    await page.locator(`[data-testid="tool-card"][data-tool-name="edit"][data-tool-title="Write ${ALWAYS_NEXT_PATH}"][data-state="done"]`).waitFor();
    await waitForIdle(page);
    expect(await asked.count()).toBe(before);
    expect(await readFile(wick, AGENT, ALWAYS_NEXT_PATH)).toBe(ALLOWED_CONTENT);
    expect(errors).toEqual([]);
  });
});
