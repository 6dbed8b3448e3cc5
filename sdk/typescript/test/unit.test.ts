// The parts that need no server: error bodies, close codes, event typing.
import { describe, expect, test } from "vitest";

import { RunStream, WickError } from "../src/index.js";
import { toEvent } from "../src/events.js";
import { messages } from "../src/sse.js";
import { closeError } from "../src/terminal.js";

describe("WickError.fromResponse", () => {
  const cases = [
    {
      name: "the gateway's body",
      res: new Response('{"code":5,"status":"NOT_FOUND","message":"thread t not found","trace_id":"abc"}', { status: 404 }),
      want: { status: 404, code: "NOT_FOUND", grpcCode: 5, message: "thread t not found", traceId: "abc" },
    },
    {
      name: "a proxy's HTML page",
      res: new Response("<html>bad gateway</html>", { status: 502, statusText: "Bad Gateway" }),
      want: { status: 502, code: "UNAVAILABLE", grpcCode: 14, message: "<html>bad gateway</html>", traceId: undefined },
    },
    {
      name: "an empty body",
      res: new Response("", { status: 413, statusText: "Payload Too Large" }),
      want: { status: 413, code: "RESOURCE_EXHAUSTED", grpcCode: 8, message: "Payload Too Large" },
    },
    {
      name: "JSON that is not an error body",
      res: new Response('{"error":"nope"}', { status: 500 }),
      want: { status: 500, code: "UNKNOWN", grpcCode: 2, message: '{"error":"nope"}' },
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const err = await WickError.fromResponse(c.res);
      expect(err).toBeInstanceOf(Error);
      expect(err).toMatchObject({ name: "WickError", ...c.want });
    });
  }
});

describe("terminal close codes", () => {
  const cases = [
    { code: 4005, reason: "agent x not found", want: { status: 404, code: "NOT_FOUND", message: "agent x not found" } },
    { code: 4014, reason: "", want: { status: 503, code: "UNAVAILABLE", message: "terminal session failed" } },
    { code: 1008, reason: "bad frame", want: { status: 400, code: "INVALID_ARGUMENT", message: "bad frame" } },
    { code: 1011, reason: "internal error", want: { status: 500, code: "INTERNAL" } },
    { code: 1006, reason: "", want: { status: 503, code: "UNAVAILABLE" } },
  ];
  for (const c of cases) {
    test(`${c.code}`, () => {
      expect(closeError(c.code, c.reason)).toMatchObject(c.want);
    });
  }
});

describe("toEvent", () => {
  test("a known kind keeps its kind and data", () => {
    const ev = toEvent({ event: "on_chat_model_stream", run_id: "r", data: { delta: "hi" }, id: "2-0" }, "on_chat_model_stream", "2-0");
    expect(ev).toEqual({ id: "2-0", run_id: "r", event: "on_chat_model_stream", data: { delta: "hi" } });
  });
  test("an unknown kind is passed through under kind", () => {
    const ev = toEvent({ event: "on_new_thing", data: { x: 1 }, thread_id: "t" }, "on_new_thing", "9-0");
    expect(ev).toEqual({ id: "9-0", thread_id: "t", event: "unknown", kind: "on_new_thing", data: { x: 1 } });
  });
  test("an event with no data has empty data", () => {
    expect(toEvent({ event: "done" }, "done", "3-0")).toEqual({ id: "3-0", event: "done", data: {} });
  });
});

// body is a response body that delivers chunks as they are given.
function body(...chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const chunk of chunks) c.enqueue(enc.encode(chunk));
      c.close();
    },
  });
}

describe("messages", () => {
  test("frames split anywhere, heartbeats skipped, an event cut off by the end dropped", async () => {
    const got = [];
    const stream = body(
      "id: 1-0\nevent: on_run_start\nda",
      'ta: {"a":1}\n\n: ping\n\nid: 2-0\r\nevent: done\r\ndata: {}\r\n\r\n',
      "id: 3-0\nevent: on_chat_model_stream\ndata: {}\n",
    );
    for await (const m of messages(stream, 1 << 10)) got.push(m);
    expect(got).toEqual([
      { id: "1-0", event: "on_run_start", data: '{"a":1}' },
      { id: "2-0", event: "done", data: "{}" },
    ]);
  });

  test("an event over the limit fails the stream", async () => {
    // The limit bounds what is held of an event still arriving.
    const stream = body(`id: 1-0\ndata: ${"x".repeat(100)}`, "\n\n");
    await expect(
      (async () => {
        for await (const _ of messages(stream, 50)) {
          // nothing
        }
      })(),
    ).rejects.toThrow(/longer than the limit of 50/);
  });
});

describe("RunStream", () => {
  const start = 'id: 1-0\nevent: on_run_start\ndata: {"event":"on_run_start","run_id":"r1","data":{"run_id":"r1"},"id":"1-0"}\n\n';
  const done = 'id: 2-0\nevent: done\ndata: {"event":"done","run_id":"r1","data":{"stop_reason":"completed"},"id":"2-0"}\n\n';
  const fast = { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 1 };

  function transport(join: (after: string) => Promise<Response>) {
    const calls: string[] = [];
    return {
      calls,
      join: (_runId: string, after: string) => {
        calls.push(after);
        return join(after);
      },
      cancel: async () => {
        calls.push("cancel");
      },
    };
  }

  test("the gateway's error frame is thrown as a WickError, and the run is cancelled", async () => {
    const t = transport(() => Promise.reject(new Error("no re-join expected")));
    const frame = 'event: error\ndata: {"code":14,"status":"UNAVAILABLE","message":"service unavailable; try again","trace_id":"t1"}\n\n';
    const s = new RunStream(t, {
      open: async () => new Response(body(start, frame)),
      reconnect: fast,
      cancelOnAbandon: true,
      maxEventChars: 1 << 10,
    });
    const seen: string[] = [];
    const err = await (async () => {
      for await (const ev of s) seen.push(ev.event);
    })().catch((e: unknown) => e);
    expect(seen).toEqual(["on_run_start"]);
    expect(err).toBeInstanceOf(WickError);
    expect(err).toMatchObject({ status: 503, code: "UNAVAILABLE", traceId: "t1" });
    expect(t.calls).toEqual(["cancel"]);
  });

  test("re-joins after the last event, and gives up after maxAttempts failures in a row", async () => {
    let n = 0;
    const t = transport(async () => {
      n++;
      if (n === 1) return new Response(body()); // ends at once: lost again
      throw new TypeError("fetch failed");
    });
    const s = new RunStream(t, {
      open: async () => new Response(body(start)),
      reconnect: fast,
      cancelOnAbandon: false,
      maxEventChars: 1 << 10,
    });
    await expect(s.toArray()).rejects.toMatchObject({ name: "ConnectionLost", message: /3 re-joins failed/ });
    expect(t.calls).toEqual(["1-0", "1-0", "1-0"]);
    expect(s.reconnects).toBe(1);
  });

  test("a re-join the server refuses is thrown at once", async () => {
    const t = transport(async () => {
      throw new WickError(404, { code: 5, status: "NOT_FOUND", message: "run r1 not found" });
    });
    const s = new RunStream(t, {
      open: async () => new Response(body(start)),
      reconnect: fast,
      cancelOnAbandon: false,
      maxEventChars: 1 << 10,
    });
    await expect(s.toArray()).rejects.toMatchObject({ status: 404 });
    expect(t.calls).toEqual(["1-0"]);
  });

  test("a stream that ends with its run makes no re-join", async () => {
    const t = transport(() => Promise.reject(new Error("no re-join expected")));
    const s = new RunStream(t, {
      open: async () => new Response(body(start, done)),
      reconnect: fast,
      cancelOnAbandon: true,
      maxEventChars: 1 << 10,
    });
    expect((await s.toArray()).map((ev) => ev.id)).toEqual(["1-0", "2-0"]);
    expect(t.calls).toEqual([]);
    expect(() => s[Symbol.asyncIterator]()).toThrow(/once/);
  });
});
