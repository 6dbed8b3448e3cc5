import { describe, expect, it } from "vitest";

import { hasCode, splitBlocks, splitParagraph } from "./blocks";

describe("splitBlocks", () => {
  it.each([
    { in: "a\nb\n\nc", want: ["a\nb", "c"] },
    { in: "\n\npara\n\n\n", want: ["para"] },
    { in: "x\n\n```js\nconst a = 1;\n\nconst b = 2;\n```\n\ny", want: ["x", "```js\nconst a = 1;\n\nconst b = 2;\n```", "y"] },
    { in: "````\n```\n\n````\nz", want: ["````\n```\n\n````\nz"] },
    { in: "streaming ```py\nopen\n\nstill", want: ["streaming ```py\nopen", "still"] },
    { in: "```\nunclosed\n\nfence", want: ["```\nunclosed\n\nfence"] },
  ])("$in", ({ in: text, want }) => {
    expect(splitBlocks(text)).toEqual(want);
  });

  it("finds fenced code", () => {
    expect(hasCode("text\n```go\nx\n```")).toBe(true);
    expect(hasCode("inline `code` only")).toBe(false);
  });
});

describe("splitParagraph", () => {
  const words = (n: number, w = (i: number) => `w${i}`) => Array.from({ length: n }, (_, i) => w(i)).join(" ");

  it("leaves short paragraphs and other blocks whole", () => {
    for (const block of ["short text", "- " + words(400), "# " + words(400), "> " + words(400), "| " + words(400), "    " + words(400), words(200) + "\n" + words(200)]) {
      expect(splitParagraph(block, 100)).toEqual([block]);
    }
  });

  it("cuts a long paragraph at spaces into pieces that join back to it", () => {
    const block = words(1000);
    const pieces = splitParagraph(block, 200);
    expect(pieces.length).toBeGreaterThan(10);
    expect(pieces.join(" ")).toBe(block);
    for (const p of pieces.slice(0, -1)) expect(p.length).toBeGreaterThanOrEqual(200);
  });

  it("never cuts inside emphasis, code spans, links or autolinks", () => {
    const block = words(50) + " **" + words(60) + "** `" + words(60) + "` [" + words(60) + "](http://x.test/a) <http://y.test/" + "b".repeat(300) + "> " + words(50);
    const pieces = splitParagraph(block, 50);
    expect(pieces.join(" ")).toBe(block);
    for (const p of pieces) {
      expect((p.match(/\*\*/g) ?? []).length % 2, p).toBe(0);
      expect((p.match(/`/g) ?? []).length % 2, p).toBe(0);
      expect((p.match(/\[/g) ?? []).length, p).toBe((p.match(/]/g) ?? []).length);
    }
  });

  it("keeps its cuts as a streaming paragraph grows", () => {
    const full = words(600, (i) => (i % 7 === 0 ? `*w${i}*` : `w${i}`));
    const final = splitParagraph(full, 150);
    for (let n = 0; n <= full.length; n += 37) {
      const now = splitParagraph(full.slice(0, n), 150);
      // Every piece but the last (still growing) is one of the final pieces.
      expect(now.slice(0, -1)).toEqual(final.slice(0, now.length - 1));
    }
  });
});
