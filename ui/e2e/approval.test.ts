// Approval on an interactive agent: approve writes the file as asked, edit
// writes it with the edited arguments, reject with a reason writes nothing.
// Checked through the API. Sequential: the three share one file.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

import { APPROVE_ANSWER, APPROVE_CONTENT, APPROVE_PATH, EDITED_CONTENT } from "./fixtures.js";
import { client, newPage, openNewThread, readFile, send, signIn, suites, useBrowser, users, waitForAnswer, waitForIdle } from "./helpers.js";

const browser = useBrowser();
let page: Page;
let errors: string[];

const alice = users.alice;

describe.each(suites)("on the $backend backend", ({ url }) => {
  const wick = client(url, alice.token);

  beforeAll(async () => {
    ({ page, errors } = await newPage(browser()));
    await signIn(page, url, alice.token);
  });
  afterAll(async () => {
    await page?.context().close();
  });

  async function askForApproval(): Promise<void> {
    await openNewThread(page, "approve");
    await send(page, "Write the file.");
    await page.getByTestId("approval-card").waitFor();
    // The thread says it waits.
    await page.locator('[data-testid="thread-item"][data-status="interrupted"]').first().waitFor();
    await page.locator('[data-testid="tool-card"][data-tool-name="write_file"]').first().waitFor();
  }

  test("approve: the file is written as the agent asked", async () => {
    await askForApproval();
    await page.getByTestId("approval-approve").click();
    await waitForAnswer(page, APPROVE_ANSWER);
    await waitForIdle(page);
    await page.getByTestId("approval-card").waitFor({ state: "hidden" });
    await page.locator('[data-testid="tool-card"][data-tool-name="write_file"][data-state="done"]').last().waitFor();
    expect(await readFile(wick, "approve", APPROVE_PATH)).toBe(APPROVE_CONTENT);
    expect(errors).toEqual([]);
  });

  test("edit: the file is written with the edited arguments; bad JSON is refused first", async () => {
    await askForApproval();
    await page.getByTestId("approval-edit").click();
    const args = page.getByTestId("approval-args");
    const asked = JSON.parse(await args.inputValue()) as { path: string; content: string };
    expect(asked.path).toBe(APPROVE_PATH);
    // Invalid JSON is not sent: the card stays.
    await args.fill("{ not json");
    await page.getByTestId("approval-approve").click();
    await page.getByTestId("approval-card").waitFor();
    await args.fill(JSON.stringify({ ...asked, content: EDITED_CONTENT }));
    await page.getByTestId("approval-approve").click();
    await waitForAnswer(page, APPROVE_ANSWER);
    await waitForIdle(page);
    expect(await readFile(wick, "approve", APPROVE_PATH)).toBe(EDITED_CONTENT);
    expect(errors).toEqual([]);
  });

  test("reject with a reason: nothing is written and the run goes on", async () => {
    await askForApproval();
    const reason = page.getByTestId("approval-reason");
    // The reason field is on the card, or shows once Reject is pressed.
    if (!(await reason.isVisible())) await page.getByTestId("approval-reject").click();
    await reason.fill("not today");
    await page.getByTestId("approval-reject").click();
    await waitForAnswer(page, APPROVE_ANSWER);
    await waitForIdle(page);
    await page.locator('[data-testid="tool-card"][data-tool-name="write_file"][data-state="error"]').last().waitFor();
    // Still the edited content of the test before.
    expect(await readFile(wick, "approve", APPROVE_PATH)).toBe(EDITED_CONTENT);
    expect(errors).toEqual([]);
  });
});
