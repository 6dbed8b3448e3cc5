// Long content folded: a message or a tool output past its limit shows its
// beginning and a "Show more" control, so that a 2 MB paste neither floods
// the chat nor costs a render of all of it until asked for.
import { useState, type ReactNode } from "react";

/** The most characters of a message shown before "Show more". */
export const MESSAGE_PREVIEW_CHARS = 3000;
/** How far back from the limit a cut looks for a line end or a space to cut at. */
const CUT_SLACK = 400;

/**
 * preview is the beginning of text shown while it is folded: text itself
 * when it is within limit characters, else cut at the last line end (or
 * space) before the limit when one is near, never inside a surrogate pair.
 */
export function preview(text: string, limit: number): { shown: string; cut: boolean } {
  if (text.length <= limit) return { shown: text, cut: false };
  let end = limit;
  const nl = text.lastIndexOf("\n", limit);
  const sp = text.lastIndexOf(" ", limit);
  if (nl >= limit - CUT_SLACK && nl > 0) end = nl;
  else if (sp >= limit - CUT_SLACK && sp > 0) end = sp;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--; // a high surrogate whose pair was cut off
  return { shown: text.slice(0, end), cut: true };
}

/** The control's words: how much more there is, in characters. */
export function moreLabel(text: string, shown: string): string {
  return `Show more (${(text.length - shown.length).toLocaleString("en-US")} more characters)`;
}

interface Props {
  text: string;
  limit: number;
  /** render draws what is shown; cut says it is the beginning only. */
  render(shown: string, cut: boolean): ReactNode;
}

export function Collapsible({ text, limit, render }: Props) {
  const [open, setOpen] = useState(false);
  const { shown, cut } = preview(text, limit);
  if (!cut) return <>{render(text, false)}</>;
  return (
    <>
      {open ? render(text, false) : render(shown, true)}
      <button type="button" className="link show-more" data-testid="show-more" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? "Show less" : moreLabel(text, shown)}
      </button>
    </>
  );
}
