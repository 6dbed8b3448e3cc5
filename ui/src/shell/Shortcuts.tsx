// Keyboard shortcuts of the page, and the sheet that lists them (opened by
// "?" or its button). The sheet lists SHORTCUTS, the same table the handler
// reads, so it names only keys that work.
import * as Dialog from "@radix-ui/react-dialog";
import { Keyboard, X } from "lucide-react";
import { useEffect, useRef } from "react";

import { IconButton } from "./IconButton";

export type ShortcutAction = "focusComposer" | "newThread" | "searchThreads" | "scrollToBottom" | "help";

export interface Shortcut {
  action: ShortcutAction;
  /** The keys as the sheet shows them; "Mod" reads Ctrl, or ⌘ on a Mac. */
  keys: string[];
  does: string;
  /** Taken while typing in a field too (the others would eat typed characters). */
  inFields?: boolean;
}

export const SHORTCUTS: readonly Shortcut[] = [
  { action: "focusComposer", keys: ["Mod", "K"], does: "Write a message (focus the message box)", inFields: true },
  { action: "newThread", keys: ["Mod", "Shift", "O"], does: "Start a new thread", inFields: true },
  { action: "searchThreads", keys: ["/"], does: "Search the threads" },
  { action: "scrollToBottom", keys: ["End"], does: "Go to the newest message" },
  { action: "help", keys: ["?"], does: "Show this sheet" },
];

/** Keys handled elsewhere, listed with the rest. */
const OTHER_KEYS: readonly { keys: string[]; does: string }[] = [
  { keys: ["Enter"], does: "Send the message" },
  { keys: ["Shift", "Enter"], does: "Break the line" },
  { keys: ["Esc"], does: "Cancel the run that is going" },
];

export function isMac(): boolean {
  return /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);
}

/** inTextField: typing there must not trigger single-key shortcuts. */
export function inTextField(el: EventTarget | null): boolean {
  if (!(el instanceof HTMLElement)) return false;
  if (el.isContentEditable) return true;
  if (el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement) return true;
  if (el instanceof HTMLInputElement) return !["button", "checkbox", "radio", "submit", "reset", "range", "color", "file"].includes(el.type);
  // The terminal (xterm) takes every key of its own.
  return !!el.closest(".xterm");
}

/** shortcutOf is the action a key press asks for, if any. */
export function shortcutOf(e: Pick<KeyboardEvent, "key" | "ctrlKey" | "metaKey" | "shiftKey" | "altKey" | "target">, mac = isMac()): ShortcutAction | undefined {
  if (e.altKey) return undefined;
  const mod = mac ? e.metaKey && !e.ctrlKey : e.ctrlKey && !e.metaKey;
  const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
  if (mod) {
    if (key === "k" && !e.shiftKey) return "focusComposer";
    if (key === "o" && e.shiftKey) return "newThread";
    return undefined;
  }
  if (e.ctrlKey || e.metaKey || inTextField(e.target)) return undefined;
  if (key === "/") return "searchThreads";
  if (key === "?") return "help";
  if (key === "End" && !e.shiftKey) return "scrollToBottom";
  return undefined;
}

/**
 * useShortcuts calls the handler of each shortcut pressed on the page. A
 * handler returns false when it had nothing to do (the key then keeps its
 * default, as End does in a list).
 */
export function useShortcuts(handlers: Partial<Record<ShortcutAction, () => boolean | void>>): void {
  const ref = useRef(handlers);
  ref.current = handlers;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.isComposing) return;
      const action = shortcutOf(e);
      const run = action && ref.current[action];
      if (!run) return;
      if (run() === false) return;
      e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
}

function Keys({ keys }: { keys: string[] }) {
  const mac = isMac();
  return (
    <span className="keys">
      {keys.map((k, i) => (
        <kbd key={i}>{k === "Mod" ? (mac ? "⌘" : "Ctrl") : k}</kbd>
      ))}
    </span>
  );
}

export function ShortcutsHelp({ open, onOpenChange }: { open: boolean; onOpenChange(open: boolean): void }) {
  return (
    <Dialog.Root open={open} onOpenChange={onOpenChange}>
      <Dialog.Trigger asChild>
        <IconButton label="Keyboard shortcuts" data-testid="shortcuts-open">
          <Keyboard size={18} aria-hidden="true" />
        </IconButton>
      </Dialog.Trigger>
      <Dialog.Portal>
        <Dialog.Overlay className="overlay" />
        <Dialog.Content
          className="card dialog shortcuts-dialog"
          data-testid="shortcuts"
          onOpenAutoFocus={(e) => {
            e.preventDefault();
            (e.currentTarget as HTMLElement | null)?.focus();
          }}
        >
          <div className="dialog-head">
            <Dialog.Title>Keyboard shortcuts</Dialog.Title>
            <Dialog.Close asChild>
              <IconButton label="Close" data-testid="shortcuts-close">
                <X size={18} aria-hidden="true" />
              </IconButton>
            </Dialog.Close>
          </div>
          <Dialog.Description className="muted small">Single keys work when you are not typing in a field.</Dialog.Description>
          <table className="shortcuts-table">
            <tbody>
              {[...SHORTCUTS, ...OTHER_KEYS].map((s) => (
                <tr key={s.does} data-testid="shortcut">
                  <td>
                    <Keys keys={s.keys} />
                  </td>
                  <td>{s.does}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}
