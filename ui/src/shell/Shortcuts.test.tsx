import * as Tooltip from "@radix-ui/react-tooltip";
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { useState } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { SHORTCUTS, ShortcutsHelp, shortcutOf, useShortcuts, type ShortcutAction } from "./Shortcuts";

afterEach(cleanup);

const key = (k: string, more: Partial<KeyboardEvent> = {}, target: EventTarget | null = document.body) =>
  ({ key: k, ctrlKey: false, metaKey: false, shiftKey: false, altKey: false, target, ...more }) as KeyboardEvent;

describe("shortcutOf", () => {
  it("reads Ctrl on Linux and Windows, Cmd on a Mac", () => {
    expect(shortcutOf(key("k", { ctrlKey: true }), false)).toBe("focusComposer");
    expect(shortcutOf(key("k", { metaKey: true }), false)).toBeUndefined();
    expect(shortcutOf(key("k", { metaKey: true }), true)).toBe("focusComposer");
    expect(shortcutOf(key("O", { ctrlKey: true, shiftKey: true }), false)).toBe("newThread");
    expect(shortcutOf(key("o", { ctrlKey: true }), false)).toBeUndefined();
  });
  it("takes single keys only outside text fields", () => {
    const box = document.createElement("textarea");
    const search = document.createElement("input");
    const check = document.createElement("input");
    check.type = "checkbox";
    expect(shortcutOf(key("?"), false)).toBe("help");
    expect(shortcutOf(key("/"), false)).toBe("searchThreads");
    expect(shortcutOf(key("End"), false)).toBe("scrollToBottom");
    expect(shortcutOf(key("?", {}, box), false)).toBeUndefined();
    expect(shortcutOf(key("/", {}, search), false)).toBeUndefined();
    expect(shortcutOf(key("/", {}, check), false)).toBe("searchThreads");
    // Mod shortcuts work while typing: Ctrl+K from the search box.
    expect(shortcutOf(key("k", { ctrlKey: true }, search), false)).toBe("focusComposer");
  });
});

function Page({ handlers }: { handlers: Partial<Record<ShortcutAction, () => boolean | void>> }) {
  const [open, setOpen] = useState(false);
  useShortcuts({ ...handlers, help: () => setOpen(true) });
  return (
    <Tooltip.Provider>
      <textarea data-testid="box" />
      <ShortcutsHelp open={open} onOpenChange={setOpen} />
    </Tooltip.Provider>
  );
}

describe("useShortcuts and the help sheet", () => {
  it("? opens the sheet, which lists every shortcut; in a text field it is a character", () => {
    render(<Page handlers={{}} />);
    fireEvent.keyDown(screen.getByTestId("box"), { key: "?" });
    expect(screen.queryByTestId("shortcuts")).toBeNull();
    act(() => {
      fireEvent.keyDown(document.body, { key: "?" });
    });
    const sheet = screen.getByTestId("shortcuts");
    const rows = screen.getAllByTestId("shortcut").map((r) => r.textContent);
    for (const s of SHORTCUTS) expect(rows.some((r) => r?.includes(s.does))).toBe(true);
    expect(sheet.textContent).toContain("Ctrl");
  });
  it("the button opens the sheet", () => {
    render(<Page handlers={{}} />);
    fireEvent.click(screen.getByRole("button", { name: "Keyboard shortcuts" }));
    expect(screen.getByTestId("shortcuts")).toBeTruthy();
  });
  it("calls the handler and keeps the key's default when it had nothing to do", () => {
    const focus = vi.fn();
    const bottom = vi.fn(() => false);
    render(<Page handlers={{ focusComposer: focus, scrollToBottom: bottom }} />);
    const k = new KeyboardEvent("keydown", { key: "k", ctrlKey: true, cancelable: true, bubbles: true });
    document.body.dispatchEvent(k);
    expect(focus).toHaveBeenCalledTimes(1);
    expect(k.defaultPrevented).toBe(true);
    const end = new KeyboardEvent("keydown", { key: "End", cancelable: true, bubbles: true });
    document.body.dispatchEvent(end);
    expect(bottom).toHaveBeenCalledTimes(1);
    expect(end.defaultPrevented).toBe(false);
  });
});
