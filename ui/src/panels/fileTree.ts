// The model of the Files panel's tree: directories load their entries
// lazily, when first expanded, and a refresh reloads every loaded one.
// Pure functions over an immutable state, so that React re-renders on
// change and the logic is tested without a DOM.

/** The workspace as the agent sees it, unless its Docker backend names another workdir. */
export const DEFAULT_ROOT = "/workspace";

/** The backend fields of an agent that place its workspace (GET /agents/{agent_id}). */
export interface BackendLike {
  type?: string;
  workdir?: string;
}

/**
 * workspaceRoot is the directory the tree starts at: what the agent service
 * lists for an empty path (services/agent/rpc_files.go, workdir): a Docker
 * backend's workdir, else /workspace. Undefined for an agent without a
 * backend, which has no files.
 */
export function workspaceRoot(backend: BackendLike | undefined): string | undefined {
  if (!backend?.type) return undefined;
  return backend.type === "docker" && backend.workdir ? backend.workdir : DEFAULT_ROOT;
}

/** An entry of a directory. */
export interface TreeNode {
  /** Agent-facing path, e.g. "/workspace/out/report.md". */
  path: string;
  name: string;
  type: "file" | "dir" | "symlink";
  size: number;
}

/** An entry of GET /agents/{agent_id}/files/list (size is an int64: a string in JSON). */
export interface ListEntry {
  name?: string;
  type?: string;
  size?: string | number;
}

/** The tree: each loaded directory's entries and the expanded ones. */
export interface TreeState {
  /** The directory the tree starts at. */
  root: string;
  /** Entries by directory path; a directory not in it has not been loaded. */
  children: Readonly<Record<string, readonly TreeNode[]>>;
  /** Expanded directories (the root always is). */
  expanded: ReadonlySet<string>;
}

/** One line of the rendered tree. */
export interface TreeRow {
  node: TreeNode;
  depth: number;
  expanded: boolean;
  /** An expanded directory whose entries have not arrived yet. */
  loading: boolean;
}

/** A tree of which nothing is loaded yet. */
export function emptyTree(root: string): TreeState {
  return { root, children: {}, expanded: new Set([root]) };
}

/** joinPath is dir + "/" + name without doubled slashes. */
export function joinPath(dir: string, name: string): string {
  return dir.endsWith("/") ? dir + name : `${dir}/${name}`;
}

/** The directory of a path ("/workspace/a/b.txt" → "/workspace/a"). */
export function dirOf(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

/** The last element of a path. */
export function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/** Turns a listing into nodes: directories first, then by name. */
export function toNodes(dir: string, entries: readonly ListEntry[]): TreeNode[] {
  return entries
    .filter((e): e is ListEntry & { name: string } => typeof e.name === "string" && e.name !== "")
    .map((e): TreeNode => ({
      path: joinPath(dir, e.name),
      name: e.name,
      type: e.type === "dir" ? "dir" : e.type === "symlink" ? "symlink" : "file",
      size: Number(e.size ?? 0) || 0,
    }))
    .sort((a, b) => Number(b.type === "dir") - Number(a.type === "dir") || a.name.localeCompare(b.name));
}

/**
 * setChildren records a directory's entries. Loaded subdirectories that
 * are gone are forgotten, with everything below them, so that a directory
 * recreated later loads afresh.
 */
export function setChildren(state: TreeState, dir: string, nodes: readonly TreeNode[]): TreeState {
  const dirs = new Set(nodes.filter((n) => n.type === "dir").map((n) => n.path));
  const old = state.children[dir] ?? [];
  const gone = old.filter((n) => n.type === "dir" && !dirs.has(n.path)).map((n) => n.path);
  const under = (p: string) => gone.some((g) => p === g || p.startsWith(g + "/"));
  const children: Record<string, readonly TreeNode[]> = {};
  for (const [k, v] of Object.entries(state.children)) {
    if (!under(k)) children[k] = v;
  }
  children[dir] = nodes;
  return { root: state.root, children, expanded: new Set([...state.expanded].filter((p) => !under(p))) };
}

/** toggle expands a collapsed directory or collapses an expanded one (the root stays expanded). */
export function toggle(state: TreeState, dir: string): TreeState {
  if (dir === state.root) return state;
  const expanded = new Set(state.expanded);
  if (!expanded.delete(dir)) expanded.add(dir);
  return { ...state, expanded };
}

/** The directories to fetch: expanded ones not loaded yet, whose parents are shown. */
export function needsLoad(state: TreeState): string[] {
  return visibleDirs(state).filter((d) => !(d in state.children));
}

/** The expanded directories that are shown (every ancestor expanded too): what a refresh reloads. */
export function visibleDirs(state: TreeState): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    out.push(dir);
    for (const n of state.children[dir] ?? []) {
      if (n.type === "dir" && state.expanded.has(n.path)) walk(n.path);
    }
  };
  walk(state.root);
  return out;
}

/** The rows to render: the root's entries, and those of each expanded directory below its line. */
export function rows(state: TreeState): TreeRow[] {
  const out: TreeRow[] = [];
  const walk = (dir: string, depth: number) => {
    for (const node of state.children[dir] ?? []) {
      const expanded = node.type === "dir" && state.expanded.has(node.path);
      out.push({ node, depth, expanded, loading: expanded && !(node.path in state.children) });
      if (expanded) walk(node.path, depth + 1);
    }
  };
  walk(state.root, 0);
  return out;
}

/** The node at a path, if it is loaded. */
export function findNode(state: TreeState, path: string): TreeNode | undefined {
  return state.children[dirOf(path)]?.find((n) => n.path === path);
}
