import { describe, expect, test } from "vitest";

import { Wick } from "../src/index.js";
import { client, failure, url, userMessage } from "./helpers.js";

const alice = client("alice");
const bob = client("bob");

describe("401", () => {
  const cases = [
    { name: "no token", wick: new Wick({ baseUrl: url }), message: /missing bearer token/ },
    { name: "a wrong token", wick: new Wick({ baseUrl: url, token: "not-a-token" }), message: /invalid or unknown bearer token/ },
    { name: "a token function's wrong token", wick: new Wick({ baseUrl: url, token: async () => "not-a-token" }), message: /invalid/ },
  ];
  for (const c of cases) {
    test(`${c.name}: the generated client and the stream throw UNAUTHENTICATED`, async () => {
      for (const call of [() => c.wick.api.GET("/agents"), () => c.wick.stream("default", userMessage("hi")).toArray()]) {
        const err = await failure(call());
        expect(err).toMatchObject({ status: 401, code: "UNAUTHENTICATED", grpcCode: 16 });
        expect(err.message).toMatch(c.message);
      }
    });
  }
});

describe("404", () => {
  test("bob cannot read alice's thread or re-join her run", async () => {
    const s = alice.stream("default", userMessage("a private note"));
    await s.toArray();
    const read = await failure(bob.api.GET("/threads/{thread_id}", { params: { path: { thread_id: s.threadId! } } }));
    expect(read).toMatchObject({ status: 404, code: "NOT_FOUND", grpcCode: 5 });
    expect(read.traceId).toMatch(/^[0-9a-f]{32}$/);
    const join = await failure(bob.join(s.runId!).toArray());
    expect(join).toMatchObject({ status: 404, code: "NOT_FOUND" });
    // Alice can.
    const { data } = await alice.api.GET("/threads/{thread_id}", { params: { path: { thread_id: s.threadId! } } });
    expect(data?.thread?.messages?.length).toBeGreaterThan(0);
  });

  test("an unknown agent", async () => {
    const err = await failure(alice.stream("no-such-agent", userMessage("hi")).toArray());
    expect(err).toMatchObject({ status: 404, code: "NOT_FOUND", message: "agent no-such-agent not found" });
  });
});

test("a run with no input is INVALID_ARGUMENT", async () => {
  const err = await failure(alice.stream("default", { messages: [] }).toArray());
  expect(err).toMatchObject({ status: 400, code: "INVALID_ARGUMENT" });
});
