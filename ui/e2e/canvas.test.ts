// The Canvas's slides and chart in Chromium, on the local backend: a run
// writes a CSV and a 3-slide deck whose first slide shows a PNG uploaded
// through the files API. The deck opens as slides (counter, keys, full
// screen, the image drawn inside the frame), the CSV as a table that turns
// into a bar chart. Screenshots go to docs/ui/canvas-slides.png and
// docs/ui/canvas-chart.png.
import { crc32, deflateSync } from "node:zlib";

import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

import { DECK_ANSWER, DECK_CHART_PATH } from "./fixtures.js";
import { client, newPage, openNewThread, screenshot, send, signIn, suites, useBrowser, users, waitForAnswer, waitForIdle } from "./helpers.js";

const browser = useBrowser();
const carol = users.carol;
const local = suites.filter((s) => s.backend === "local");

/** The agent (fixtures.ts) whose script writes the deck and the CSV. */
const AGENT = "deck";

/** A PNG chunk: length, type, data, CRC of type and data. */
function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

/** A real PNG (8-bit RGB) of four bars, heights as given, on white: what a chart script would write. */
function barChartPNG(width: number, height: number, bars: number[]): Buffer {
  const max = Math.max(...bars);
  const slot = Math.floor(width / bars.length);
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3, 0xff);
    row[0] = 0; // filter: none
    for (let x = 0; x < width; x++) {
      const i = Math.floor(x / slot);
      const inBar = i < bars.length && x % slot > slot * 0.15 && x % slot < slot * 0.85 && height - y <= ((bars[i] ?? 0) / max) * height * 0.9;
      if (inBar) row.set([0x25, 0x63, 0xeb], 1 + x * 3);
    }
    rows.push(row);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit, truecolour, deflate, no filter method, no interlace
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk("IHDR", ihdr), chunk("IDAT", deflateSync(Buffer.concat(rows))), chunk("IEND", Buffer.alloc(0))]);
}

describe.each(local)("Canvas slides and chart ($backend backend)", ({ url }) => {
  let page: Page;
  let errors: string[];
  beforeAll(async () => {
    // The chart is in the workspace before the run: the deck's first slide names it.
    await client(url, carol.token).upload(AGENT, DECK_CHART_PATH, barChartPNG(480, 270, [120, 150, 240, 180]));
    ({ page, errors } = await newPage(browser()));
    await signIn(page, url, carol.token);
  });
  afterAll(async () => {
    await page?.context().close();
  });

  // The tests build on each other: one run, two views.
  test("a written deck opens as slides: counter, keys, full screen, the workspace image inside the frame", async () => {
    await openNewThread(page, AGENT);
    await send(page, "Write the sales deck.");
    await waitForAnswer(page, DECK_ANSWER);
    await waitForIdle(page);

    // The deck is the run's newest write: the Canvas opened by itself on its slides.
    const counter = page.getByTestId("slides-counter");
    await expect.poll(() => counter.textContent()).toBe("1 / 3");
    const frame = page.frameLocator('[data-testid="slides-frame"]');
    await expect.poll(() => frame.locator("h1").textContent()).toBe("Sales, first quarter");
    // Drawn, not a broken image: the frame may load nothing, so it was inlined.
    const img = frame.locator('img[alt="Sales by month"]');
    await expect.poll(() => img.evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth)).toBe(480);
    expect(await img.getAttribute("src")).toMatch(/^data:image\/png;base64,/);
    await expect.poll(() => img.evaluate((el: HTMLImageElement) => el.getBoundingClientRect().width)).toBeGreaterThan(100);

    const fullscreen = page.getByRole("button", { name: "Full screen" });
    expect(await fullscreen.isVisible()).toBe(true);
    await screenshot(page, "canvas-slides");

    // A click on the slide gives the keys to the deck, not to the frame.
    await page.getByTestId("slides-stage").click();
    await page.keyboard.press("ArrowRight");
    await expect.poll(() => counter.textContent()).toBe("2 / 3");
    await expect.poll(() => frame.locator("h1").textContent()).toBe("What changed");
    await page.keyboard.press("End");
    await expect.poll(() => counter.textContent()).toBe("3 / 3");
    await page.keyboard.press("PageUp");
    await expect.poll(() => counter.textContent()).toBe("2 / 3");
    await page.keyboard.press("Home");
    await expect.poll(() => counter.textContent()).toBe("1 / 3");

    // Full screen is the slides' container; the keys still move the deck there.
    await fullscreen.click();
    await expect.poll(() => page.evaluate(() => document.fullscreenElement?.getAttribute("data-testid") ?? null)).toBe("canvas-slides");
    await page.keyboard.press("ArrowRight");
    await expect.poll(() => counter.textContent()).toBe("2 / 3");
    await page.getByRole("button", { name: "Exit full screen" }).click();
    await expect.poll(() => page.evaluate(() => document.fullscreenElement)).toBeNull();
    expect(errors).toEqual([]);
  });

  test("the run's CSV shows as a table and as a bar chart of a numeric column", async () => {
    await page.locator('[data-testid="canvas-item"][data-path$="sales.csv"]').click();
    const table = page.getByTestId("canvas-table");
    await table.waitFor();
    expect(await table.locator("tbody tr").count()).toBe(4);

    await page.getByTestId("csv-view-bar").click();
    const chart = page.getByTestId("canvas-chart");
    await chart.waitFor();
    expect(await page.getByTestId("chart-value").inputValue()).toBe("2");
    expect(await chart.getAttribute("aria-label")).toBe("Bar chart of sales");
    // Chart.js drew into the canvas: some pixels are not transparent.
    await expect
      .poll(() =>
        chart.evaluate((c: HTMLCanvasElement) => {
          const data = c.getContext("2d")?.getImageData(0, 0, c.width, c.height).data ?? new Uint8ClampedArray();
          let painted = 0;
          for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) painted++;
          return painted;
        }),
      )
      .toBeGreaterThan(1000);
    await screenshot(page, "canvas-chart");
    expect(errors).toEqual([]);
  });
});
