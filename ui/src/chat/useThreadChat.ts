// useThreadChat follows the open thread: it loads its history, starts runs,
// applies their events once per animation frame (a token each costs no
// render of its own), persists the run followed so that a reload, or another
// tab that opens the thread, re-joins it after the last event rendered
// (state/activeRuns.ts); a run another browser started is joined from its
// first event (GetThread names it), and cancels, stops (after the step in
// flight) and continues runs, approves, rejects and answers questions. A run
// it starts that runs commands has the files they made offered to the Canvas
// when it is done (panels/snapshot.ts).
import { ConnectionLost, WickError, type components, type RunStream, type Wick, type WickEvent } from "@wick-agent/sdk";
import { useCallback, useEffect, useRef, useState } from "react";

import { isAbort, type ConnState } from "../api/client";
import { changedFiles, snapshotWorkspace, type Snapshot } from "../panels/snapshot";
import {
  addFoundFiles,
  addUserMessage,
  applyEvent,
  emptyChat,
  endRunLocally,
  fromThreadState,
  markStopping,
  ranCommands,
  removeItem,
  resolveInterrupts,
  stoppedRunId,
  withStoppedRun,
  type ChatState,
  type RunStatus,
} from "../state/chat";
import { clearActiveRun, loadActiveRun, saveActiveRun } from "../state/activeRuns";
import { clearStoppedRun, loadStoppedRun, saveStoppedRun } from "../state/session";

type ThreadState = components["schemas"]["wick.agent.v1.AgentState"];
type ThreadSummary = components["schemas"]["wick.agent.v1.ThreadSummary"];

/** activeRunOf is the run going on the thread (GetThread's summary), which any client may join. */
function activeRunOf(summary: ThreadSummary | undefined): string | undefined {
  const going = summary?.status === "running" || summary?.status === "interrupted";
  return going && summary?.active_run_id ? summary.active_run_id : undefined;
}

/**
 * beforeRun is the thread without what the run going on it saved: the
 * messages after its last user message (the run's input), which its events
 * show again. A run that continues a stopped one has no input of its own:
 * the replies of the run before it are then shown by these events alone.
 */
function beforeRun(thread: ThreadState): ThreadState {
  const msgs = thread.messages ?? [];
  const last = msgs.findLastIndex((m) => m.role === "user");
  return { ...thread, messages: msgs.slice(0, last + 1) };
}

/** How often at most the followed run's chat is saved for a reload. */
const PERSIST_EVERY_MS = 250;
/** While the tab is hidden animation frames stop; events are applied at this pace instead. */
const HIDDEN_FLUSH_MS = 200;

export interface Decision {
  tool_call_id: string;
  /** "answer" answers a question (ask_user); message is the answer. */
  action: "approve" | "reject" | "edit" | "answer";
  args?: Record<string, unknown>;
  message?: string;
  /** Remember the decision on the thread: later calls of the tool are decided the same without asking. */
  always?: boolean;
}

export interface ThreadChat {
  chat: ChatState;
  /** The history is loading. */
  loading: boolean;
  /**
   * send starts a run with the message. It settles once the run started
   * (its first event), or rejects with the server's refusal (a message over
   * the body limit, a busy thread): the message then leaves the chat, which
   * shows no run.
   */
  send(text: string): Promise<void>;
  /** cancel ends the run at once; tool calls in flight are cut short. */
  cancel(): void;
  /** stop ends the run once its step in flight is done and saved. */
  stop(): void;
  /** continueRun starts a run that goes on from the stopped one. */
  continueRun(): void;
  decide(runId: string, decisions: Decision[]): Promise<void>;
}

export interface ThreadChatOptions {
  client: Wick | undefined;
  agentId: string | undefined;
  threadId: string | undefined;
  onError(err: unknown): void;
  /** A new thread got its id from its first run. */
  onThreadStarted(agentId: string, threadId: string): void;
  onConn(s: ConnState): void;
}

/** The workspace as it was when this page started a run; runId is learnt from the run's first events. */
interface RunSnapshot {
  gen: number;
  client: Wick;
  agentId: string;
  runId?: string;
  before: Promise<Snapshot | undefined>;
}

/** What a run this page asks for tells its asker: refused reports whether err refused the run (and handles it). */
interface RunStart {
  started(): void;
  refused(err: unknown): boolean;
}

/** Statuses of a run that has not ended. */
const GOING: ReadonlySet<RunStatus | undefined> = new Set(["running", "interrupted", undefined]);

// The snapshot is a convenience: a workspace that cannot be listed (no
// sandbox yet, a backend that is down) only means that no files are found;
// the Files panel reports the error when it is opened.
function quietSnapshot(client: Wick, agentId: string): Promise<Snapshot | undefined> {
  return snapshotWorkspace(client, agentId).catch(() => undefined);
}

export function useThreadChat(o: ThreadChatOptions): ThreadChat {
  const [chat, setChatState] = useState<ChatState>(emptyChat);
  const [loading, setLoading] = useState(false);
  const chatRef = useRef<ChatState>(emptyChat);
  const opts = useRef(o);
  opts.current = o;
  // The generation of the open thread: a stream of an earlier one stops
  // applying its events (the run itself goes on: it is a background run).
  const gen = useRef(0);
  // Events with when they arrived: a tool's duration is measured from
  // arrival, not from the frame that applied it.
  const pending = useRef<{ ev: WickEvent; at: number }[]>([]);
  const scheduled = useRef(false);
  const lastPersist = useRef(0);
  const persistTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const snapshot = useRef<RunSnapshot | undefined>(undefined);

  const setChat = useCallback((next: ChatState) => {
    chatRef.current = next;
    setChatState(next);
  }, []);

  const persist = useCallback(() => {
    persistTimer.current = undefined;
    lastPersist.current = performance.now();
    const c = chatRef.current;
    const agentId = opts.current.agentId;
    const runId = c.activeRunId;
    const run = runId ? c.runs[runId] : undefined;
    if (!agentId || !c.threadId || !run) return;
    saveActiveRun({ agentId, threadId: c.threadId, runId: run.runId, lastEventId: run.lastEventId, chat: c });
  }, []);

  const schedulePersist = useCallback(() => {
    if (persistTimer.current !== undefined) return;
    const wait = Math.max(0, PERSIST_EVERY_MS - (performance.now() - lastPersist.current));
    persistTimer.current = setTimeout(persist, wait);
  }, [persist]);

  // offerFoundFiles compares the workspace after a run that ran commands
  // with the snapshot from its start and records what changed.
  const offerFoundFiles = useCallback(
    async (snap: RunSnapshot, runId: string) => {
      const before = await snap.before;
      if (!before) return;
      const after = await quietSnapshot(snap.client, snap.agentId);
      if (!after || gen.current !== snap.gen) return;
      const found = changedFiles(before, after);
      if (found.length > 0) setChat(addFoundFiles(chatRef.current, runId, found));
    },
    [setChat],
  );

  // watchSnapshot follows the run the snapshot was taken for to its end.
  const watchSnapshot = useCallback(
    (before: ChatState, next: ChatState) => {
      const snap = snapshot.current;
      if (!snap) return;
      if (snap.gen !== gen.current) {
        snapshot.current = undefined;
        return;
      }
      // A short run may start and end within one batch of events.
      snap.runId ??= next.activeRunId ?? Object.keys(next.runs).find((id) => !before.runs[id]);
      const status = snap.runId ? next.runs[snap.runId]?.status : undefined;
      if (!snap.runId || GOING.has(status)) return;
      snapshot.current = undefined;
      if ((status === "done" || status === "stopped") && ranCommands(next, snap.runId)) void offerFoundFiles(snap, snap.runId);
    },
    [offerFoundFiles],
  );

  const flush = useCallback(() => {
    scheduled.current = false;
    const evs = pending.current.splice(0);
    if (evs.length === 0) return;
    const before = chatRef.current;
    let next = before;
    for (const { ev, at } of evs) next = applyEvent(next, ev, at);
    setChat(next);
    watchSnapshot(before, next);
    if (!before.threadId && next.threadId && opts.current.agentId) opts.current.onThreadStarted(opts.current.agentId, next.threadId);
    if (next.activeRunId) {
      schedulePersist();
    } else {
      for (const id of Object.keys(next.runs)) if (next.threadId && before.runs[id]?.status !== next.runs[id]?.status) clearActiveRun(next.threadId, id);
    }
    const stopped = stoppedRunId(next);
    if (stopped && stopped !== stoppedRunId(before) && next.threadId) saveStoppedRun(next.threadId, stopped);
  }, [schedulePersist, setChat, watchSnapshot]);

  const enqueue = useCallback(
    (ev: WickEvent) => {
      pending.current.push({ ev, at: Date.now() });
      if (scheduled.current) return;
      scheduled.current = true;
      if (document.hidden) setTimeout(flush, HIDDEN_FLUSH_MS);
      else requestAnimationFrame(flush);
    },
    [flush],
  );

  // follow applies a run's events while the thread stays open. start, for
  // a run this page asks for, hears whether the run started or was refused.
  const follow = useCallback(
    async (stream: RunStream, myGen: number, start?: RunStart) => {
      try {
        for await (const ev of stream) {
          start?.started();
          if (gen.current !== myGen) return;
          enqueue(ev);
        }
        start?.started();
      } catch (err) {
        if (start?.refused(err)) return;
        if (gen.current !== myGen || isAbort(err)) return;
        flush();
        const runId = stream.runId ?? chatRef.current.activeRunId;
        if (err instanceof ConnectionLost && runId) {
          // The run goes on without this page: re-join when the network is back.
          opts.current.onConn("offline");
          opts.current.onError(err);
          const again = () => {
            if (gen.current !== myGen) return;
            const r = chatRef.current.runs[runId];
            if (!r || !opts.current.client) return;
            void follow(opts.current.client.join(runId, { after: r.lastEventId }), myGen);
          };
          window.addEventListener("online", again, { once: true });
          return;
        }
        opts.current.onError(err);
        if (runId) {
          setChat(endRunLocally(chatRef.current, runId, err instanceof Error ? err.message : String(err), Date.now()));
          if (chatRef.current.threadId) clearActiveRun(chatRef.current.threadId, runId);
        }
      }
    },
    [enqueue, flush, setChat],
  );

  // Opening a thread: its history, or the saved chat of its run going on.
  const { client, agentId, threadId } = o;
  useEffect(() => {
    if (!client || !agentId) return;
    if (threadId && chatRef.current.threadId === threadId) return; // the run that created it goes on
    const myGen = ++gen.current;
    pending.current = [];
    if (!threadId) {
      setChat(emptyChat);
      return;
    }
    const ctrl = new AbortController();
    const saved = loadActiveRun(threadId);
    if (saved && saved.agentId === agentId && saved.chat) {
      setChat(saved.chat);
      void follow(client.join(saved.runId, { after: saved.lastEventId, signal: ctrl.signal }), myGen);
      return () => ctrl.abort();
    }
    setChat({ ...emptyChat, threadId });
    setLoading(true);
    client.api
      .GET("/threads/{thread_id}", { params: { path: { thread_id: threadId } }, signal: ctrl.signal })
      .then(({ data }) => {
        if (gen.current !== myGen) return;
        const mine = saved && saved.agentId === agentId;
        // A run this browser did not start (another device's): its events
        // from the first are shown after the thread as it was before them.
        const theirs = mine ? undefined : activeRunOf(data?.summary);
        let c = fromThreadState(theirs ? beforeRun(data?.thread ?? {}) : (data?.thread ?? {}));
        c = { ...c, threadId };
        const stopped = loadStoppedRun(threadId);
        if (stopped && !saved) c = withStoppedRun(c, stopped);
        setChat(c);
        if (mine) {
          // The run's chat did not fit in storage: follow the run from its start.
          void follow(client.join(saved.runId, { after: saved.lastEventId, signal: ctrl.signal }), myGen);
        } else if (theirs) {
          void follow(client.join(theirs, { signal: ctrl.signal }), myGen);
        }
      })
      .catch((err: unknown) => {
        if (!isAbort(err)) opts.current.onError(err);
      })
      .finally(() => {
        if (gen.current === myGen) setLoading(false);
      });
    return () => ctrl.abort();
  }, [client, agentId, threadId, follow, setChat]);

  // The page may close at any moment: save what it rendered.
  useEffect(() => {
    const onHide = () => {
      flush();
      persist();
    };
    window.addEventListener("pagehide", onHide);
    return () => window.removeEventListener("pagehide", onHide);
  }, [flush, persist]);

  const send = useCallback(
    (text: string): Promise<void> => {
      const { client, agentId, onError } = opts.current;
      const c = chatRef.current;
      if (!client || !agentId || text.trim() === "") return Promise.resolve();
      if (c.activeRunId) return Promise.resolve();
      clearStoppedRun();
      const withMessage = addUserMessage(c, text);
      const userKey = withMessage.items[withMessage.items.length - 1]!.key;
      setChat(withMessage);
      const myGen = gen.current;
      // Taken as the run starts: its first model call comes before any
      // command, so the listing is normally done before a command writes.
      snapshot.current = { gen: myGen, client, agentId, before: quietSnapshot(client, agentId) };
      // A background run outlives this page, so that a reload re-joins it;
      // Stop cancels it explicitly.
      const stream = client.stream(agentId, {
        messages: [{ role: "user", content: text }],
        ...(c.threadId ? { thread_id: c.threadId } : {}),
        background: true,
      });
      return new Promise<void>((resolve, reject) => {
        let settled = false;
        const start: RunStart = {
          started: () => {
            settled = true;
            resolve();
          },
          refused: (err) => {
            // Refused before its first event: no run exists, and the message was not taken.
            if (settled || !(err instanceof WickError)) return false;
            settled = true;
            snapshot.current = undefined;
            setChat(removeItem(chatRef.current, userKey));
            reject(err);
            return true;
          },
        };
        follow(stream, myGen, start)
          .catch(onError)
          .finally(() => start.started());
      });
    },
    [follow, setChat],
  );

  const cancel = useCallback(() => {
    const { client, onError } = opts.current;
    const runId = chatRef.current.activeRunId;
    if (!client || !runId) return;
    // The run's stream then ends with its "cancelled" error event.
    client.cancelRun(runId).catch(onError);
  }, []);

  const stop = useCallback(() => {
    const { client, onError } = opts.current;
    const runId = chatRef.current.activeRunId;
    if (!client || !runId) return;
    // The run's stream then ends with "done", stop_reason "stopped".
    setChat(markStopping(chatRef.current, runId));
    client.stopRun(runId).catch(onError);
  }, [setChat]);

  const continueRun = useCallback(() => {
    const { client, onError } = opts.current;
    const runId = stoppedRunId(chatRef.current);
    if (!client || !runId) return;
    const myGen = gen.current;
    clearStoppedRun();
    const agentId = opts.current.agentId;
    if (agentId) snapshot.current = { gen: myGen, client, agentId, before: quietSnapshot(client, agentId) };
    client
      .continueRun(runId)
      .then((data) => {
        const next = data?.run?.run_id;
        if (next && gen.current === myGen) return follow(client.join(next), myGen);
      })
      .catch(onError);
  }, [follow]);

  const decide = useCallback(
    async (runId: string, decisions: Decision[]) => {
      const { client } = opts.current;
      if (!client) return;
      await client.api.POST("/runs/{run_id}/resume", { params: { path: { run_id: runId } }, body: { decisions: decisions.map(toWire) } });
      setChat(resolveInterrupts(chatRef.current, runId));
    },
    [setChat],
  );

  return { chat, loading, send, cancel, stop, continueRun, decide };
}

// toWire is a decision as the generated types spell ResumeRun's: its args
// are any JSON object, which they type as a record of never.
function toWire(d: Decision) {
  const { args, ...rest } = d;
  return args ? { ...rest, args: args as Record<string, never> } : rest;
}
