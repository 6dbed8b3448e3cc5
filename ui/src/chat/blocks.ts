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
