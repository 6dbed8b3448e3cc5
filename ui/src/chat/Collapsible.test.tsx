import { fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { cleanup } from "@testing-library/react";

import { Collapsible, MESSAGE_PREVIEW_CHARS, moreLabel, preview } from "./Collapsible";
import { UserMessage } from "./Items";

afterEach(cleanup);

describe("preview", () => {
  it("keeps text within the limit whole", () => {
    expect(preview("short", 10)).toEqual({ shown: "short", cut: false });
    expect(preview("x".repeat(10), 10)).toEqual({ shown: "x".repeat(10), cut: false });
  });

  it("cuts at the limit, at a line end or a space near it", () => {
    expect(preview("x".repeat(2000), 1000)).toEqual({ shown: "x".repeat(1000), cut: true });
    const lines = "a".repeat(900) + "\n" + "b".repeat(900);
    expect(preview(lines, 1000)).toEqual({ shown: "a".repeat(900), cut: true });
    const words = "a".repeat(950) + " " + "b".repeat(900);
    expect(preview(words, 1000)).toEqual({ shown: "a".repeat(950), cut: true });
  });

  it("never splits a surrogate pair", () => {
    const text = "x".repeat(999) + "😀" + "y".repeat(10);
    const { shown } = preview(text, 1000);
    expect(shown).toBe("x".repeat(999));
  });
});

describe("Collapsible", () => {
  it("shows a 2 MB message folded, unfolds it with Show more and folds it again", () => {
    const text = "z".repeat(2 * 1024 * 1024);
    render(<UserMessage item={{ kind: "user", key: "u", text }} />);
    const body = screen.getByTestId("message");
    expect(body.textContent!.length).toBeLessThan(MESSAGE_PREVIEW_CHARS + 100);
    const more = screen.getByTestId("show-more");
    expect(more.getAttribute("aria-expanded")).toBe("false");
    expect(more.textContent).toBe(moreLabel(text, "z".repeat(MESSAGE_PREVIEW_CHARS)));
    expect(more.textContent).toBe("Show more (2,094,152 more characters)");
    fireEvent.click(more);
    expect(body.textContent).toContain(text);
    expect(screen.getByTestId("show-more").textContent).toBe("Show less");
    fireEvent.click(screen.getByTestId("show-more"));
    expect(body.textContent!.length).toBeLessThan(MESSAGE_PREVIEW_CHARS + 100);
  });

  it("has no control for short text", () => {
    render(<Collapsible text="hello" limit={10} render={(s) => <span>{s}</span>} />);
    expect(screen.queryByTestId("show-more")).toBeNull();
    expect(screen.getByText("hello")).toBeTruthy();
  });
});
