// The Files panel: the agent's workspace as a tree (directories load when
// expanded), a text file open in the editor to change and save, upload into
// the current directory and download of any file. It refreshes when a run
// writes files or ends.
import { WickError, type Wick } from "@wick-agent/sdk";
import { ChevronDown, ChevronRight } from "lucide-react";
import { lazy, Suspense, useCallback, useEffect, useRef, useState, type ChangeEvent } from "react";

import { fetchLimited, saveFile, decodeText } from "./content";
import {
  dirOf,
  emptyTree,
  findNode,
  joinPath,
  needsLoad,
  rows,
  setChildren,
  toggle,
  toNodes,
  visibleDirs,
  workspaceRoot,
  type TreeNode,
  type TreeState,
} from "./fileTree";
import { FileIcon } from "../shell/FileIcon";
import { formatBytes, isBinaryName, MAX_RENDER_BYTES } from "./kinds";
import type { WrittenFile } from "./types";

const CodeEditor = lazy(() => import("./CodeEditor"));

/**
 * The gateway's default upload limit (its -max-upload-bytes; the OpenAPI
 * document's x-wick-max-bytes). A gateway started with another limit says
 * so in its 413 answer, which replaces the number shown.
 */
export const DEFAULT_UPLOAD_LIMIT = 100 << 20;

/** uploadLimitOf reads the limit from a 413's message ("… the limit of N bytes"). */
export function uploadLimitOf(err: unknown): number | undefined {
  if (!(err instanceof WickError) || err.status !== 413) return undefined;
  const m = /limit of (\d+) bytes/.exec(err.message);
  return m ? Number(m[1]) : undefined;
}

export interface FilesPanelProps {
  client: Wick;
  agentId: string;
  writtenFiles: readonly WrittenFile[];
  running: boolean;
  onError: (err: unknown) => void;
}

/** The open file: what is known of it and, for text, the saved text and the edits. */
type OpenFile =
  | { path: string; state: "loading" }
  | { path: string; state: "text"; saved: string; draft: string }
  | { path: string; state: "binary" | "tooLarge"; size?: number }
  | { path: string; state: "error"; message: string };

export function FilesPanel({ client, agentId, writtenFiles, running, onError }: FilesPanelProps) {
  // Undefined until the agent is read (its backend places the workspace);
  // null for an agent without a backend, which has no files.
  const [tree, setTree] = useState<TreeState | null>();
  const [rootError, setRootError] = useState<string>();
  // Where uploads go: the directory last clicked, or the open file's.
  const [cwd, setCwd] = useState("");
  const [open, setOpen] = useState<OpenFile>();
  const [busy, setBusy] = useState<string>();
  const [uploadLimit, setUploadLimit] = useState(DEFAULT_UPLOAD_LIMIT);
  const inFlight = useRef(new Set<string>());
  const rootRef = useRef<string | undefined>(undefined);
  rootRef.current = tree?.root;
  const isRoot = (dir: string) => dir === rootRef.current;
  const errors = useRef(onError);
  errors.current = onError;

  // The agent's backend says where its workspace is; read again on every
  // refresh, since the backend can be switched.
  const readRoot = useCallback(async () => {
    try {
      const { data } = await client.api.GET("/agents/{agent_id}", { params: { path: { agent_id: agentId } } });
      const root = workspaceRoot(data?.agent?.backend);
      setTree((t) => (root === undefined ? null : t?.root === root ? t : emptyTree(root)));
      setCwd((c) => (root !== undefined && (c === "" || !c.startsWith(root)) ? root : c));
    } catch (err) {
      setRootError(err instanceof Error ? err.message : String(err));
      errors.current(err);
    }
  }, [client, agentId]);
  useEffect(() => {
    void readRoot();
  }, [readRoot]);

  const listDir = useCallback(
    async (dir: string) => {
      if (inFlight.current.has(dir)) return;
      inFlight.current.add(dir);
      try {
        const { data } = await client.api.GET("/agents/{agent_id}/files/list", {
          params: { path: { agent_id: agentId }, query: { path: dir } },
        });
        setTree((s) => s && setChildren(s, dir, toNodes(dir, data?.entries ?? [])));
        setRootError((e) => (isRoot(dir) ? undefined : e));
      } catch (err) {
        // Recorded as empty so that it is not fetched again in a loop; a
        // refresh tries again.
        setTree((s) => s && setChildren(s, dir, []));
        if (isRoot(dir)) setRootError(err instanceof Error ? err.message : String(err));
        errors.current(err);
      } finally {
        inFlight.current.delete(dir);
      }
    },
    [client, agentId],
  );

  // Expanded directories load when first shown.
  useEffect(() => {
    if (tree) for (const dir of needsLoad(tree)) void listDir(dir);
  }, [tree, listDir]);

  const loadFile = useCallback(
    async (path: string, size: number | undefined, signal?: AbortSignal) => {
      if (isBinaryName(path)) {
        setOpen({ path, state: "binary", ...(size !== undefined ? { size } : {}) });
        return;
      }
      if (size !== undefined && size > MAX_RENDER_BYTES) {
        setOpen({ path, state: "tooLarge", size });
        return;
      }
      setOpen((o) => (o?.path === path && o.state === "text" ? o : { path, state: "loading" }));
      try {
        const got = await fetchLimited(client, agentId, path, MAX_RENDER_BYTES, signal);
        if (signal?.aborted) return;
        if (got.tooLarge) {
          setOpen({ path, state: "tooLarge" });
          return;
        }
        const text = decodeText(got.bytes);
        setOpen(
          text === undefined
            ? { path, state: "binary", size: got.bytes.byteLength }
            : { path, state: "text", saved: text, draft: text },
        );
      } catch (err) {
        if (signal?.aborted) return;
        setOpen({ path, state: "error", message: err instanceof Error ? err.message : String(err) });
        errors.current(err);
      }
    },
    [client, agentId],
  );

  const openPath = open?.path;
  const dirty = open?.state === "text" && open.draft !== open.saved;

  // A run that wrote files or ended changed the workspace: reload what is
  // shown, and the open file unless it has unsaved edits.
  const writes = writtenFiles.map((f) => `${f.path}@${f.version}`).join("\n");
  const reloadState = useRef({ tree, open, dirty });
  reloadState.current = { tree, open, dirty };
  const refresh = useCallback(() => {
    const { tree: t, open: o, dirty: d } = reloadState.current;
    void readRoot();
    if (t) for (const dir of visibleDirs(t)) void listDir(dir);
    if (o && !d && o.state !== "loading") void loadFile(o.path, undefined);
  }, [readRoot, listDir, loadFile]);
  const seen = useRef({ writes, running });
  useEffect(() => {
    const before = seen.current;
    seen.current = { writes, running };
    if (writes !== before.writes || (before.running && !running)) refresh();
  }, [writes, running, refresh]);

  // Opening a file (a click) loads it; a stale answer is dropped.
  useEffect(() => {
    if (!openPath) return;
    const abort = new AbortController();
    const t = reloadState.current.tree;
    const node = t ? findNode(t, openPath) : undefined;
    void loadFile(openPath, node?.size, abort.signal);
    return () => abort.abort();
  }, [openPath, loadFile]);

  const clickNode = (node: TreeNode) => {
    if (node.type === "dir") {
      setTree((s) => s && toggle(s, node.path));
      setCwd(node.path);
      return;
    }
    if (dirty && node.path !== openPath && !window.confirm(`Discard the unsaved changes to ${openPath}?`)) return;
    setCwd(dirOf(node.path));
    setOpen({ path: node.path, state: "loading" });
  };

  const save = async () => {
    if (open?.state !== "text" || busy) return;
    const { path, draft } = open;
    setBusy("Saving…");
    try {
      await client.upload(agentId, path, draft);
      setOpen((o) => (o?.path === path && o.state === "text" ? { ...o, saved: draft } : o));
      void listDir(dirOf(path));
    } catch (err) {
      errors.current(err);
    } finally {
      setBusy(undefined);
    }
  };

  const upload = async (e: ChangeEvent<HTMLInputElement>) => {
    const input = e.currentTarget;
    const files = [...(input.files ?? [])];
    if (files.length === 0) return;
    const dir = cwd;
    try {
      for (const file of files) {
        setBusy(`Uploading ${file.name} (${formatBytes(file.size)})…`);
        // A File is a Blob: fetch streams it from disk. The gateway answers
        // 413 before reading a body whose Content-Length is over its limit.
        await client.upload(agentId, joinPath(dir, file.name), file);
      }
    } catch (err) {
      const limit = uploadLimitOf(err);
      if (limit !== undefined) setUploadLimit(limit);
      errors.current(err);
    } finally {
      setBusy(undefined);
      input.value = "";
      setTree((s) => (s && !s.expanded.has(dir) ? toggle(s, dir) : s));
      void listDir(dir);
    }
  };

  const download = async (path: string) => {
    setBusy(`Downloading ${path}…`);
    try {
      await saveFile(client, agentId, path);
    } catch (err) {
      errors.current(err);
    } finally {
      setBusy(undefined);
    }
  };

  const lines = tree ? rows(tree) : [];
  const showsEntries = !rootError && !!tree && tree.root in tree.children && lines.length > 0;
  return (
    <div className={open ? "wp-files wp-files-open" : "wp-files"}>
      <div className="wp-toolbar">
        <label className="wp-button" title={`Upload files into ${cwd}`}>
          Upload
          <input type="file" multiple className="wp-visually-hidden" data-testid="file-upload" onChange={upload} disabled={!!busy || !tree} />
        </label>
        <span className="wp-muted wp-grow wp-ellipsis" data-testid="file-upload-limit">
          to {cwd} · max {formatBytes(uploadLimit)}
        </span>
        <button type="button" className="wp-button" onClick={refresh} title="Reload the tree" aria-label="Refresh">
          ⟳
        </button>
      </div>
      {busy && (
        <p className="wp-muted wp-busy" role="status">
          {busy}
        </p>
      )}
      {/* Only a list of entries is a tree: an empty tree role (while loading, or for an empty workspace) is an ARIA error. */}
      <div
        className="wp-tree"
        role={showsEntries ? "tree" : undefined}
        aria-label={showsEntries ? "Workspace files" : undefined}
        data-testid="files-tree"
      >
        {rootError ? (
          <p className="wp-empty">The workspace cannot be listed: {rootError}</p>
        ) : tree === null ? (
          <p className="wp-empty">This agent has no sandbox backend, so it has no files. Choose a backend to give it a workspace.</p>
        ) : !tree || !(tree.root in tree.children) ? (
          <p className="wp-empty">Loading…</p>
        ) : lines.length === 0 ? (
          <p className="wp-empty">The workspace is empty.</p>
        ) : (
          lines.map(({ node, depth, expanded, loading }) => (
            <button
              type="button"
              key={node.path}
              role="treeitem"
              aria-expanded={node.type === "dir" ? expanded : undefined}
              aria-selected={node.path === openPath}
              className="wp-tree-row"
              style={{ paddingInlineStart: `${0.5 + depth * 1.1}rem` }}
              data-testid="file-entry"
              data-path={node.path}
              data-type={node.type}
              onClick={() => clickNode(node)}
            >
              <span className="wp-tree-icon" aria-hidden="true">
                {node.type === "dir" && (expanded ? <ChevronDown size={14} /> : <ChevronRight size={14} />)}
              </span>
              <FileIcon path={node.path} type={node.type} expanded={expanded} />
              <span className="wp-grow wp-ellipsis">{node.name}</span>
              {loading ? <span className="wp-muted">…</span> : node.type !== "dir" && <span className="wp-muted wp-size">{formatBytes(node.size)}</span>}
            </button>
          ))
        )}
      </div>
      {open && (
        <div className="wp-file-view">
          <div className="wp-toolbar">
            <span className="wp-grow wp-ellipsis wp-path" title={open.path}>
              {open.path}
              {dirty && " •"}
            </span>
            {open.state === "text" && (
              <button type="button" className="wp-button wp-primary" data-testid="file-save" disabled={!dirty || !!busy} onClick={save}>
                Save
              </button>
            )}
            <button type="button" className="wp-button" data-testid="file-download" onClick={() => download(open.path)}>
              Download
            </button>
            <button
              type="button"
              className="wp-button"
              aria-label="Close the file"
              onClick={() => {
                if (!dirty || window.confirm(`Discard the unsaved changes to ${open.path}?`)) setOpen(undefined);
              }}
            >
              ×
            </button>
          </div>
          <FileBody open={open} onEdit={(draft) => setOpen((o) => (o?.path === open.path && o.state === "text" ? { ...o, draft } : o))} onSave={save} />
        </div>
      )}
    </div>
  );
}

function FileBody({ open, onEdit, onSave }: { open: OpenFile; onEdit: (draft: string) => void; onSave: () => void }) {
  switch (open.state) {
    case "loading":
      return <p className="wp-empty">Loading…</p>;
    case "error":
      return <p className="wp-empty wp-error">{open.message}</p>;
    case "binary":
      return <p className="wp-empty">A binary file{open.size !== undefined ? ` (${formatBytes(open.size)})` : ""}: download it to open it.</p>;
    case "tooLarge":
      return (
        <p className="wp-empty">
          {open.size !== undefined ? `${formatBytes(open.size)}: t` : "T"}oo large to edit here (the limit is {formatBytes(MAX_RENDER_BYTES)}): download it.
        </p>
      );
    case "text":
      return (
        <Suspense fallback={<p className="wp-empty">Loading the editor…</p>}>
          <CodeEditor data-testid="file-editor" path={open.path} value={open.draft} onChange={onEdit} onSave={onSave} />
        </Suspense>
      );
  }
}
