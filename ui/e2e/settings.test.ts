// The settings dialog edits an agent, in a real browser: the model, system
// prompt and tools are saved together with Save (a refusal of the server
// shows next to the field it names), persist across a reload (read back
// through the API), and the next run uses the new model; Escape closes the
// dialog without asking and keeps the unsaved edits; the sections are tabs
// that the arrow keys move between.
import type { Wick } from "@wick-agent/sdk";
import { describe, expect, test } from "vitest";

import { HELLO_TEXT } from "./fixtures.js";
import { client, closeSettings, newPage, openNewThread, openSettings, screenshot, send, signIn, suites, useBrowser, users, waitForAnswer, waitForIdle } from "./helpers.js";

const browser = useBrowser();
const alice = users.alice;

async function storedAgent(wick: Wick, id: string) {
  const { data } = await wick.api.GET("/agents/{agent_id}", { params: { path: { agent_id: id } } });
  return data?.agent;
}

describe.each(suites)("on the $backend backend", ({ url, backend }) => {
  test("model, system prompt and tools are edited, refused by field, saved, kept after a reload and used by the next run", async () => {
    const wick = client(url, alice.token);
    const agentId = `settings-${backend}-${Math.random().toString(16).slice(2, 8)}`;
    await wick.api.POST("/agents", {
      body: { agent_id: agentId, name: "Agent whose settings change", model: "script:slow", tools: ["calculate"], backend: { type: backend } },
    });
    const { context, page, errors } = await newPage(browser());
    try {
      await signIn(page, url, alice.token);
      await openNewThread(page, agentId);
      const dialog = await openSettings(page);
      const model = dialog.getByTestId("agent-edit-model");
      const prompt = dialog.getByTestId("agent-edit-prompt");
      const tools = dialog.getByTestId("agent-edit-tools");
      const save = dialog.getByTestId("agent-edit-save");
      expect(await model.inputValue()).toBe("script:slow");
      expect(await tools.inputValue()).toBe("calculate");
      expect(await save.isEnabled()).toBe(false);

      await model.fill("script:hello");
      await prompt.fill("Answer in one line.");
      await tools.fill("calculate\nnot a tool name");
      expect(await dialog.getByTestId("agent-edit-state").textContent()).toBe("Unsaved changes");

      // Escape closes without asking; the edits wait for the next open.
      await closeSettings(page);
      await openSettings(page);
      expect(await model.inputValue()).toBe("script:hello");
      expect(await dialog.getByTestId("agent-edit-state").textContent()).toBe("Unsaved changes");

      // The server refuses the tool name: the error stands by the Tools field, nothing is saved.
      await save.click();
      const toolsError = dialog.getByTestId("agent-edit-tools-error");
      await toolsError.waitFor();
      expect(await toolsError.textContent()).toContain(`tools[1] "not a tool name" must be 1-64 letters`);
      expect(await tools.getAttribute("aria-invalid")).toBe("true");
      expect((await storedAgent(wick, agentId))?.model).toBe("script:slow");
      if (backend === "local") await screenshot(page, "settings-edit");

      await tools.fill("calculate");
      expect(await toolsError.count()).toBe(0);
      await save.click();
      await expect.poll(() => dialog.getByTestId("agent-edit-state").textContent()).toBe("Saved: the next run uses these settings.");
      expect(await save.isEnabled()).toBe(false);
      const stored = await storedAgent(wick, agentId);
      expect({ model: stored?.model, prompt: stored?.system_prompt, tools: stored?.tools, backend: stored?.backend?.type }).toEqual({
        model: "script:hello",
        prompt: "Answer in one line.",
        tools: ["calculate"],
        backend,
      });

      // After a reload the dialog shows what is stored.
      await page.reload();
      await page.getByTestId("agent-list").waitFor({ state: "attached" });
      await openSettings(page);
      expect(await model.inputValue()).toBe("script:hello");
      expect(await prompt.inputValue()).toBe("Answer in one line.");
      await closeSettings(page);

      // The next run uses the new model (the slow script would take seconds to say otherwise).
      await page.getByTestId("thread-new").click();
      await send(page, "Say hello.");
      await waitForAnswer(page, HELLO_TEXT);
      await waitForIdle(page);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await wick.api.DELETE("/agents/{agent_id}", { params: { path: { agent_id: agentId } } });
    }
  });

  test("Cancel puts the saved values back, and the arrow keys move between the sections", async () => {
    const { context, page, errors } = await newPage(browser());
    try {
      await signIn(page, url, alice.token);
      await openNewThread(page, "hello");
      const dialog = await openSettings(page);
      const prompt = dialog.getByTestId("agent-edit-prompt");
      const before = await prompt.inputValue();
      await prompt.fill("A prompt never saved.");
      await dialog.getByTestId("agent-edit-cancel").click();
      expect(await prompt.inputValue()).toBe(before);
      expect(await dialog.getByTestId("agent-edit-save").isEnabled()).toBe(false);

      await dialog.getByTestId("settings-tab-general").focus();
      await page.keyboard.press("ArrowRight");
      // The tab is selected once React has rendered the focus move.
      await expect.poll(() => dialog.getByTestId("settings-tab-sandbox").getAttribute("aria-selected")).toBe("true");
      await page.getByTestId("container-state").waitFor();
      await page.keyboard.press("ArrowLeft");
      await prompt.waitFor();
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
