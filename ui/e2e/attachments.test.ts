// Files attached in the composer, in a real browser: a text file picked
// through the file input is uploaded into the agent's workspace, the message
// sent names its path and the agent's tool reads it; the same name again
// gets a suffix instead of overwriting; a file over the gateway's upload
// limit is refused on its chip in words and the typed text stays; an agent
// without a backend says why it takes no files; at 375 px the chips fit,
// and a file dropped on the conversation is attached.
import { mkdtemp, rm, truncate, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

import type { Wick } from "@wick-agent/sdk";
import { describe, expect, test } from "vitest";

import { READUP_ANSWER, READUP_PATH } from "./fixtures.js";
import { client, currentThreadId, newPage, openNewThread, readFile, screenshot, signIn, suites, useBrowser, users, waitForAnswer, waitForIdle } from "./helpers.js";

const browser = useBrowser();
const alice = users.alice;

/** The gateway's default upload limit (-max-upload-bytes), which the suites keep. */
const UPLOAD_LIMIT = 100 << 20;
const NOTES = "Line one of the notes.\nLine two: 42.\n";

/** Creates an agent of the test's own, deleted when the test ends. */
async function ownAgent(wick: Wick, id: string, backend?: string): Promise<() => Promise<void>> {
  await wick.api.POST("/agents", {
    body: { agent_id: id, name: `Attachments ${id}`, model: "script:readup", ...(backend ? { backend: { type: backend } } : {}) },
  });
  return async () => {
    await wick.api.DELETE("/agents/{agent_id}", { params: { path: { agent_id: id } } });
  };
}

/** The names in the agent's upload directory. */
async function uploads(wick: Wick, agentId: string): Promise<string[]> {
  const { data } = await wick.api.GET("/agents/{agent_id}/files/list", { params: { path: { agent_id: agentId }, query: { path: "/workspace/uploads" } } });
  return (data?.entries ?? []).map((e) => e.name ?? "").sort();
}

describe.each(suites)("on the $backend backend", ({ url, backend }) => {
  test("a file attached through the input is uploaded, named in the message and read by the agent; a collision gets a suffix; an oversized file is refused and the text kept", async () => {
    const wick = client(url, alice.token);
    const agentId = `attach-${backend}-${Math.random().toString(16).slice(2, 8)}`;
    const removeAgent = await ownAgent(wick, agentId, backend);
    const dir = await mkdtemp(path.join(os.tmpdir(), "wick-attach-"));
    const { context, page, errors } = await newPage(browser());
    try {
      await signIn(page, url, alice.token);
      await openNewThread(page, agentId);

      await page.getByTestId("attach-input").setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from(NOTES) });
      const chip = page.getByTestId("attachment");
      await expect.poll(() => chip.getAttribute("data-status")).toBe("done");
      expect(await chip.getAttribute("data-path")).toBe(READUP_PATH);
      expect(await chip.textContent()).toContain(`notes.txt${NOTES.length} bytes`);

      await page.getByTestId("chat-input").fill("Read the notes I attached.");
      await page.getByTestId("chat-send").click();
      await waitForAnswer(page, READUP_ANSWER);
      await waitForIdle(page);
      expect(await chip.count()).toBe(0);
      const sent = `Read the notes I attached.\n\nAttached files (in the workspace): ${READUP_PATH}`;
      const bubble = page.locator('[data-testid="message"][data-role="user"]').last();
      expect(await bubble.textContent()).toContain(`Attached files (in the workspace): ${READUP_PATH}`);
      // The workspace has the bytes; the thread has the message as sent and the tool's reading of the file.
      expect(await readFile(wick, agentId, READUP_PATH)).toBe(NOTES);
      const { data } = await wick.api.GET("/threads/{thread_id}", { params: { path: { thread_id: await currentThreadId(page) } } });
      const messages = data?.thread?.messages ?? [];
      expect(messages.filter((m) => m.role === "user").map((m) => String(m.content ?? ""))).toEqual([sent]);
      expect(messages.filter((m) => m.role === "tool").map((m) => String(m.content ?? "")).join("\n")).toContain("Line two: 42.");

      // The same name again: a new file beside it, the first one untouched.
      await page.getByTestId("attach-input").setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("second\n") });
      await expect.poll(() => chip.getAttribute("data-status")).toBe("done");
      expect(await chip.getAttribute("data-path")).toBe("/workspace/uploads/notes-1.txt");
      expect(await readFile(wick, agentId, "/workspace/uploads/notes-1.txt")).toBe("second\n");
      expect(await readFile(wick, agentId, READUP_PATH)).toBe(NOTES);

      // Over the limit: a sparse file one byte larger, refused on its chip in words.
      const big = path.join(dir, "big.bin");
      await writeFile(big, "");
      await truncate(big, UPLOAD_LIMIT + 1);
      await page.getByTestId("chat-input").fill("Keep this text");
      await page.getByTestId("attach-input").setInputFiles(big);
      const bigChip = page.locator('[data-testid="attachment"][data-status="failed"]');
      await bigChip.waitFor();
      expect(await bigChip.getByTestId("attachment-error").textContent()).toBe("Too large: the upload limit is 100 MiB");
      await page.getByTestId("chat-send").click();
      await expect.poll(() => page.getByTestId("composer-error").textContent()).toContain("a file did not upload");
      expect(await page.getByTestId("chat-input").inputValue()).toBe("Keep this text");
      expect(await uploads(wick, agentId)).toEqual(["notes-1.txt", "notes.txt"]);
      if (backend === "local") await screenshot(page, "attachments");
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await rm(dir, { recursive: true, force: true });
      await removeAgent();
    }
  });

  test("at 375 px the chips fit and a dropped file is attached, and an agent without a backend says why it takes no files", async () => {
    const wick = client(url, alice.token);
    const suffix = Math.random().toString(16).slice(2, 8);
    const withBackend = `attach-narrow-${backend}-${suffix}`;
    const without = `attach-none-${backend}-${suffix}`;
    const removeA = await ownAgent(wick, withBackend, backend);
    const removeB = await ownAgent(wick, without);
    const { context, page, errors } = await newPage(browser(), { width: 375, height: 740 });
    try {
      await signIn(page, url, alice.token);
      await openNewThread(page, withBackend);
      await page.getByTestId("attach-input").setInputFiles([
        { name: "a rather long name for a file of notes.txt", mimeType: "text/plain", buffer: Buffer.from("a") },
        { name: "data.csv", mimeType: "text/csv", buffer: Buffer.from("x,y\n1,2\n") },
      ]);
      await expect.poll(() => page.locator('[data-testid="attachment"][data-status="done"]').count()).toBe(2);
      expect(await page.getByTestId("attachment").first().getAttribute("data-path")).toBe("/workspace/uploads/a_rather_long_name_for_a_file_of_notes.txt");
      // A file dropped on the conversation is attached too.
      const drop = await page.evaluateHandle(() => {
        const dt = new DataTransfer();
        dt.items.add(new File(["dropped\n"], "dropped.txt", { type: "text/plain" }));
        return dt;
      });
      for (const type of ["dragenter", "dragover", "drop"]) await page.locator(".messages").dispatchEvent(type, { dataTransfer: drop });
      await expect.poll(() => page.locator('[data-testid="attachment"][data-status="done"]').count()).toBe(3);
      expect(await readFile(wick, withBackend, "/workspace/uploads/dropped.txt")).toBe("dropped\n");
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
      expect(await page.getByTestId("chat-send").isEnabled()).toBe(true);

      await openNewThread(page, without);
      const attach = page.getByTestId("attach-button");
      expect(await attach.getAttribute("aria-disabled")).toBe("true");
      // Still focusable, it says why when pressed.
      await attach.focus();
      await page.keyboard.press("Enter");
      expect(await page.getByTestId("attach-notice").textContent()).toContain("no workspace (no backend)");
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await removeA();
      await removeB();
    }
  });
});
