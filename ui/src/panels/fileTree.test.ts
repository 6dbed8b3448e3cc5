import { describe, expect, it } from "vitest";

import {
  baseName,
  dirOf,
  emptyTree as newTree,
  findNode,
  joinPath,
  DEFAULT_ROOT as ROOT,
  needsLoad,
  rows,
  setChildren,
  toggle,
  toNodes,
  visibleDirs,
  workspaceRoot,
  type TreeState,
} from "./fileTree";

describe("workspaceRoot", () => {
  it("is /workspace, a Docker backend's workdir, or none without a backend", () => {
    expect(workspaceRoot({ type: "local" })).toBe("/workspace");
    // The local backend's workspace is always /workspace (the service ignores workdir there).
    expect(workspaceRoot({ type: "local", workdir: "/app" })).toBe("/workspace");
    expect(workspaceRoot({ type: "docker" })).toBe("/workspace");
    expect(workspaceRoot({ type: "docker", workdir: "/app" })).toBe("/app");
    expect(workspaceRoot({})).toBeUndefined();
    expect(workspaceRoot(undefined)).toBeUndefined();
  });
});

const root = toNodes(ROOT, [
  { name: "notes.txt", type: "file", size: "12" },
  { name: "src", type: "dir", size: "4096" },
  { name: "b.md", type: "file", size: 3 },
  { name: "out", type: "dir" },
  { name: "", type: "file" },
  { name: "link", type: "symlink", size: "7" },
]);

describe("toNodes", () => {
  it("puts directories first, then names in order, and drops nameless entries", () => {
    expect(root.map((n) => n.name)).toEqual(["out", "src", "b.md", "link", "notes.txt"]);
  });
  it("makes paths and sizes", () => {
    expect(root.find((n) => n.name === "notes.txt")).toEqual({ path: "/workspace/notes.txt", name: "notes.txt", type: "file", size: 12 });
    expect(root.find((n) => n.name === "out")?.size).toBe(0);
    expect(root.find((n) => n.name === "link")?.type).toBe("symlink");
  });
});

const emptyTree = newTree(ROOT);

describe("the tree", () => {
  const loaded = setChildren(emptyTree, ROOT, root);

  it("loads the root first", () => {
    expect(needsLoad(emptyTree)).toEqual([ROOT]);
    expect(needsLoad(loaded)).toEqual([]);
  });

  it("loads a directory when it is expanded, and shows it as loading until then", () => {
    const t = toggle(loaded, "/workspace/src");
    expect(needsLoad(t)).toEqual(["/workspace/src"]);
    expect(rows(t).find((r) => r.node.path === "/workspace/src")).toMatchObject({ expanded: true, loading: true, depth: 0 });
  });

  it("renders expanded directories' entries below them, indented", () => {
    let t = toggle(loaded, "/workspace/src");
    t = setChildren(t, "/workspace/src", toNodes("/workspace/src", [{ name: "main.py", type: "file", size: "5" }, { name: "lib", type: "dir" }]));
    t = toggle(t, "/workspace/src/lib");
    t = setChildren(t, "/workspace/src/lib", toNodes("/workspace/src/lib", [{ name: "x.py", type: "file" }]));
    expect(rows(t).map((r) => `${r.depth}:${r.node.name}`)).toEqual([
      "0:out",
      "0:src",
      "1:lib",
      "2:x.py",
      "1:main.py",
      "0:b.md",
      "0:link",
      "0:notes.txt",
    ]);
    expect(visibleDirs(t)).toEqual([ROOT, "/workspace/src", "/workspace/src/lib"]);
    // Collapsing hides the entries but keeps them loaded; the reloads skip them.
    const collapsed = toggle(t, "/workspace/src");
    expect(rows(collapsed).map((r) => r.node.name)).toEqual(["out", "src", "b.md", "link", "notes.txt"]);
    expect(visibleDirs(collapsed)).toEqual([ROOT]);
    expect(needsLoad(toggle(collapsed, "/workspace/src"))).toEqual([]);
    expect(findNode(t, "/workspace/src/lib/x.py")?.name).toBe("x.py");
  });

  it("forgets a directory that is gone, with what was below it", () => {
    let t: TreeState = toggle(loaded, "/workspace/src");
    t = setChildren(t, "/workspace/src", toNodes("/workspace/src", [{ name: "lib", type: "dir" }]));
    t = toggle(t, "/workspace/src/lib");
    t = setChildren(t, "/workspace/src/lib", []);
    const after = setChildren(t, ROOT, root.filter((n) => n.name !== "src"));
    expect(Object.keys(after.children)).toEqual([ROOT]);
    expect([...after.expanded]).toEqual([ROOT]);
    // Recreated, it is collapsed and loads afresh when expanded.
    const back = setChildren(after, ROOT, root);
    expect(needsLoad(toggle(back, "/workspace/src"))).toEqual(["/workspace/src"]);
  });

  it("keeps the root expanded", () => {
    expect(toggle(loaded, ROOT)).toBe(loaded);
  });

  it("starts at another root", () => {
    let t = newTree("/app");
    expect(needsLoad(t)).toEqual(["/app"]);
    t = setChildren(t, "/app", toNodes("/app", [{ name: "x", type: "file" }]));
    expect(rows(t).map((r) => r.node.path)).toEqual(["/app/x"]);
  });
});

describe("paths", () => {
  it("joins, splits and names", () => {
    expect(joinPath("/workspace", "a")).toBe("/workspace/a");
    expect(joinPath("/", "a")).toBe("/a");
    expect(dirOf("/workspace/a/b.txt")).toBe("/workspace/a");
    expect(dirOf("/a")).toBe("/");
    expect(baseName("/workspace/a/b.txt")).toBe("b.txt");
  });
});
