import { describe, expect, test } from "vitest";

import { client, failure, userMessage } from "./helpers.js";

const alice = client("alice");
const bob = client("bob");

/** listed is alice's thread as ListThreads shows it. */
async function listed(threadId: string) {
  const { data } = await alice.api.GET("/threads", { params: { query: { agent_id: "default" } } });
  return data?.threads?.find((t) => t.thread_id === threadId);
}

describe("threads", () => {
  test("renameThread titles a thread until reset, through later runs, for its owner only", async () => {
    const first = alice.stream("default", userMessage("first message"));
    await first.toArray();
    const threadId = first.threadId!;
    const before = await listed(threadId);
    expect(before?.title).toBe("first message");

    const renamed = await alice.renameThread(threadId, "  Plans for Ünïcode ✓ ");
    expect(renamed).toMatchObject({ thread_id: threadId, title: "Plans for Ünïcode ✓" });

    await alice.stream("default", { ...userMessage("second message"), thread_id: threadId }).toArray();
    const after = await listed(threadId);
    expect(after?.title).toBe("Plans for Ünïcode ✓");
    expect(after?.message_count).toBeGreaterThan(before?.message_count ?? 0);

    expect(await failure(bob.renameThread(threadId, "bob's"))).toMatchObject({ code: "NOT_FOUND" });
    for (const bad of ["   ", "two\nlines", "x".repeat(201)]) {
      const err = await failure(alice.renameThread(threadId, bad));
      expect(err).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("title:") });
    }

    expect(await alice.renameThread(threadId, null)).toMatchObject({ title: "first message" });
  });
});
