// Telling the files a run just wrote from those the canvas already knew:
// the Canvas opens itself for the former.
import { canvasKind, type CanvasKind } from "./kinds";
import type { WrittenFile } from "./types";

/** A write of a file: its path and version. */
export function writeKey(f: WrittenFile): string {
  return `${f.path}\u0000${f.version}`;
}

/** The keys of the writes in a list. */
export function writeKeys(files: readonly WrittenFile[]): Set<string> {
  return new Set(files.map(writeKey));
}

/**
 * newWrites returns the writes of files that are not in seen, newest first
 * (the list's order). A file without a run id came with a thread's history,
 * not from a run of this page: it is never new.
 */
export function newWrites(seen: ReadonlySet<string>, files: readonly WrittenFile[]): WrittenFile[] {
  return files.filter((f) => f.runId !== "" && !seen.has(writeKey(f)));
}

/**
 * Kinds the Canvas renders as what they are — a run's results rather than
 * its working files — most telling first: a deck or a chart sums up what a
 * table or a document holds.
 */
const ARTIFACTS: readonly CanvasKind[] = ["slides", "image", "html", "markdown", "csv"];

function rank(f: WrittenFile): number {
  const i = ARTIFACTS.indexOf(canvasKind(f.path));
  return i === -1 ? ARTIFACTS.length : i;
}

function isArtifact(f: WrittenFile): boolean {
  return rank(f) < ARTIFACTS.length;
}

/**
 * artifactToOpen picks the write the Canvas opens for new writes that
 * arrived together: the most telling rendered file (newest first among
 * equals), else the newest. While the Canvas shows a rendered file of the
 * same run, a later write of a working file (a script, a log) does not
 * replace it, nor does a file found after the run (found) that ranks no
 * higher: undefined, leave the Canvas be.
 */
export function artifactToOpen(fresh: readonly WrittenFile[], shown?: WrittenFile): WrittenFile | undefined {
  let best: WrittenFile | undefined;
  for (const f of fresh) if (!best || rank(f) < rank(best)) best = f;
  if (!best) return undefined;
  if (shown && shown.path !== best.path && shown.runId === best.runId) {
    if (isArtifact(shown) && !isArtifact(best)) return undefined;
    // Files the run's commands made arrive when it is done, after its tool
    // writes: judged with them, they take the Canvas only when they tell more.
    if (best.found && rank(shown) <= rank(best)) return undefined;
  }
  return best;
}
