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
    await page.locator('[data-testid="thread-item"][aria-current="true"][data-status="interrupted"]').waitFor();
    // The card is the waiting call's: its tool and its arguments, which nothing ran yet.
    expect(await page.getByTestId("approval-card").textContent()).toContain("write_file");
    expect(JSON.parse(await page.getByTestId("approval-args").inputValue())).toEqual({ path: APPROVE_PATH, content: APPROVE_CONTENT });
    expect(await page.locator('[data-testid="tool-card"][data-tool-name="write_file"]').count()).toBe(0);
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
    const args = page.getByTestId("approval-args");
    const edit = page.getByTestId("approval-edit");
    const asked = JSON.parse(await args.inputValue()) as { path: string; content: string };
    // Unchanged arguments are approved as they are, not "edited".
    expect(await edit.isEnabled()).toBe(false);
    // Invalid JSON cannot be sent, and the card says why.
    await args.fill("{ not json");
    expect(await args.getAttribute("aria-invalid")).toBe("true");
    expect(await edit.isEnabled()).toBe(false);
    expect(await page.getByTestId("approval-approve").isEnabled()).toBe(false);
    expect(await page.getByTestId("approval-card").textContent()).toContain("not JSON");
    await args.fill(JSON.stringify({ ...asked, content: EDITED_CONTENT }));
    expect(await args.getAttribute("aria-invalid")).toBe("false");
    // Edited: plain Approve would not send what is shown, so only "Approve edited" does.
    expect(await page.getByTestId("approval-approve").isEnabled()).toBe(false);
    await edit.click();
    await waitForAnswer(page, APPROVE_ANSWER);
    await waitForIdle(page);
    expect(await readFile(wick, "approve", APPROVE_PATH)).toBe(EDITED_CONTENT);
    expect(errors).toEqual([]);
  });

  test("reject with a reason: nothing is written and the run goes on", async () => {
    await askForApproval();
    // The reason is told to the model with the rejection.
    await page.getByTestId("approval-reason").fill("not today");
    await page.getByTestId("approval-reject").click();
    await waitForAnswer(page, APPROVE_ANSWER);
    await waitForIdle(page);
    const rejected = page.locator('[data-testid="tool-card"][data-tool-name="write_file"][data-state="rejected"]').last();
    await rejected.waitFor();
    expect(await rejected.textContent()).toContain("not today");
    expect(await rejected.getByTestId("tool-state").textContent()).toBe("rejected");
    // Still the edited content of the test before.
    expect(await readFile(wick, "approve", APPROVE_PATH)).toBe(EDITED_CONTENT);
    expect(errors).toEqual([]);
  });
});
