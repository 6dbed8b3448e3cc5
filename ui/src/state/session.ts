// What survives a reload in this tab (sessionStorage): the token and the
// last run stopped gracefully, which Continue picks up after a reload. The
// runs followed are kept for every tab (activeRuns.ts).

const TOKEN_KEY = "wick.token";
const STOPPED_KEY = "wick.stoppedRun";

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
