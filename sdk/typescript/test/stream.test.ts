import { describe, expect, onTestFinished, test } from "vitest";

import { Wick, type WickEvent } from "../src/index.js";
import { APPROVED_TEXT, TOKENS, TOOLS_ANSWER } from "./fixtures.js";
import { client, url, userMessage } from "./helpers.js";
import { CutProxy } from "./proxy.js";

const alice = client("alice");

// text joins the deltas of events.
function text(events: WickEvent[]): string {
  return events.map((ev) => (ev.event === "on_chat_model_stream" ? ev.data.delta : "")).join("");
}

// resume approves every tool call an on_interrupt event waits for.
async function approve(wick: Wick, runId: string, ev: WickEvent): Promise<void> {
  if (ev.event !== "on_interrupt") throw new Error(`approve: event ${ev.event}`);
  const decisions = ev.data.tool_calls.map((c) => ({ tool_call_id: c.id, action: "approve" }));
  await wick.send(
    new Request(`${url}/runs/${runId}/resume`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ decisions }),
    }),
  );
}

describe("stream", () => {
  test("yields a run's typed events and ends with done", async () => {
    const s = alice.stream("default", userMessage("plan and write a note"));
    const events = await s.toArray();

    const first = events[0];
    expect(first?.event).toBe("on_run_start");
    if (first?.event !== "on_run_start") return;
    expect(first.data.agent_id).toBe("default");
    expect(s.runId).toBe(first.data.run_id);
    expect(s.threadId).toBe(first.data.thread_id);
    expect(s.lastEventId).toBe(events.at(-1)?.id);
    expect(s.reconnects).toBe(0);

    const kinds = new Set(events.map((ev) => ev.event));
    for (const kind of ["on_chat_model_stream", "on_usage", "on_tool_start", "on_tool_end", "on_todos"]) {
      expect(kinds, kind).toContain(kind);
    }
    expect(events.at(-1)).toMatchObject({ event: "done", data: { stop_reason: "completed" } });
    expect(new Set(events.map((ev) => ev.id)).size).toBe(events.length);

    const todos = events.find((ev) => ev.event === "on_todos");
    expect(todos?.event === "on_todos" && todos.data.todos).toEqual([{ id: "1", title: "write the note", status: "in_progress" }]);
    // A turn's tool calls run in parallel: their ends come in the order they finish.
    const tools = events.flatMap((ev) => (ev.event === "on_tool_end" ? [{ name: ev.name ?? "", error: ev.data.error }] : []));
    tools.sort((a, b) => a.name.localeCompare(b.name));
    expect(tools).toEqual([
      { name: "write_file", error: "" },
      { name: "write_todos", error: "" },
    ]);
    const lastTool = events.findLastIndex((ev) => ev.event === "on_tool_end");
    expect(text(events.slice(lastTool))).toBe(TOOLS_ANSWER);
    for (const ev of events) {
      expect(ev.run_id).toBe(s.runId);
    }

    // The generated client reads the thread the run saved.
    const { data } = await alice.api.GET("/threads/{thread_id}", { params: { path: { thread_id: s.threadId! } } });
    expect(data?.thread?.messages?.at(-1)).toMatchObject({ role: "assistant", content: TOOLS_ANSWER });
  });

  test("re-joins a dropped connection with no event lost or repeated", async () => {
    const proxy = await CutProxy.start(url);
    onTestFinished(() => proxy.close());
    const viaProxy = new Wick({ baseUrl: proxy.url, token: TOKENS.alice, reconnect: { initialDelayMs: 10 } });

    const s = viaProxy.stream("approve", userMessage("write the file"));
    const got: WickEvent[] = [];
    for await (const ev of s) {
      got.push(ev);
      if (got.length === 3) {
        // Mid-reply: the run cannot end before its tool call is approved.
        proxy.cut();
      }
      if (ev.event === "on_interrupt") {
        // The run waits for approval: cut again, then let it go on.
        proxy.cut();
        await approve(alice, s.runId!, ev);
      }
    }
    expect(s.reconnects).toBe(2);
    expect(proxy.accepted).toBeGreaterThanOrEqual(3);

    // The whole run, re-joined from its start over a connection never cut.
    const all = await alice.join(s.runId!).toArray();
    expect(got).toEqual(all);
    expect(new Set(got.map((ev) => ev.id)).size).toBe(got.length);
    expect(got.at(-1)?.event).toBe("done");
    const approved = got.findIndex((ev) => ev.event === "on_tool_end");
    expect(text(got.slice(approved))).toBe(APPROVED_TEXT);
  });

  test("join resumes after a given event id", async () => {
    const all = await alice.stream("default", userMessage("again")).toArray();
    const cut = 5;
    const rest = await alice.join(all[0]!.run_id!, { after: all[cut - 1]!.id }).toArray();
    expect(rest).toEqual(all.slice(cut));
  });

  test("without re-joins a dropped connection fails the stream", async () => {
    const proxy = await CutProxy.start(url);
    onTestFinished(() => proxy.close());
    const viaProxy = new Wick({ baseUrl: proxy.url, token: TOKENS.alice, reconnect: false });
    const s = viaProxy.stream("slow", userMessage("go"));
    await expect(
      (async () => {
        for await (const ev of s) {
          if (ev.event === "on_chat_model_stream") proxy.cut();
        }
      })(),
    ).rejects.toMatchObject({ name: "ConnectionLost" });
    // A run that is not a background run ends with its client.
    const events = await alice.join(s.runId!).toArray();
    expect(events.at(-1)).toMatchObject({ event: "error", data: { stop_reason: "cancelled" } });
  });
});

describe("cancel", () => {
  // lastOf re-joins a run from its start and returns its last event, once
  // the run has ended.
  async function lastOf(runId: string): Promise<WickEvent | undefined> {
    return (await alice.join(runId).toArray()).at(-1);
  }

  test("aborting the signal ends the stream and cancels the run", async () => {
    const ctl = new AbortController();
    const s = alice.stream("slow", userMessage("go"), { signal: ctl.signal });
    const seen: WickEvent[] = [];
    await expect(
      (async () => {
        for await (const ev of s) {
          seen.push(ev);
          if (ev.event === "on_chat_model_stream") ctl.abort();
        }
      })(),
    ).rejects.toMatchObject({ name: "AbortError" });
    expect(seen.at(-1)?.event).toBe("on_chat_model_stream");
    expect(await lastOf(s.runId!)).toMatchObject({ event: "error", data: { stop_reason: "cancelled" } });
  });

  test("an aborted signal fails the stream before it starts", async () => {
    const s = alice.stream("slow", userMessage("go"), { signal: AbortSignal.abort() });
    await expect(s.toArray()).rejects.toMatchObject({ name: "AbortError" });
  });

  test("leaving the loop early cancels the run", async () => {
    const s = alice.stream("slow", userMessage("go"));
    for await (const ev of s) {
      if (ev.event === "on_chat_model_stream") break;
    }
    expect(await lastOf(s.runId!)).toMatchObject({ event: "error", data: { stop_reason: "cancelled" } });
  });

  test("a background run survives its stream", async () => {
    const s = alice.stream("slow", { ...userMessage("go"), background: true });
    for await (const ev of s) {
      if (ev.event === "on_chat_model_stream") break;
    }
    const { data } = await alice.api.GET("/runs/{run_id}", { params: { path: { run_id: s.runId! } } });
    expect(data?.run?.status).toBe("running");
    await alice.cancelRun(s.runId!);
    expect(await lastOf(s.runId!)).toMatchObject({ event: "error", data: { stop_reason: "cancelled" } });
  });

  test("POST /runs/{run_id}/cancel ends the stream with the cancellation", async () => {
    const s = alice.stream("slow", userMessage("go"));
    const seen: WickEvent[] = [];
    for await (const ev of s) {
      seen.push(ev);
      if (seen.length === 2) await s.cancel();
    }
    expect(seen.at(-1)).toMatchObject({ event: "error", data: { message: "run cancelled", stop_reason: "cancelled" } });
  });
});
