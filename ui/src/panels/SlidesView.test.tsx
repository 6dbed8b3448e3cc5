import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { WickError, type Wick } from "@wick-agent/sdk";
import { afterEach, describe, expect, it, vi } from "vitest";

import { CanvasPanel } from "./CanvasPanel";
import SlidesView from "./SlidesView";
import type { WrittenFile } from "./types";

afterEach(cleanup);

/** The slides and Markdown views are lazy chunks: their first import can take seconds on a busy machine. */
const LAZY = { timeout: 10_000 };
/** A test that renders a deck: Marp's first render in jsdom takes a second unloaded, several on a busy machine. */
const DECK_TEST_MS = 30_000;

/** The first bytes of a PNG: what the deck's image is fetched as. */
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const DECK = "---\nmarp: true\n---\n# Sales\n\n![chart](report/sales-chart.png)\n\n---\n\n# Regions\n\n![gone](missing.png)\n\n---\n\n# Next steps\n";

/** A fake client whose workspace holds files (text or bytes). */
function fakeClient(files: Record<string, string | Uint8Array>) {
  const downloadStream = vi.fn(async (_agent: string, path: string) => {
    const content = files[path];
    if (content === undefined) throw WickError.fromCode(5, `${path}: no such file`);
    return new Response(content as BodyInit).body as ReadableStream<Uint8Array>;
  });
  return { client: { downloadStream } as unknown as Wick, downloadStream };
}

const frameDoc = () => (screen.getByTestId("slides-frame") as HTMLIFrameElement).getAttribute("srcdoc") ?? "";

describe("SlidesView", () => {
  it("shows one slide at a time with a counter, moves by buttons and keys, and inlines workspace images", async () => {
    const { client, downloadStream } = fakeClient({ "/workspace/report/sales-chart.png": PNG });
    render(<SlidesView client={client} agentId="default" path="/workspace/deck.slides.md" text={DECK} maxImageBytes={1 << 20} />);
    const counter = await screen.findByTestId("slides-counter", {}, LAZY);
    expect(counter.textContent).toBe("1 / 3");
    // The image was fetched relative to the deck's folder and inlined; the frame has no permissions.
    expect(downloadStream.mock.calls.map((c) => c[1])).toEqual(["/workspace/report/sales-chart.png", "/workspace/missing.png"]);
    expect(frameDoc()).toContain('src="data:image/png;base64,iVBORw0KGgo="');
    expect(frameDoc()).toContain("Sales");
    expect(frameDoc()).toContain("default-src 'none'");
    expect(screen.getByTestId("slides-frame").getAttribute("sandbox")).toBe("");
    expect(screen.getByTestId("slides-missing").textContent).toBe("Not shown: missing.png");
    expect((screen.getByTestId("slides-prev") as HTMLButtonElement).disabled).toBe(true);

    fireEvent.click(screen.getByTestId("slides-next"));
    expect(counter.textContent).toBe("2 / 3");
    expect(frameDoc()).toContain("Regions");

    const stage = screen.getByTestId("slides-stage");
    const keys: [string, string][] = [
      ["ArrowRight", "3 / 3"],
      ["ArrowRight", "3 / 3"],
      ["PageUp", "2 / 3"],
      ["Home", "1 / 3"],
      ["ArrowLeft", "1 / 3"],
      ["End", "3 / 3"],
      ["ArrowLeft", "2 / 3"],
      ["PageDown", "3 / 3"],
    ];
    for (const [key, want] of keys) {
      fireEvent.keyDown(stage, { key });
      expect(counter.textContent, key).toBe(want);
    }
    expect((screen.getByTestId("slides-next") as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByRole("button", { name: "Full screen" })).toBeTruthy();
  }, DECK_TEST_MS);

  it("says so for a deck with no slides", () => {
    const { client } = fakeClient({});
    render(<SlidesView client={client} agentId="default" path="/workspace/empty.slides.md" text={"---\nmarp: true\n---\n\n---\n\n"} maxImageBytes={1 << 20} />);
    expect(screen.getByTestId("slides-empty").textContent).toMatch(/has no slides/);
    expect(screen.queryByTestId("slides-frame")).toBeNull();
  });

  it("leaves out an image over the limit and says so", async () => {
    const { client } = fakeClient({ "/workspace/report/sales-chart.png": new Uint8Array(64) });
    render(<SlidesView client={client} agentId="default" path="/workspace/deck.slides.md" text={DECK} maxImageBytes={16} />);
    await screen.findByTestId("slides-counter", {}, LAZY);
    expect(screen.getByTestId("slides-missing").textContent).toBe("Not shown: report/sales-chart.png (over 16 B), missing.png");
    expect(frameDoc()).toContain('src="report/sales-chart.png"');
  }, DECK_TEST_MS);
});

describe("CanvasPanel and decks", () => {
  const written = (path: string): WrittenFile => ({ path, runId: "run_1", eventId: "1-0", version: 1 });
  const cases: { name: string; path: string; text: string; slides: boolean; toggle: boolean }[] = [
    { name: "a .slides.md file opens as slides", path: "/workspace/q3.slides.md", text: "# A\n\n---\n\n# B\n", slides: true, toggle: true },
    { name: "marp: true opens as slides", path: "/workspace/q3.md", text: DECK, slides: true, toggle: true },
    { name: "Markdown with separators opens as a document, with a Slides toggle", path: "/workspace/notes.md", text: "# A\n\n---\n\n# B\n", slides: false, toggle: true },
    { name: "Markdown without separators has no toggle", path: "/workspace/readme.md", text: "# A\n\ntext\n", slides: false, toggle: false },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const { client } = fakeClient({ [c.path]: c.text, "/workspace/report/sales-chart.png": PNG });
      render(<CanvasPanel client={client} agentId="default" writtenFiles={[written(c.path)]} selected={undefined} onSelect={() => {}} onError={() => {}} />);
      if (c.slides) await screen.findByTestId("slides-counter", {}, LAZY);
      else await screen.findByTestId("canvas-markdown", {}, LAZY);
      const toggle = screen.queryByTestId("canvas-slides-toggle");
      expect(toggle !== null).toBe(c.toggle);
      if (!toggle) return;
      expect(toggle.getAttribute("aria-pressed")).toBe(String(c.slides));
      fireEvent.click(toggle);
      if (c.slides) await screen.findByTestId("canvas-markdown", {}, LAZY);
      else await screen.findByTestId("slides-counter", {}, LAZY);
      await waitFor(() => expect(screen.getByTestId("canvas-slides-toggle").getAttribute("aria-pressed")).toBe(String(!c.slides)));
    }, DECK_TEST_MS);
  }

  it("says a binary .csv is not CSV", async () => {
    const { client } = fakeClient({ "/workspace/data.csv": new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0, 0, 1, 2]) });
    render(<CanvasPanel client={client} agentId="default" writtenFiles={[written("/workspace/data.csv")]} selected={undefined} onSelect={() => {}} onError={() => {}} />);
    expect((await screen.findByTestId("csv-not-table")).textContent).toMatch(/not CSV/);
  });
});
