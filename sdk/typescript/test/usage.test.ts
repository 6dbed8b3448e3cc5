import { describe, expect, test } from "vitest";

import { client, userMessage } from "./helpers.js";

// bob is an operator of the test suite (-operator-users bob); alice is not.
const alice = client("alice");
const bob = client("bob");

describe("usage", () => {
  test("a user sees their own model calls; an operator sees everyone's", async () => {
    await alice.stream("default", userMessage("hi")).toArray();
    const own = await alice.getUsage();
    const today = new Date().toISOString().slice(0, 10);
    expect(own.to).toBe(today);
    expect(own.rows?.length).toBeGreaterThan(0);
    for (const r of own.rows ?? []) expect(r.user).toBe("alice");
    const mine = own.rows?.find((r) => r.day === today && r.agent_id === "default");
    expect(Number(mine?.calls)).toBeGreaterThan(0);
    expect(Number(mine?.input_tokens)).toBeGreaterThan(0);
    expect(Number(own.budget.tokens)).toBeGreaterThan(0);
    expect(own.budget.resets).toMatch(/^\d{4}-\d{2}-01$/);

    const all = await bob.getUsage({ all: true });
    expect(all.rows?.some((r) => r.user === "alice")).toBe(true);
    await expect(alice.getUsage({ all: true })).rejects.toMatchObject({ code: "PERMISSION_DENIED" });
  });

  test("a bad range is INVALID_ARGUMENT naming the field", async () => {
    await expect(alice.getUsage({ from: "2026-02-30" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("from:") });
    await expect(alice.getUsage({ from: "2026-03-02", to: "2026-03-01" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(alice.getUsage({ from: "2024-01-01", to: "2026-01-01" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("to:") });
  });
});
