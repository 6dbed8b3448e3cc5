// What survives a reload in this tab (sessionStorage): the token and the
// last run stopped gracefully, which Continue picks up after a reload. What
// outlives the tab (localStorage): the agent and thread opened last,
// reopened by a page opened without either; the runs followed are kept for
// every tab (activeRuns.ts).

const TOKEN_KEY = "wick.token";
const STOPPED_KEY = "wick.stoppedRun";
const LAST_OPENED_KEY = "wick.lastOpened";

/** The agent and thread open last. */
export interface LastOpened {
  agentId: string;
  threadId?: string;
}

export function loadLastOpened(): LastOpened | undefined {
  try {
    const v = JSON.parse(localStorage.getItem(LAST_OPENED_KEY) ?? "null") as { agentId?: unknown; threadId?: unknown } | null;
    if (typeof v?.agentId !== "string" || v.agentId === "") return undefined;
    return typeof v.threadId === "string" && v.threadId !== "" ? { agentId: v.agentId, threadId: v.threadId } : { agentId: v.agentId };
  } catch {
    return undefined;
  }
}

export function saveLastOpened(last: LastOpened): void {
  try {
    localStorage.setItem(LAST_OPENED_KEY, JSON.stringify(last));
  } catch {
    // Storage is off or full: the next page opens the default agent.
  }
}

export function loadToken(): string {
  return read(TOKEN_KEY) ?? "";
}

export function saveToken(token: string): void {
  write(TOKEN_KEY, token);
}

/** saveStoppedRun remembers the thread's run that was stopped gracefully. */
export function saveStoppedRun(threadId: string, runId: string): void {
  write(STOPPED_KEY, JSON.stringify({ threadId, runId }));
}

/** loadStoppedRun is the stopped run saved for the thread, if any. */
export function loadStoppedRun(threadId: string): string | undefined {
  try {
    const v = JSON.parse(read(STOPPED_KEY) ?? "null") as { threadId?: unknown; runId?: unknown } | null;
    return v?.threadId === threadId && typeof v.runId === "string" ? v.runId : undefined;
  } catch {
    return undefined;
  }
}

export function clearStoppedRun(): void {
  try {
    sessionStorage.removeItem(STOPPED_KEY);
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
