import { afterEach, describe, expect, it } from "vitest";

import { ACTIVE_RUN_MAX_AGE_MS, clearActiveRun, loadActiveRun, saveActiveRun } from "./activeRuns";
import { emptyChat } from "./chat";

afterEach(() => localStorage.clear());

describe("active runs", () => {
  const run = { agentId: "a", threadId: "th-1", runId: "r1", lastEventId: "1-3", chat: { ...emptyChat, threadId: "th-1" } };

  it("keeps one run per thread for every tab (localStorage), until it is cleared", () => {
    saveActiveRun(run, 1000);
    saveActiveRun({ ...run, threadId: "th-2", runId: "r2" }, 1000);
    expect(loadActiveRun("th-1", 2000)).toEqual({ ...run, savedAt: 1000 });
    expect(loadActiveRun("th-2", 2000)?.runId).toBe("r2");
    expect(loadActiveRun("th-3", 2000)).toBeUndefined();
    // Another run's end leaves it alone.
    clearActiveRun("th-1", "r0");
    expect(loadActiveRun("th-1", 2000)?.runId).toBe("r1");
    clearActiveRun("th-1", "r1");
    expect(loadActiveRun("th-1", 2000)).toBeUndefined();
    expect(loadActiveRun("th-2", 2000)?.runId).toBe("r2");
  });

  it("drops an entry saved too long ago", () => {
    saveActiveRun(run, 1000);
    expect(loadActiveRun("th-1", 1000 + ACTIVE_RUN_MAX_AGE_MS + 1)).toBeUndefined();
    expect(localStorage.length).toBe(0);
  });

  it("ignores what it cannot read", () => {
    localStorage.setItem("wick.run.th-1", "{not json");
    expect(loadActiveRun("th-1")).toBeUndefined();
    localStorage.setItem("wick.run.th-1", JSON.stringify({ ...run, threadId: "th-9" }));
    expect(loadActiveRun("th-1")).toBeUndefined();
  });
});
