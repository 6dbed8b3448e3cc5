// A long paragraph rendered in pieces reads as the whole: one paragraph,
// the same text, its emphasis and code intact.
import { cleanup, render } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";

import { PIECE_CHARS } from "./blocks";
import { Markdown } from "./Markdown";

afterEach(cleanup);

describe("Markdown", () => {
  it("renders a long paragraph as one paragraph with its inline markup", () => {
    const words = Array.from({ length: 600 }, (_, i) => (i % 50 === 0 ? `**bold ${i}**` : i % 70 === 0 ? `\`code ${i}\`` : `w${i}`));
    const text = words.join(" ");
    expect(text.length).toBeGreaterThan(3 * PIECE_CHARS);
    const { container } = render(<Markdown text={"Intro.\n\n" + text} />);
    const ps = container.querySelectorAll("p");
    expect(ps).toHaveLength(2);
    expect(ps[1]!.textContent).toBe(text.replace(/\*\*|`/g, ""));
    expect(ps[1]!.querySelectorAll("strong")).toHaveLength(12);
    expect(ps[1]!.querySelectorAll("code")).toHaveLength(7);
  });
});
