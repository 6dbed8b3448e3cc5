import { describe, expect, it } from "vitest";

import type { ListEntry } from "./fileTree";
import { changedFiles, SNAPSHOT_MAX_DIRS, SNAPSHOT_MAX_ENTRIES, takeSnapshot, type ListDir, type SnapshotOptions } from "./snapshot";

/** A workspace as directories of entries; a file is its size, a directory {}. */
type Tree = Record<string, Record<string, number | "dir">>;

/** fakeList lists a Tree and counts its calls; a directory not in the tree fails. */
function fakeList(tree: Tree): ListDir & { calls: string[] } {
  const calls: string[] = [];
  const list = async (dir: string): Promise<ListEntry[]> => {
    calls.push(dir);
    const d = tree[dir];
    if (!d) throw new Error(`no such directory: ${dir}`);
    return Object.entries(d).map(([name, v]) => (v === "dir" ? { name, type: "dir", size: "4096" } : { name, type: "file", size: String(v) }));
  };
  return Object.assign(list, { calls });
}

async function diff(before: Tree, after: Tree, options?: SnapshotOptions): Promise<string[]> {
  return changedFiles(await takeSnapshot(fakeList(before), "/workspace", options), await takeSnapshot(fakeList(after), "/workspace", options));
}

describe("changedFiles", () => {
  const skills = { skills: "dir" as const };
  const cases: { name: string; before: Tree; after: Tree; options?: SnapshotOptions; want: string[] }[] = [
    { name: "nothing changed", before: { "/workspace": { "a.csv": 10 } }, after: { "/workspace": { "a.csv": 10 } }, want: [] },
    { name: "a new file in the root", before: { "/workspace": {} }, after: { "/workspace": { "chart.png": 2048 } }, want: ["/workspace/chart.png"] },
    { name: "a file whose size changed", before: { "/workspace": { "a.csv": 10, "b.csv": 5 } }, after: { "/workspace": { "a.csv": 12, "b.csv": 5 } }, want: ["/workspace/a.csv"] },
    { name: "a deleted file is not offered", before: { "/workspace": { "a.csv": 10 } }, after: { "/workspace": {} }, want: [] },
    {
      name: "files in a directory the run made",
      before: { "/workspace": { "sales.csv": 300 } },
      after: { "/workspace": { "sales.csv": 300, report: "dir" }, "/workspace/report": { "sales-chart.png": 30000, "summary.md": 900 } },
      want: ["/workspace/report/sales-chart.png", "/workspace/report/summary.md"],
    },
    {
      name: "a new file in an existing directory",
      before: { "/workspace": { out: "dir" }, "/workspace/out": { "old.txt": 1 } },
      after: { "/workspace": { out: "dir" }, "/workspace/out": { "old.txt": 1, "new.txt": 2 } },
      want: ["/workspace/out/new.txt"],
    },
    {
      name: "two levels down is not looked at",
      before: { "/workspace": { out: "dir" }, "/workspace/out": {} },
      after: { "/workspace": { out: "dir" }, "/workspace/out": { deep: "dir" }, "/workspace/out/deep": { "x.txt": 1 } },
      want: [],
    },
    {
      name: "the skills library is skipped",
      before: { "/workspace": skills, "/workspace/skills": { "a.py": 1 } },
      after: { "/workspace": skills, "/workspace/skills": { "a.py": 2, "b.py": 1 } },
      options: { skip: ["/workspace/skills/"] },
      want: [],
    },
    {
      name: "hidden files and directories are skipped",
      before: { "/workspace": {} },
      after: { "/workspace": { ".bash_history": 10, ".cache": "dir", "plot.png": 5 }, "/workspace/.cache": { "fontlist.json": 100 } },
      want: ["/workspace/plot.png"],
    },
    {
      name: "a directory that fails to list is left out",
      before: { "/workspace": { broken: "dir" } },
      after: { "/workspace": { broken: "dir" }, "/workspace/broken": { "x.txt": 1 } },
      want: [],
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      expect(await diff(c.before, c.after, c.options)).toEqual(c.want);
    });
  }
});

describe("takeSnapshot bounds", () => {
  it("has the documented defaults", () => {
    expect([SNAPSHOT_MAX_DIRS, SNAPSHOT_MAX_ENTRIES]).toEqual([50, 2000]);
  });

  it("lists at most maxDirs directories, the root included, in name order", async () => {
    const tree: Tree = { "/workspace": {} };
    for (let i = 0; i < 10; i++) {
      tree["/workspace"]![`d${i}`] = "dir";
      tree[`/workspace/d${i}`] = { "f.txt": 1 };
    }
    const list = fakeList(tree);
    const snap = await takeSnapshot(list, "/workspace", { maxDirs: 4 });
    expect(list.calls).toEqual(["/workspace", "/workspace/d0", "/workspace/d1", "/workspace/d2"]);
    expect([...snap.listed].sort()).toEqual(["/workspace", "/workspace/d0", "/workspace/d1", "/workspace/d2"]);
  });

  it("leaves out a directory whose entries pass maxEntries, and reports nothing in it", async () => {
    const before: Tree = { "/workspace": { big: "dir", small: "dir" }, "/workspace/big": { a: 1, b: 1, c: 1 }, "/workspace/small": { a: 1 } };
    const after: Tree = { "/workspace": { big: "dir", small: "dir" }, "/workspace/big": { a: 1, b: 1, c: 1, d: 1 }, "/workspace/small": { a: 1, b: 1 } };
    // 2 root entries + 1 in small fit in 4; big's 3 do not.
    const options = { maxEntries: 4 };
    const snap = await takeSnapshot(fakeList(before), "/workspace", options);
    expect(snap.listed.has("/workspace/big")).toBe(false);
    expect(snap.listed.has("/workspace/small")).toBe(true);
    // big's new file d is not reported: big was never listed.
    expect(await diff(before, after, options)).toEqual(["/workspace/small/b"]);
  });

  it("records nothing when the root alone passes maxEntries", async () => {
    const snap = await takeSnapshot(fakeList({ "/workspace": { a: 1, b: 1, c: 1 } }), "/workspace", { maxEntries: 2 });
    expect(snap.files.size).toBe(0);
    expect(snap.listed.size).toBe(0);
    expect(changedFiles(snap, await takeSnapshot(fakeList({ "/workspace": { a: 1, b: 2, c: 1, d: 1 } }), "/workspace"))).toEqual([]);
  });

  it("fails when the root cannot be listed", async () => {
    await expect(takeSnapshot(fakeList({}), "/workspace")).rejects.toThrow("no such directory");
  });
});
