// Telling the files a run just wrote from those the canvas already knew:
// the Canvas opens itself for the former.
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
