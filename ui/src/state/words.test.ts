import { describe, expect, it } from "vitest";

import { counted, dateGroup, relativeTime } from "./words";

// Local times, so that the calendar-day rules are what is tested whatever the machine's zone.
const now = new Date(2026, 10, 28, 15, 0, 0);
const at = (days: number, h = 0, m = 0) => new Date(2026, 10, 28 - days, h, m, 0);

describe("counted", () => {
  it.each([
    [0, "0 chunks"],
    [1, "1 chunk"],
    [2, "2 chunks"],
    [1234, "1,234 chunks"],
    [undefined, "0 chunks"],
  ])("%s → %s", (n, want) => {
    expect(counted(n, "chunk", "chunks")).toBe(want);
  });
});

describe("relativeTime", () => {
  it.each([
    [new Date(now.getTime() - 20_000), "just now"],
    [new Date(now.getTime() + 5_000), "just now"],
    [at(0, 14, 55), "5 minutes ago"],
    [at(0, 14, 0), "1 hour ago"],
    [at(0, 0, 5), "14 hours ago"],
    [at(1, 23, 30), "yesterday"],
    [at(3, 12), "3 days ago"],
    [at(9, 12), "Nov 19"],
    [new Date(2025, 0, 2, 9), "Jan 2, 2025"],
  ])("%s → %s", (when, want) => {
    expect(relativeTime(when, now)).toBe(want);
  });
});

describe("dateGroup", () => {
  it.each([
    [at(0, 0, 1), "Today"],
    [new Date(now.getTime() + 60_000), "Today"],
    [at(1, 23, 59), "Yesterday"],
    [at(1, 0, 0), "Yesterday"],
    [at(2, 12), "Previous 7 days"],
    [at(7, 12), "Previous 7 days"],
    [at(8, 12), "Older"],
  ])("%s → %s", (when, want) => {
    expect(dateGroup(when, now)).toBe(want);
  });
});
