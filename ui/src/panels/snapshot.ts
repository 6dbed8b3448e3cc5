// Files a command wrote: the Canvas learns of files from write_file and
// edit_file tool events, but a script run by `execute` writes its own (a
// chart, a report) without any event naming them. The UI therefore lists
// the workspace when a run starts and again when it is done, and offers
// the files that appeared or changed size in between. The listing API gives
// names, types and sizes but no modification times, so a file rewritten with
// the same size is not noticed.
//
// The snapshot is bounded so that a large workspace costs a few requests,
// not thousands: the root and its subdirectories, one level down, at most
// SNAPSHOT_MAX_DIRS directories and SNAPSHOT_MAX_ENTRIES entries. A
// directory whose entries would pass the bound is left out as a whole, and
// files in it are then never reported (neither as new nor as changed).

import type { Wick } from "@wick-agent/sdk";

import { joinPath, workspaceRoot, type ListEntry } from "./fileTree";

/** The most directories a snapshot lists, the root included. */
export const SNAPSHOT_MAX_DIRS = 50;
/** The most entries (files and directories) a snapshot records. */
export const SNAPSHOT_MAX_ENTRIES = 2000;

/** Lists one directory (agent-facing path) of the workspace. */
export type ListDir = (dir: string) => Promise<readonly ListEntry[]>;

/** What a snapshot of the workspace recorded. */
export interface Snapshot {
  root: string;
  /** The size of every file in a listed directory, by agent-facing path. */
  files: ReadonlyMap<string, number>;
  /** The directories whose entries are all in files and dirs. */
  listed: ReadonlySet<string>;
  /** The subdirectories of listed directories, listed or not. */
  dirs: ReadonlySet<string>;
}

export interface SnapshotOptions {
  /** Directories not listed (the skills library, which no run writes to). */
  skip?: readonly string[];
  maxDirs?: number;
  maxEntries?: number;
}

interface Listing {
  dir: string;
  entries: { path: string; dir: boolean; size: number }[];
}

// Hidden entries are left out: HOME may be the workspace, and a tool's
// caches (.cache/matplotlib, .npm) are not what a run made for the user.
function entriesOf(dir: string, raw: readonly ListEntry[]): Listing {
  const entries: Listing["entries"] = [];
  for (const e of raw) {
    if (typeof e.name !== "string" || e.name === "" || e.name.startsWith(".")) continue;
    if (e.type !== "file" && e.type !== "dir") continue;
    entries.push({ path: joinPath(dir, e.name), dir: e.type === "dir", size: Number(e.size ?? 0) || 0 });
  }
  return { dir, entries };
}

/**
 * takeSnapshot lists root and its subdirectories (in name order, skipping
 * those in skip) within the bounds. A directory that cannot be listed is
 * left out; a root that cannot be listed fails the snapshot.
 */
export async function takeSnapshot(list: ListDir, root: string, options: SnapshotOptions = {}): Promise<Snapshot> {
  const maxDirs = options.maxDirs ?? SNAPSHOT_MAX_DIRS;
  const maxEntries = options.maxEntries ?? SNAPSHOT_MAX_ENTRIES;
  const skip = new Set((options.skip ?? []).map((p) => p.replace(/\/+$/, "")));
  const files = new Map<string, number>();
  const listed = new Set<string>();
  const dirs = new Set<string>();
  let count = 0;
  const record = (l: Listing): boolean => {
    if (count + l.entries.length > maxEntries) return false;
    count += l.entries.length;
    listed.add(l.dir);
    for (const e of l.entries) {
      if (e.dir) dirs.add(e.path);
      else files.set(e.path, e.size);
    }
    return true;
  };
  const top = entriesOf(root, await list(root));
  if (!record(top)) return { root, files, listed, dirs };
  const subdirs = top.entries
    .filter((e) => e.dir && !skip.has(e.path))
    .map((e) => e.path)
    .sort()
    .slice(0, Math.max(0, maxDirs - 1));
  const listings = await Promise.all(
    subdirs.map((dir) =>
      list(dir).then(
        (raw) => entriesOf(dir, raw),
        () => undefined,
      ),
    ),
  );
  for (const l of listings) if (l) record({ dir: l.dir, entries: l.entries.filter((e) => !e.dir) });
  return { root, files, listed, dirs };
}

function parentOf(path: string): string {
  return path.slice(0, path.lastIndexOf("/"));
}

/**
 * changedFiles returns the files of after that are not in before or whose
 * size differs, in path order. A file counts only where before knew its
 * directory: listed, or absent from a listed parent (a directory the run
 * made).
 */
export function changedFiles(before: Snapshot, after: Snapshot): string[] {
  const out: string[] = [];
  for (const [path, size] of after.files) {
    const dir = parentOf(path);
    let known: boolean;
    if (before.listed.has(dir)) known = true;
    else known = before.listed.has(parentOf(dir)) && !before.dirs.has(dir);
    if (!known) continue;
    const old = before.files.get(path);
    if (old === undefined || old !== size) out.push(path);
  }
  return out.sort();
}

/**
 * snapshotWorkspace takes the snapshot of an agent's workspace through the
 * API, skipping its skills paths and root/skills (the library's default
 * place). Undefined for an agent without a backend, which has no files.
 */
export async function snapshotWorkspace(client: Wick, agentId: string, signal?: AbortSignal): Promise<Snapshot | undefined> {
  const { data } = await client.api.GET("/agents/{agent_id}", { params: { path: { agent_id: agentId } }, signal });
  const agent = data?.agent;
  const root = workspaceRoot(agent?.backend);
  if (root === undefined) return undefined;
  const list: ListDir = async (dir) => {
    const { data } = await client.api.GET("/agents/{agent_id}/files/list", { params: { path: { agent_id: agentId }, query: { path: dir } }, signal });
    return data?.entries ?? [];
  };
  return takeSnapshot(list, root, { skip: [joinPath(root, "skills"), ...(agent?.skills?.paths ?? [])] });
}
