// What survives a reload in this tab (sessionStorage): the token, and the
// run being followed with the chat as rendered up to its last event, so
// that the page re-joins the run right after that event: nothing missing,
// nothing twice.
import type { ChatState } from "./chat";

const TOKEN_KEY = "wick.token";
const RUN_KEY = "wick.activeRun";

export interface ActiveRun {
  agentId: string;
  threadId: string;
  runId: string;
  /** The last event the saved chat includes. */
  lastEventId: string;
  /** The chat as rendered up to lastEventId; absent when it did not fit. */
  chat?: ChatState;
}

export function loadToken(): string {
  return read(TOKEN_KEY) ?? "";
}

export function saveToken(token: string): void {
  write(TOKEN_KEY, token);
}

export function loadActiveRun(): ActiveRun | undefined {
  const raw = read(RUN_KEY);
  if (!raw) return undefined;
  try {
    const v = JSON.parse(raw) as ActiveRun;
    return typeof v.runId === "string" && typeof v.threadId === "string" && typeof v.agentId === "string" ? v : undefined;
  } catch {
    return undefined;
  }
}

/** saveActiveRun keeps run; without room for the chat it keeps the ids alone (a re-join then starts at the run's first event). */
export function saveActiveRun(run: ActiveRun): void {
  if (write(RUN_KEY, JSON.stringify(run))) return;
  const { chat: _, ...ids } = run;
  write(RUN_KEY, JSON.stringify({ ...ids, lastEventId: "" }));
}

export function clearActiveRun(runId?: string): void {
  if (runId !== undefined && loadActiveRun()?.runId !== runId) return;
  try {
    sessionStorage.removeItem(RUN_KEY);
  } catch {
    // Storage is off: nothing was kept.
  }
}

function read(key: string): string | undefined {
  try {
    return sessionStorage.getItem(key) ?? undefined;
  } catch {
    return undefined;
  }
}

function write(key: string, value: string): boolean {
  try {
    sessionStorage.setItem(key, value);
    return true;
  } catch {
    return false;
  }
}
