// The side panel: Todos, Tasks, Files, Canvas, Knowledge, Usage and Terminal in tabs. A panel is
// mounted when its tab is first shown and then kept (hidden) while another
// is, so that an open file, a canvas selection and a terminal session
// survive switching tabs. The Canvas opens itself when a run writes a file,
// so that what the agent made is in view without a click.
import { X } from "lucide-react";
import { lazy, Suspense, useEffect, useRef, useState, type KeyboardEvent } from "react";

import { IconButton } from "../shell/IconButton";

import { CanvasPanel } from "./CanvasPanel";
import { FilesPanel } from "./FilesPanel";
import { TasksPanel } from "./TasksPanel";
import { TodosPanel, todoStatus } from "./TodosPanel";
import { PANEL_TABS, type PanelContext, type PanelTab } from "./types";
import { artifactToOpen, newWrites, writeKeys } from "./writes";
import "./panels.css";

// xterm.js and its CSS load with the tab, not with the page; so does the
// Knowledge panel, which most sessions never open.
const TerminalPanel = lazy(() => import("./TerminalPanel"));
const KnowledgePanel = lazy(() => import("./KnowledgePanel"));
const UsagePanel = lazy(() => import("./UsagePanel"));

const LABELS: Record<PanelTab, string> = { todos: "Todos", tasks: "Tasks", files: "Files", canvas: "Canvas", knowledge: "Knowledge", terminal: "Terminal", usage: "Usage" };

const noFiles: PanelContext["writtenFiles"] = [];
const noTodos: PanelContext["todos"] = [];
const logError = (err: unknown) => console.error(err);

/**
 * SidePanel renders the panels for the shell's context. Without a client
 * and an agent (none chosen yet) it shows the tabs and says so.
 */
export function SidePanel(props: Partial<PanelContext> & { onClose?: () => void }) {
  const { client, agentId, threadId, running = false } = props;
  const writtenFiles = props.writtenFiles ?? noFiles;
  const todos = props.todos ?? noTodos;
  const onError = props.onError ?? logError;

  const [tab, setTab] = useState<PanelTab>("todos");
  // The tabs shown so far for this agent: their panels stay mounted.
  const [visited, setVisited] = useState<{ agentId: string | undefined; tabs: ReadonlySet<PanelTab> }>({
    agentId,
    tabs: new Set(),
  });
  const [canvasPath, setCanvasPath] = useState<string>();
  // Read by the effect below, which runs on new writes, not on a selection.
  const canvasPathNow = useRef(canvasPath);
  canvasPathNow.current = canvasPath;
  const shown = new Set(visited.agentId === agentId ? visited.tabs : []).add(tab);

  const show = (t: PanelTab) => {
    setTab(t);
    setVisited((v) => ({ agentId, tabs: new Set(v.agentId === agentId ? v.tabs : []).add(t) }));
  };

  // The writes already known in this thread; a run's new ones open the canvas.
  const seen = useRef<{ agentId: string | undefined; threadId: string | undefined; keys: Set<string> } | null>(null);
  useEffect(() => {
    const prev = seen.current;
    seen.current = { agentId, threadId, keys: writeKeys(writtenFiles) };
    // Another agent or thread: what it has is not news. A new thread
    // getting its id from its first run is the same conversation.
    const sameThread = prev && prev.agentId === agentId && (prev.threadId === threadId || prev.threadId === undefined);
    if (!prev || !sameThread) {
      setCanvasPath(undefined);
      return;
    }
    const shownFile = writtenFiles.find((f) => f.path === canvasPathNow.current);
    const open = artifactToOpen(newWrites(prev.keys, writtenFiles), shownFile);
    if (open) {
      setCanvasPath(open.path);
      show("canvas");
    }
    // show reads only agentId, a dependency.
  }, [agentId, threadId, writtenFiles]);

  const onTabKey = (e: KeyboardEvent<HTMLDivElement>) => {
    const step = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
    if (step === 0) return;
    e.preventDefault();
    const next = PANEL_TABS[(PANEL_TABS.indexOf(tab) + step + PANEL_TABS.length) % PANEL_TABS.length] ?? tab;
    show(next);
    const el = document.getElementById(`wp-tab-${next}`);
    el?.focus();
    // On a narrow screen the strip scrolls: the chosen tab comes into view.
    el?.scrollIntoView?.({ block: "nearest", inline: "nearest" });
  };

  const done = todos.filter((t) => todoStatus(t.status) === "done").length;
  const badges: Partial<Record<PanelTab, string>> = {
    ...(todos.length > 0 ? { todos: `${done}/${todos.length}` } : {}),
    ...(writtenFiles.length > 0 ? { canvas: String(writtenFiles.length) } : {}),
  };

  const ready = client !== undefined && agentId !== undefined && agentId !== "";
  const noAgent = <p className="wp-empty">Choose an agent to see its files, canvas, knowledge and terminal.</p>;
  const panel = (t: PanelTab) => {
    if (t === "todos") return <TodosPanel todos={todos} />;
    if (t === "usage" && client !== undefined) {
      // The user's usage is not one agent's: it needs no agent chosen.
      return (
        <Suspense fallback={<p className="wp-empty">Loading your usage…</p>}>
          <UsagePanel client={client} running={running} onError={onError} />
        </Suspense>
      );
    }
    if (!ready) return noAgent;
    switch (t) {
      case "tasks":
        return <TasksPanel key={threadId ?? ""} client={client} threadId={threadId} running={running} onError={onError} />;
      case "files":
        return <FilesPanel key={agentId} client={client} agentId={agentId} writtenFiles={writtenFiles} running={running} onError={onError} />;
      case "canvas":
        return (
          <CanvasPanel
            key={agentId}
            client={client}
            agentId={agentId}
            writtenFiles={writtenFiles}
            selected={canvasPath}
            onSelect={setCanvasPath}
            onError={onError}
          />
        );
      case "knowledge":
        return (
          <Suspense fallback={<p className="wp-empty">Loading the knowledge base…</p>}>
            <KnowledgePanel client={client} agentId={agentId} onError={onError} />
          </Suspense>
        );
      case "terminal":
        return (
          <Suspense fallback={<p className="wp-empty">Loading the terminal…</p>}>
            <TerminalPanel key={agentId} client={client} agentId={agentId} onError={onError} />
          </Suspense>
        );
    }
  };

  return (
    <aside className="wp-side" aria-label="Side panel">
      <div className="wp-head">
      <div className="wp-tabs" role="tablist" aria-label="Panels" onKeyDown={onTabKey}>
        {PANEL_TABS.map((t) => (
          <button
            key={t}
            id={`wp-tab-${t}`}
            type="button"
            role="tab"
            aria-selected={t === tab}
            aria-controls={`wp-panel-${t}`}
            tabIndex={t === tab ? 0 : -1}
            className="wp-tab"
            data-testid={`panel-tab-${t}`}
            onClick={() => show(t)}
          >
            {LABELS[t]}
            {badges[t] && <span className="wp-badge">{badges[t]}</span>}
          </button>
        ))}
      </div>
      {props.onClose && (
        <IconButton label="Close the side panel" className="wp-close" data-testid="panel-close" onClick={props.onClose}>
          <X size={18} aria-hidden="true" />
        </IconButton>
      )}
      </div>
      {PANEL_TABS.filter((t) => shown.has(t)).map((t) => (
        <section key={t} id={`wp-panel-${t}`} role="tabpanel" aria-labelledby={`wp-tab-${t}`} className="wp-panel" data-panel={t} hidden={t !== tab}>
          {panel(t)}
        </section>
      ))}
    </aside>
  );
}
