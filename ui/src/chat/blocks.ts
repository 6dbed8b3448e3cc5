// splitBlocks cuts Markdown into its top-level blocks at blank lines outside
// code fences. A streaming message is rendered block by block, each block
// memoised: a new token re-parses only the last block, never the whole
// message.
export function splitBlocks(text: string): string[] {
  const out: string[] = [];
  let cur: string[] = [];
  let fence: string | undefined;
  for (const line of text.split("\n")) {
    const m = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (m) {
      const mark = m[1]!;
      if (fence === undefined) fence = mark;
      else if (mark[0] === fence[0] && mark.length >= fence.length) fence = undefined;
    }
    if (line.trim() === "" && fence === undefined) {
      if (cur.length > 0) out.push(cur.join("\n"));
      cur = [];
      continue;
    }
    cur.push(line);
  }
  if (cur.length > 0) out.push(cur.join("\n"));
  return out;
}

/** hasCode reports whether text has a fenced code block: only then is the highlighter loaded. */
export function hasCode(text: string): boolean {
  return /(^|\n)\s{0,3}(```|~~~)/.test(text);
}

/** How long a paragraph grows before it is parsed in pieces (characters). */
export const PIECE_CHARS = 1000;

// A line that starts a block other than a paragraph: a heading, a list item,
// a quote, a table row, a fence, indented code, HTML or a thematic break.
const NOT_PARAGRAPH = /^(\s{4}|\s{0,3}([#>|<]|[-*+]\s|\d{1,9}[.)]\s|```|~~~|([-*_])\s*\3\s*\3))/;

// What inline Markdown pairs up: runs of a delimiter (emphasis, code spans,
// strikethrough) and brackets. A piece ends only where each is balanced, so
// that no emphasis, code span, link or autolink is cut.
const PAIRED = /`+|\*+|_+|~+|[[\]()<>\\]/g;

/**
 * splitParagraph cuts a long one-line paragraph into pieces at spaces where
 * its inline Markdown is balanced, each piece at least maxChars long (the
 * last one shorter). Rendered one after the other in one paragraph they read
 * as the whole, and a streaming paragraph re-parses only its last piece per
 * token: the parse of a long reply stays short. Cuts depend only on the text
 * before them, so those already made never move as text is appended. Any
 * other block, and a paragraph whose markup never balances, stays whole.
 */
export function splitParagraph(block: string, maxChars = PIECE_CHARS): string[] {
  if (block.length <= maxChars || block.includes("\n") || NOT_PARAGRAPH.test(block)) return [block];
  const pieces: string[] = [];
  let start = 0;
  let counts = new Map<string, number>();
  let from = 0;
  const balanced = () =>
    (counts.get("`") ?? 0) % 2 === 0 &&
    (counts.get("*") ?? 0) % 2 === 0 &&
    (counts.get("_") ?? 0) % 2 === 0 &&
    (counts.get("~") ?? 0) % 2 === 0 &&
    (counts.get("\\") ?? 0) === 0 &&
    (counts.get("[") ?? 0) === (counts.get("]") ?? 0) &&
    (counts.get("(") ?? 0) === (counts.get(")") ?? 0) &&
    (counts.get("<") ?? 0) === (counts.get(">") ?? 0);
  for (;;) {
    const space = block.indexOf(" ", Math.max(from, start + maxChars));
    if (space < 0) break;
    for (const m of block.slice(from, space).matchAll(PAIRED)) counts.set(m[0][0]!, (counts.get(m[0][0]!) ?? 0) + 1);
    from = space;
    // A space at the end may be a hard break's: it is not cut.
    if (!balanced() || block[space + 1] === undefined || block[space + 1] === " ") {
      from = space + 1;
      continue;
    }
    pieces.push(block.slice(start, space));
    start = space + 1;
    from = start;
    counts = new Map();
  }
  pieces.push(block.slice(start));
  return pieces;
}
