// The showcase end to end in Chromium, on the Docker backend (the runtime
// image has python3, pandas and matplotlib; the local host has not): an agent
// on the embedded script:showcase reads the csv-analyzer skill's SKILL.md,
// writes a CSV, runs the skill's analyze.py with execute (which writes the
// chart) and writes a 3-slide deck that shows it. The chat shows the calls,
// the Canvas opens the deck as slides with the chart drawn inside the frame,
// and the chart, which no tool event names, is in the Canvas's file list.
// Screenshots go to docs/ui/showcase-chat.png and docs/ui/showcase-slides.png.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

import { SHIPPED_SKILLS, SHOWCASE_ANSWER_START, SHOWCASE_CHART, SHOWCASE_DECK, SHOWCASE_SKILL_MD } from "./fixtures.js";
import { closeSettings, lastAssistantText, newPage, openNewThread, openSettings, screenshot, settingsTab, send, signIn, suites, useBrowser, users, waitForIdle } from "./helpers.js";

const browser = useBrowser();
const carol = users.carol;
// Under CI=true the setup fails without Docker, so this never skips there.
const docker = suites.filter((s) => s.backend === "docker");

/** The agent (fixtures.ts) on script:showcase. */
const AGENT = "showcase";
/** A first run creates the sandbox and imports pandas and matplotlib. */
const RUN_TIMEOUT_MS = 150_000;

describe.skipIf(docker.length === 0)("the skills showcase", () => {
  describe.each(docker)("$backend backend", ({ url }) => {
    let page: Page;
    let errors: string[];
    beforeAll(async () => {
      ({ page, errors } = await newPage(browser()));
      await signIn(page, url, carol.token);
    });
    afterAll(async () => {
      await page?.context().close();
    });

    // The tests build on each other: one run, its chat, its Canvas, the sidebar.
    test(
      "the run reads the skill, runs its script and ends done",
      async () => {
        await openNewThread(page, AGENT);
        await send(page, "Analyse some sales data and make me three slides about it.");
        // The answer first: right after the send, Stop may not be showing
        // yet, and waiting for it to be hidden would return at once.
        await expect
          .poll(async () => (await lastAssistantText(page).textContent().catch(() => "")) ?? "", { timeout: RUN_TIMEOUT_MS })
          .toContain(SHOWCASE_ANSWER_START);
        await waitForIdle(page, RUN_TIMEOUT_MS);
        expect(await page.getByTestId("run-error").count()).toBe(0);

        const cards = page.getByTestId("tool-card");
        expect(await cards.evaluateAll((els) => els.map((el) => `${el.getAttribute("data-tool-name")}:${el.getAttribute("data-state")}`))).toEqual([
          "read_file:done",
          "write_file:done",
          "execute:done",
          "write_file:done",
        ]);
        // The arguments are in the card's body: the skill's own instructions were read first.
        expect(await cards.first().textContent()).toContain(SHOWCASE_SKILL_MD);
        const execute = page.locator('[data-testid="tool-card"][data-tool-name="execute"]');
        expect(await execute.textContent()).toContain("skills/csv-analyzer/analyze.py");
        await execute.locator("summary").click();
        await screenshot(page, "showcase-chat");
      },
      RUN_TIMEOUT_MS + 30_000,
    );

    test("the Canvas shows the deck as slides, the chart drawn on its slide, and lists the chart", async () => {
      // The deck outranks the chart the command wrote: it stays open.
      const counter = page.getByTestId("slides-counter");
      await expect.poll(() => counter.textContent()).toBe("1 / 3");
      expect(await page.locator('[data-testid="canvas-item"][aria-selected="true"]').getAttribute("data-path")).toBe(SHOWCASE_DECK);
      // Found in the workspace when the run was done: no write_file named it.
      await page.locator(`[data-testid="canvas-item"][data-path="${SHOWCASE_CHART}"]`).waitFor();

      await page.getByTestId("slides-stage").click();
      await page.keyboard.press("ArrowRight");
      await expect.poll(() => counter.textContent()).toBe("2 / 3");
      const frame = page.frameLocator('[data-testid="slides-frame"]');
      await expect.poll(() => frame.locator("h2").textContent()).toBe("Revenue by month");
      // Drawn, not a broken image: the frame may load nothing, so it was inlined.
      const img = frame.locator('img[alt="chart"]');
      await expect.poll(() => img.evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth > 0)).toBe(true);
      expect(await img.getAttribute("src")).toMatch(/^data:image\/png;base64,/);
      await expect.poll(() => img.evaluate((el: HTMLImageElement) => el.getBoundingClientRect().width)).toBeGreaterThan(100);
      await screenshot(page, "showcase-slides");

      // The chart opens on its own too.
      await page.locator(`[data-testid="canvas-item"][data-path="${SHOWCASE_CHART}"]`).click();
      const chart = page.getByTestId("canvas-image");
      await expect.poll(() => chart.evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth > 0)).toBe(true);
      expect(errors).toEqual([]);
    });

    test("the sidebar lists the six shipped skills", async () => {
      await openSettings(page);
      await settingsTab(page, "sandbox");
      const names = page.getByTestId("skills-list").locator("li > strong");
      await expect.poll(async () => (await names.allTextContents()).sort()).toEqual(SHIPPED_SKILLS);
      await closeSettings(page);
    });
  });
});
