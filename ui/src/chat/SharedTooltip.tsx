// One tooltip for the many icon buttons of the messages (their actions): each
// button is plain, with its name in aria-label and a data-tip attribute, and
// this tooltip follows the one under the pointer (after the provider's delay)
// or with the keyboard's focus, as a Radix tooltip of its own would. A Radix
// tooltip per button cost most of each frame while a long thread scrolled:
// every frame mounts the rows that came into view.
import * as Tooltip from "@radix-ui/react-tooltip";
import { useEffect, useState, type RefObject } from "react";

/** How long the pointer rests on a button before its tooltip shows (the chat's provider's delay). */
export const TIP_DELAY_MS = 400;

interface Tip {
  label: string;
  rect: DOMRect;
}

function tipTarget(node: EventTarget | null): HTMLElement | null {
  return node instanceof Element ? node.closest<HTMLElement>("[data-tip]") : null;
}

export function SharedTooltip({ root }: { root: RefObject<HTMLElement | null> }) {
  const [tip, setTip] = useState<Tip | undefined>();

  useEffect(() => {
    const el = root.current;
    if (!el) return;
    let shown: HTMLElement | null = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const show = (t: HTMLElement) => {
      clearTimeout(timer);
      shown = t;
      setTip({ label: t.getAttribute("aria-label") ?? "", rect: t.getBoundingClientRect() });
    };
    const hide = () => {
      clearTimeout(timer);
      if (shown) setTip(undefined);
      shown = null;
    };
    const over = (e: PointerEvent) => {
      const t = tipTarget(e.target);
      if (!t || t === shown || e.pointerType === "touch") return;
      clearTimeout(timer);
      timer = setTimeout(() => show(t), TIP_DELAY_MS);
    };
    const out = (e: PointerEvent) => {
      const t = tipTarget(e.target);
      if (!t || t.contains(e.relatedTarget as Node | null)) return;
      if (t === shown) hide();
      else clearTimeout(timer);
    };
    const focusIn = (e: FocusEvent) => {
      const t = tipTarget(e.target);
      // Focus from the keyboard shows it at once; a click's focus does not.
      if (t && t.matches(":focus-visible")) show(t);
    };
    const focusOut = (e: FocusEvent) => {
      if (tipTarget(e.target) === shown) hide();
    };
    // One signal removes every listener when the effect ends.
    const listeners = new AbortController();
    const { signal } = listeners;
    // A press closes it, as a button's own tooltip would; a scroll leaves it behind.
    el.addEventListener("pointerover", over, { signal });
    el.addEventListener("pointerout", out, { signal });
    el.addEventListener("focusin", focusIn, { signal });
    el.addEventListener("focusout", focusOut, { signal });
    el.addEventListener("pointerdown", hide, { signal });
    el.addEventListener("click", hide, { signal });
    el.addEventListener("scroll", hide, { capture: true, signal });
    return () => {
      clearTimeout(timer);
      listeners.abort();
    };
  }, [root]);

  if (!tip) return null;
  const { rect } = tip;
  return (
    <Tooltip.Root open onOpenChange={(open) => !open && setTip(undefined)}>
      {/* Where the button is: the tooltip's anchor, not a control. */}
      <Tooltip.Trigger asChild>
        <span
          aria-hidden="true"
          className="tip-anchor"
          style={{ left: rect.left, top: rect.top, width: rect.width, height: rect.height }}
        />
      </Tooltip.Trigger>
      <Tooltip.Portal>
        <Tooltip.Content className="tooltip" sideOffset={4} data-testid="action-tooltip">
          {tip.label}
        </Tooltip.Content>
      </Tooltip.Portal>
    </Tooltip.Root>
  );
}
