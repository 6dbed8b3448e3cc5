// The runs this browser follows, one per thread, in localStorage: a run is
// a background run that outlives the tab which started it, so any tab of
// the browser that opens the thread (a reload, a new tab, the same tab
// after it was closed) re-joins it right after the last event rendered,
// with the chat as it was: nothing missing, nothing twice, and an approval
// the run waits for still on screen.
import type { ChatState } from "./chat";

const PREFIX = "wick.run.";
/**
 * An entry older than this is dropped unread: its run ended long ago with
 * no tab watching (a run waits for approval at most 30 minutes by default).
 */
export const ACTIVE_RUN_MAX_AGE_MS = 24 * 60 * 60 * 1000;

export interface ActiveRun {
  agentId: string;
  threadId: string;
  runId: string;
  /** The last event the saved chat includes. */
  lastEventId: string;
  /** The chat as rendered up to lastEventId; absent when it did not fit. */
  chat?: ChatState;
  /** Client clock (ms) of the save. */
  savedAt?: number;
}

/** loadActiveRun is the run followed on threadId, if any. */
export function loadActiveRun(threadId: string, now = Date.now()): ActiveRun | undefined {
  const raw = read(PREFIX + threadId);
  if (!raw) return undefined;
  try {
    const v = JSON.parse(raw) as ActiveRun;
    if (typeof v.runId !== "string" || v.threadId !== threadId || typeof v.agentId !== "string") return undefined;
    if (typeof v.savedAt === "number" && now - v.savedAt > ACTIVE_RUN_MAX_AGE_MS) {
      remove(PREFIX + threadId);
      return undefined;
    }
    return v;
  } catch {
    return undefined;
  }
}

/** saveActiveRun keeps run; without room for the chat it keeps the ids alone (a re-join then starts at the run's first event). */
export function saveActiveRun(run: ActiveRun, now = Date.now()): void {
  const key = PREFIX + run.threadId;
  if (write(key, JSON.stringify({ ...run, savedAt: now }))) return;
  const { chat: _, ...ids } = run;
  write(key, JSON.stringify({ ...ids, lastEventId: "", savedAt: now }));
}

/** clearActiveRun forgets the run followed on threadId, when it is runId. */
export function clearActiveRun(threadId: string, runId: string): void {
  const raw = read(PREFIX + threadId);
  if (!raw) return;
  try {
    if ((JSON.parse(raw) as Partial<ActiveRun>).runId !== runId) return;
  } catch {
    // Unreadable: nothing to keep.
  }
  remove(PREFIX + threadId);
}

function read(key: string): string | undefined {
  try {
    return localStorage.getItem(key) ?? undefined;
  } catch {
    return undefined;
  }
}

function write(key: string, value: string): boolean {
  try {
    localStorage.setItem(key, value);
    return true;
  } catch {
    return false;
  }
}

function remove(key: string): void {
  try {
    localStorage.removeItem(key);
  } catch {
    // Storage is off: nothing was kept.
  }
}
