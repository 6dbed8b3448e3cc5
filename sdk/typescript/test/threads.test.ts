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

  test("ListThreads reads pages, each thread once, searches titles, and refuses a bad page size or token", async () => {
    const agentId = `pages-${Math.random().toString(16).slice(2, 8)}`;
    await alice.api.POST("/agents", { body: { agent_id: agentId, name: "Pages", model: "script:hello" } });
    try {
      const made: string[] = [];
      for (const text of ["alpha one", "beta two", "gamma three", "Delta Four", "epsilon five"]) {
        const run = alice.stream(agentId, userMessage(text));
        await run.toArray();
        made.push(run.threadId!);
      }
      const seen: string[] = [];
      let token: string | undefined;
      let pages = 0;
      do {
        const { data } = await alice.api.GET("/threads", { params: { query: { agent_id: agentId, page_size: 2, ...(token ? { page_token: token } : {}) } } });
        pages++;
        expect(data?.threads?.length ?? 0).toBeLessThanOrEqual(2);
        seen.push(...(data?.threads ?? []).map((t) => t.thread_id ?? ""));
        token = data?.next_page_token || undefined;
      } while (token);
      expect(pages).toBe(3);
      expect(seen).toEqual([...made].reverse());

      const { data: found } = await alice.api.GET("/threads", { params: { query: { agent_id: agentId, query: "four DELTA" } } });
      expect(found?.threads?.map((t) => t.thread_id)).toEqual([made[3]]);

      const bad = async (query: Record<string, unknown>) => failure(alice.api.GET("/threads", { params: { query } }));
      expect(await bad({ page_size: 500 })).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("page_size:") });
      expect(await bad({ agent_id: agentId, page_token: "not-a-token" })).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("page_token:") });
    } finally {
      await alice.api.DELETE("/agents/{agent_id}", { params: { path: { agent_id: agentId } } }).catch(() => {});
    }
  });
});
