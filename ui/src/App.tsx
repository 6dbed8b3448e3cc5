// The app shell: sidebar (agents, threads) | chat | side panel, which opens
// when it has something to show; the agent's settings are a dialog.
// It owns the client, the token, the open agent and thread (in the URL),
// the errors shown and the connection state.
import * as Tooltip from "@radix-ui/react-tooltip";
import { WickError, type Wick } from "@wick-agent/sdk";
import { PanelLeft, PanelRight } from "lucide-react";
import { useCallback, useEffect, useMemo, useRef, useState, type CSSProperties } from "react";

import { errorText, isAbort, isUnauthenticated, makeClient, type ConnState } from "./api/client";
import { followConfig, type ConfigEventData } from "./api/configEvents";
import { Chat, type ChatHandle } from "./chat/Chat";
import { useThreadChat } from "./chat/useThreadChat";
import { SidePanel } from "./panels/SidePanel";
import type { PanelContext } from "./panels/types";
import { newWrites, writeKeys } from "./panels/writes";
import { IconButton } from "./shell/IconButton";
import { ResizeHandle, usePanelWidth } from "./shell/ResizeHandle";
import { SettingsDialog } from "./shell/SettingsDialog";
import { AttachContext, browserUploader } from "./chat/attachmentsUploader";
import { ShortcutsHelp, useShortcuts } from "./shell/Shortcuts";
import { ThemeMenu } from "./shell/ThemeMenu";
import { useTheme } from "./shell/theme";
import { AgentForm, AgentList, type Agent } from "./sidebar/Agents";
import { ThreadList, type ThreadStatus } from "./sidebar/Threads";
import { useDelayedDelete } from "./sidebar/useDelayedDelete";
import { useThreadPages } from "./sidebar/useThreadPages";
import { NotFound } from "./shell/NotFound";
import { ConnectionState, ErrorBanner, TokenDialog } from "./shell/Notices";
import { isRunning, threadStatus, titleOf } from "./state/chat";
import { formatRoute, parseRoute, type Route } from "./state/route";
import { loadLastOpened, loadToken, saveLastOpened, saveToken, type LastOpened } from "./state/session";

/** asStatus reads a ThreadSummary's status; an unknown value (a newer server) shows as idle. */
function asStatus(s: string | undefined): ThreadStatus {
  return s === "running" || s === "interrupted" || s === "error" ? s : "idle";
}
/**
 * The id Wick gives its built-in agent and the agent of a single-agent
 * agents.yaml: a page opened without an agent opens it when the user has it.
 */
const DEFAULT_AGENT_ID = "default";

/** defaultAgentId is the agent a page opens first: "default" when listed, else the first listed. */
export function defaultAgentId(agents: readonly Agent[]): string | undefined {
  return agents.find((a) => a.agent_id === DEFAULT_AGENT_ID)?.agent_id ?? agents[0]?.agent_id;
}

/** isNotFoundOf: err is the API's answer that the thread does not exist. */
function isNotFoundOf(err: unknown, threadId: string): boolean {
  return err instanceof WickError && err.status === 404 && err.message.includes(threadId);
}

/** The most errors kept for the banner. */
const MAX_ERRORS = 20;

/** narrow reports a one-column screen (the CSS's breakpoint). */
function narrow(): boolean {
  return window.matchMedia?.("(max-width: 800px)").matches ?? false;
}

export function App({ baseUrl = location.origin }: { baseUrl?: string }) {
  const [token, setToken] = useState(loadToken);
  // Bumped by each sign-in, so that the same token entered again is tried again.
  const [signIns, setSignIns] = useState(0);
  const [tokenPrompt, setTokenPrompt] = useState<string | undefined>();
  const [conn, setConnState] = useState<ConnState>(navigator.onLine === false ? "offline" : "connected");
  const [errors, setErrors] = useState<string[]>([]);
  const [agents, setAgents] = useState<Agent[]>([]);
  const [route, setRoute] = useState<Route>(() => parseRoute(location.hash));
  // A page opened without an agent reopens the agent and thread open last;
  // set until that is done (or the user went elsewhere first).
  const [restoring, setRestoring] = useState<LastOpened | undefined>(() => (route.agentId ? undefined : loadLastOpened()));
  // The thread of the URL that the API says does not exist.
  const [missingThread, setMissingThread] = useState<string | undefined>();
  const [creating, setCreating] = useState(false);
  // On a narrow screen the sidebar covers the chat: closed at first. The
  // side panel opens when it has something to show (or is asked for).
  const [sidebarOpen, setSidebarOpen] = useState(() => !narrow());
  const [panelOpen, setPanelOpen] = useState(false);
  const [panelWidth, setPanelWidth] = usePanelWidth();
  const [theme, setTheme] = useTheme();

  const connRef = useRef(conn);
  const setConn = useCallback((s: ConnState) => {
    if (connRef.current === s) return;
    connRef.current = s;
    setConnState(s);
  }, []);

  // signIns is a dependency on purpose: a token entered again gets a new client and a new try.
  const client: Wick = useMemo(() => makeClient(baseUrl, token, setConn), [baseUrl, token, setConn, signIns]);

  const onError = useCallback((err: unknown) => {
    if (isAbort(err)) return;
    if (isUnauthenticated(err)) {
      setTokenPrompt(refusedText(err));
      return;
    }
    setErrors((e) => [...e, errorText(err)].slice(-MAX_ERRORS));
  }, []);

  // The URL names the open agent and thread.
  useEffect(() => {
    const onHash = () => setRoute(parseRoute(location.hash));
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
  // closeSidebar: the choice leads to the chat (a thread, a new one). On a
  // narrow screen the sidebar covers the chat, so it then closes; choosing
  // an agent keeps it open for choosing its thread.
  const navigate = useCallback((r: Route, closeSidebar = false) => {
    const h = formatRoute(r);
    if (location.hash !== h) location.hash = h;
    setRoute(r);
    if (closeSidebar && narrow()) setSidebarOpen(false);
  }, []);

  useEffect(() => {
    const online = () => setConn("connected");
    const offline = () => setConn("offline");
    window.addEventListener("online", online);
    window.addEventListener("offline", offline);
    return () => {
      window.removeEventListener("online", online);
      window.removeEventListener("offline", offline);
    };
  }, [setConn]);

  const loadAgents = useCallback(async () => {
    try {
      const { data } = await client.api.GET("/agents");
      setAgents(data?.agents ?? []);
      setSignedIn(true);
    } catch (err) {
      onError(err);
    }
  }, [client, onError]);

  // Start: does the gateway want a token? /health answers without one and
  // counts the caller's agents only when the request authenticates.
  useEffect(() => {
    let live = true;
    (async () => {
      if (!token) {
        try {
          const { data } = await client.api.GET("/health");
          if (!live) return;
          if (data?.agents === undefined) {
            setTokenPrompt("");
            return;
          }
        } catch (err) {
          if (live) onError(err);
        }
      }
      if (live) await loadAgents();
    })();
    return () => {
      live = false;
    };
  }, [client, token, loadAgents, onError]);

  const needToken = tokenPrompt !== undefined;
  // The agents loaded: the token (if any) is good, the feeds may start.
  const [signedIn, setSignedIn] = useState(false);

  // Config events keep the lists live.
  useEffect(() => {
    if (needToken || !signedIn) return;
    const ctrl = new AbortController();
    let queued = false;
    const reload = () => {
      if (queued) return;
      queued = true;
      queueMicrotask(() => {
        queued = false;
        void loadAgents();
      });
    };
    void followConfig(client, baseUrl, ctrl.signal, {
      live: reload,
      error: onError,
      event: (ev) => {
        if (ev.event === "container_changed" && ev.agent_id) {
          const status = (ev.data as ConfigEventData<"container_changed">)?.status;
          if (status) setAgents((as) => as.map((a) => (a.agent_id === ev.agent_id ? { ...a, sandbox_state: status } : a)));
        }
        reload();
      },
    });
    return () => ctrl.abort();
  }, [client, baseUrl, needToken, signedIn, loadAgents, onError]);

  // The agent of the URL; once the agents are listed, one that is not there
  // (a bad link, an agent deleted elsewhere) is shown as not found.
  const agentMissing = signedIn && route.agentId !== undefined && !agents.some((a) => a.agent_id === route.agentId);
  const agentId = agentMissing ? undefined : route.agentId;
  const agent = agents.find((a) => a.agent_id === agentId);
  // The uploader follows the agent's id, not its record: a refreshed record keeps the attached files.
  const uploader = useMemo(() => (agentId ? browserUploader(client, baseUrl, token, agentId) : undefined), [client, baseUrl, token, agentId]);
  const attachTarget = useMemo(() => (agent && uploader ? { agent, uploader } : undefined), [agent, uploader]);
  // No agent in the URL: the one open last if it is still there, else the default one.
  useEffect(() => {
    if (!signedIn || route.agentId) return;
    const last = restoring && agents.some((a) => a.agent_id === restoring.agentId) ? restoring.agentId : undefined;
    if (!last) setRestoring(undefined);
    const id = last ?? defaultAgentId(agents);
    if (id) navigate({ agentId: id });
  }, [agents, route.agentId, signedIn, restoring, navigate]);

  const threadMissing = route.threadId !== undefined && missingThread === route.threadId;
  const routeRef = useRef(route);
  routeRef.current = route;
  const onThreadError = useCallback(
    (err: unknown) => {
      const t = routeRef.current.threadId;
      if (t && isNotFoundOf(err, t)) setMissingThread(t);
      onError(err);
    },
    [onError],
  );

  const onThreadStarted = useCallback((a: string, t: string) => navigate({ agentId: a, threadId: t }), [navigate]);
  const tc = useThreadChat({ client: signedIn ? client : undefined, agentId, threadId: route.threadId, onError: onThreadError, onThreadStarted, onConn: setConn });
  const running = isRunning(tc.chat);

  // The agent's threads, a page at a time, searched on the server.
  const pages = useThreadPages(signedIn ? client : undefined, agentId, onError);
  const { threads, change: setThreads } = pages;
  const threadsOf = pages.loadedFor?.agentId;

  // The thread open last comes back once its agent's list shows it is still there.
  useEffect(() => {
    if (!restoring || route.agentId === undefined) return;
    if (route.agentId !== restoring.agentId || route.threadId !== undefined) return setRestoring(undefined);
    if (threadsOf !== restoring.agentId) return;
    setRestoring(undefined);
    if (restoring.threadId && threads.some((t) => t.thread_id === restoring.threadId)) navigate({ agentId: restoring.agentId, threadId: restoring.threadId });
  }, [restoring, route, threads, threadsOf, navigate]);

  // What is open is remembered for the next page (not while the last one is being reopened).
  useEffect(() => {
    if (restoring || !agentId) return;
    saveLastOpened({ agentId, ...(route.threadId && !threadMissing ? { threadId: route.threadId } : {}) });
  }, [restoring, agentId, route.threadId, threadMissing]);

  // The list changes when a run starts (a new thread) or ends.
  const activeRunId = tc.chat.activeRunId;
  const seenRunId = useRef(activeRunId);
  const { refresh: refreshThreads } = pages;
  useEffect(() => {
    if (seenRunId.current === activeRunId) return;
    seenRunId.current = activeRunId;
    if (signedIn) void refreshThreads();
  }, [refreshThreads, signedIn, activeRunId]);

  // Titles and statuses come with the list (ThreadSummary), read by the
  // server without loading any thread's state.
  const titles = useMemo(() => Object.fromEntries(threads.map((t) => [t.thread_id ?? "", t.title ?? ""])), [threads]);
  const storedStatus = useMemo(
    () => Object.fromEntries(threads.map((t) => [t.thread_id ?? "", asStatus(t.status)])) as Record<string, ThreadStatus>,
    [threads],
  );

  // A thread is listed once saved; the one just started shows at once. A
  // thread of the URL that has no messages here is not listed until the
  // list has it: it may not exist.
  const chatStarted = tc.chat.items.length > 0;
  const shownThreads = useMemo(() => {
    const id = tc.chat.threadId;
    if (!id || !chatStarted || threads.some((t) => t.thread_id === id)) return threads;
    return [{ thread_id: id, ...(agentId ? { agent_id: agentId } : {}) }, ...threads];
  }, [threads, tc.chat.threadId, chatStarted, agentId]);

  const statuses = useMemo(() => {
    const s: Record<string, ThreadStatus> = { ...storedStatus };
    if (tc.chat.threadId) s[tc.chat.threadId] = threadStatus(tc.chat);
    return s;
  }, [storedStatus, tc.chat]);

  // The title of a thread just started is its first message.
  const firstUser = tc.chat.items.find((it) => it.kind === "user");
  const shownTitles = useMemo(() => {
    if (!tc.chat.threadId || titles[tc.chat.threadId] || firstUser?.kind !== "user") return titles;
    return { ...titles, [tc.chat.threadId]: titleOf(firstUser.text) };
  }, [titles, tc.chat.threadId, firstUser]);

  // A deletion waits a few seconds, undoable, before it is sent.
  const commitDelete = useCallback(
    async (id: string) => {
      try {
        await client.api.DELETE("/threads/{thread_id}", { params: { path: { thread_id: id } } });
        setThreads((ts) => ts.filter((t) => t.thread_id !== id));
      } catch (err) {
        onError(err);
      }
    },
    [client, onError],
  );
  const delayedDelete = useDelayedDelete(commitDelete);
  const deleteThread = (id: string) => {
    delayedDelete.schedule(id);
    if (route.threadId === id) navigate({ ...(agentId ? { agentId } : {}) });
  };

  const renameThread = async (id: string, title: string) => {
    const t = await client.renameThread(id, title);
    setThreads((ts) => ts.map((x) => (x.thread_id === id ? { ...x, ...t } : x)));
  };

  const createAgent = async (a: Agent) => {
    try {
      const { data } = await client.api.POST("/agents", { body: a });
      setCreating(false);
      await loadAgents();
      navigate({ agentId: data?.agent?.agent_id ?? a.agent_id ?? "" });
    } catch (err) {
      onError(err);
    }
  };

  const deleteAgent = async (): Promise<boolean> => {
    if (!agentId || !window.confirm(`Delete the agent ${agentId}?`)) return false;
    try {
      await client.api.DELETE("/agents/{agent_id}", { params: { path: { agent_id: agentId } } });
      setAgents((as) => as.filter((a) => a.agent_id !== agentId));
      navigate({});
      return true;
    } catch (err) {
      onError(err);
      return false;
    }
  };

  // A token is tried before the prompt closes: a refused one keeps it open,
  // saying why, and is not kept.
  const tryToken = async (t: string) => {
    try {
      const { data } = await makeClient(baseUrl, t, setConn).api.GET("/agents");
      saveToken(t);
      setAgents(data?.agents ?? []);
      setTokenPrompt(undefined);
      setToken(t);
      setSignIns((n) => n + 1);
    } catch (err) {
      setTokenPrompt(isUnauthenticated(err) ? refusedText(err) : errorText(err));
    }
  };

  // A run of the open thread wrote a file: the panel opens its Canvas, so
  // the panel opens too when the user had closed it, except on a narrow
  // screen, where it would cover the reply being written.
  const writes = useRef<{ threadId: string | undefined; keys: Set<string> }>({ threadId: undefined, keys: new Set() });
  const writtenFiles = tc.chat.writtenFiles;
  const chatThread = tc.chat.threadId;
  useEffect(() => {
    const prev = writes.current;
    writes.current = { threadId: chatThread, keys: writeKeys(writtenFiles) };
    const sameThread = prev.threadId === chatThread || prev.threadId === undefined;
    if (sameThread && newWrites(prev.keys, writtenFiles).length > 0 && !narrow()) setPanelOpen(true);
  }, [chatThread, writtenFiles]);
  // A plan is something to show too: the panel (on Todos) opens with it.
  const hasPlan = tc.chat.todos.length > 0;
  useEffect(() => {
    if (hasPlan && !narrow()) setPanelOpen(true);
  }, [hasPlan]);

  // Keyboard shortcuts (shell/Shortcuts.tsx lists them in its help sheet).
  const chatRef = useRef<ChatHandle>(null);
  const [helpOpen, setHelpOpen] = useState(false);
  useShortcuts({
    focusComposer: () => chatRef.current?.focusComposer(),
    newThread: () => {
      if (!agentId) return false;
      navigate({ agentId }, true);
      // The box of the new thread takes the first words.
      requestAnimationFrame(() => chatRef.current?.focusComposer());
    },
    searchThreads: () => {
      // The search box shows once the agent has threads; on a narrow screen the sidebar opens for it.
      const search = document.querySelector<HTMLInputElement>('[data-testid="thread-search"]');
      if (!search) return false;
      setSidebarOpen(true);
      requestAnimationFrame(() => search.focus());
    },
    scrollToBottom: () => chatRef.current?.scrollToBottom() ?? false,
    help: () => setHelpOpen(true),
  });

  const onAgentChanged = useCallback((a: Agent) => setAgents((as) => as.map((x) => (x.agent_id === a.agent_id ? { ...x, ...a } : x))), []);

  const panelContext: PanelContext | undefined = agentId
    ? {
        client,
        agentId,
        ...(route.threadId ? { threadId: route.threadId } : {}),
        writtenFiles: tc.chat.writtenFiles,
        todos: tc.chat.todos,
        running,
        onError,
      }
    : undefined;

  return (
    <Tooltip.Provider delayDuration={400}>
    <div className={`app${sidebarOpen ? " sidebar-open" : ""}${panelOpen ? " panel-open" : ""}`}>
      <header className="topbar">
        <IconButton label={sidebarOpen ? "Hide agents and threads" : "Show agents and threads"} aria-expanded={sidebarOpen} data-testid="sidebar-toggle" onClick={() => setSidebarOpen(!sidebarOpen)}>
          <PanelLeft size={18} aria-hidden="true" />
        </IconButton>
        <strong className="brand">Wick</strong>
        <span className="agent-head grow">
          <span className="ellipsis" data-testid="agent-name">{agent ? agent.name || agent.agent_id : ""}</span>
          {signedIn && agent && <SettingsDialog client={client} agent={agent} running={running} onChanged={onAgentChanged} onDelete={deleteAgent} onError={onError} />}
        </span>
        <ConnectionState state={conn} />
        <ShortcutsHelp open={helpOpen} onOpenChange={setHelpOpen} />
        <ThemeMenu theme={theme} onChange={setTheme} />
        <IconButton label={panelOpen ? "Hide the side panel" : "Show the side panel"} aria-expanded={panelOpen} data-testid="panel-toggle" onClick={() => setPanelOpen(!panelOpen)}>
          <PanelRight size={18} aria-hidden="true" />
        </IconButton>
      </header>
      <ErrorBanner errors={errors} onDismiss={() => setErrors([])} />
      <div className="layout">
        <nav className="sidebar" aria-label="Agents and threads">
          {signedIn && <AgentList agents={agents} selected={agentId} onSelect={(id) => navigate({ agentId: id })} onNew={() => setCreating(true)} />}
          {creating && <AgentForm client={client} onCreate={createAgent} onCancel={() => setCreating(false)} />}
          {signedIn && agentId && (
            <ThreadList
              threads={shownThreads}
              selected={route.threadId}
              titles={shownTitles}
              statuses={statuses}
              deleting={delayedDelete.pending}
              onSelect={(id) => navigate({ agentId, threadId: id }, true)}
              onNew={() => navigate({ agentId }, true)}
              onDelete={deleteThread}
              onUndoDelete={delayedDelete.undo}
              onRename={renameThread}
              onSearch={pages.search}
              {...(pages.hasMore ? { onMore: pages.loadMore } : {})}
              loadingMore={pages.loading}
              searched={pages.loadedFor?.query ?? ""}
            />
          )}
        </nav>
        {agentMissing || threadMissing ? (
          <NotFound
            what={agentMissing ? "agent" : "thread"}
            id={(agentMissing ? route.agentId : route.threadId) ?? ""}
            action={agentMissing ? "Open the default agent" : "Start a new thread"}
            onAction={() => navigate(agentMissing ? {} : { ...(agentId ? { agentId } : {}) })}
          />
        ) : (
          <AttachContext.Provider value={attachTarget}>
          <Chat
            ref={chatRef}
            chat={tc.chat}
            agent={agent}
            loading={tc.loading}
            running={running}
            disabled={!agentId || needToken}
            placeholder={agent ? `Ask ${agent.name || agent.agent_id} anything.` : "Choose or create an agent to start."}
            onSend={tc.send}
            onStop={tc.stop}
            onCancel={tc.cancel}
            onContinue={tc.continueRun}
            onDecide={tc.decide}
            onError={onError}
          />
          </AttachContext.Provider>
        )}
        <div className="panel" style={{ "--panel-width": `${panelWidth}px` } as CSSProperties} data-testid="side-panel">
          {panelOpen && <ResizeHandle width={panelWidth} onResize={setPanelWidth} />}
          {panelContext && <SidePanel {...panelContext} onClose={() => setPanelOpen(false)} />}
        </div>
      </div>
      {needToken && (
        <TokenDialog reason={tokenPrompt || undefined} onSubmit={tryToken} />
      )}
    </div>
    </Tooltip.Provider>
  );
}

/** refusedText says that the gateway refused the token, and its words. */
function refusedText(err: unknown): string {
  return `The token was refused: ${errorText(err)}`;
}
