import { describe, expect, it } from "vitest";

import { hasCode, splitBlocks } from "./blocks";

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
