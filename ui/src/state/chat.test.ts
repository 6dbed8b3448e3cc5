import type { SubagentInnerEvent, WickEvent } from "@wick-agent/sdk";
import { describe, expect, it } from "vitest";

import {
  addFoundFiles,
  addUserMessage,
  applyEvents,
  emptyChat,
  endRunLocally,
  fromThreadState,
  isRunning,
  endedToolState,
  markStopping,
  ranCommands,
  removeItem,
  storedToolState,
  stoppedRunId,
  withStoppedRun,
  threadStatus,
  titleOf,
  type AssistantItem,
  type ChatState,
  type ToolItem,
} from "./chat";
import { compareEventIds } from "./eventId";

const RUN = "run-1";
const base = { run_id: RUN, thread_id: "th-1" };

// id gives the n-th event id of a run in the log's "<ms>-<seq>" form; n ≥ 10
// makes string order differ from numeric order.
const id = (n: number) => `1700000000000-${n}`;

const start = (n = 0): WickEvent => ({ ...base, id: id(n), event: "on_run_start", data: { run_id: RUN, thread_id: "th-1", agent_id: "a" } });
const delta = (n: number, text: string): WickEvent => ({ ...base, id: id(n), event: "on_chat_model_stream", data: { delta: text } });
const toolStart = (n: number, callId: string, name = "write_file", args: Record<string, unknown> = { path: "/workspace/a.txt" }): WickEvent => ({
  ...base,
  id: id(n),
  name,
  event: "on_tool_start",
  data: { tool_call_id: callId, args },
});
const toolEnd = (n: number, callId: string, name = "write_file", error = ""): WickEvent => ({
  ...base,
  id: id(n),
  name,
  event: "on_tool_end",
  data: { tool_call_id: callId, output: error ? "" : "ok", error },
});
const done = (n: number): WickEvent => ({ ...base, id: id(n), event: "done", data: { stop_reason: "completed" } });

function textOf(s: ChatState): string {
  return s.items
    .filter((it): it is AssistantItem => it.kind === "assistant")
    .map((it) => it.text)
    .join("|");
}

function tools(s: ChatState): ToolItem[] {
  return s.items.filter((it): it is ToolItem => it.kind === "tool");
}

describe("compareEventIds", () => {
  it.each([
    ["9-0", "10-0", -1],
    ["1-9", "1-10", -1],
    ["1-10", "1-9", 1],
    ["5-5", "5-5", 0],
    ["", "1-0", -1],
    ["1-0", "", 1],
  ])("%s vs %s", (a, b, want) => {
    expect(Math.sign(compareEventIds(a, b))).toBe(want);
  });
});

describe("applyEvents", () => {
  it("accumulates deltas into one assistant message", () => {
    const s = applyEvents(emptyChat, [start(), delta(1, "Hel"), delta(2, "lo"), delta(3, " world")], 0);
    expect(textOf(s)).toBe("Hello world");
    expect(s.threadId).toBe("th-1");
    expect(isRunning(s)).toBe(true);
    expect(threadStatus(s)).toBe("running");
  });

  it("keeps thoughts apart from the answer, one block per stretch of thinking", () => {
    const thought = (n: number, text: string): WickEvent => ({ ...base, id: id(n), event: "on_thought_stream", data: { delta: text } });
    const s = applyEvents(
      emptyChat,
      [start(), thought(1, "Look at "), thought(2, "the file."), delta(3, "Reading"), toolStart(4, "c1"), toolEnd(5, "c1"), thought(6, "Done."), delta(7, "ok"), done(8)],
      0,
    );
    expect(s.items.map((it) => it.kind)).toEqual(["thought", "assistant", "tool", "thought", "assistant", "runEnd"]);
    const thoughts = s.items.filter((it) => it.kind === "thought");
    expect(thoughts.map((it) => it.text)).toEqual(["Look at the file.", "Done."]);
    expect(thoughts.every((it) => !it.streaming)).toBe(true);
    expect(textOf(s)).toBe("Reading|ok");
  });

  it("keeps the user's message before the run's", () => {
    let s = addUserMessage(emptyChat, "hi");
    s = applyEvents(s, [start(), delta(1, "yes")], 0);
    expect(s.items.map((it) => it.kind)).toEqual(["user", "assistant"]);
  });

  it.each([
    { name: "a re-join that overlaps", batches: [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], [9, 10, 11, 12, 13]] },
    { name: "duplicates", batches: [[0, 1, 1, 2, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]] },
    { name: "a stale event after a newer one", batches: [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], [3, 12, 13]] },
    { name: "ids compared as numbers (10 after 9)", batches: [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [10, 11, 12, 13]] },
  ])("applies every token once: $name", ({ batches }) => {
    const words = Array.from({ length: 14 }, (_, n) => `w${n} `);
    let s = emptyChat;
    for (const b of batches) s = applyEvents(s, b.map((n) => (n === 0 ? start() : delta(n, words[n]!))), 0);
    expect(textOf(s)).toBe(words.slice(1).join(""));
    expect(s.runs[RUN]!.lastEventId).toBe(id(13));
  });

  it("matches tool ends to starts, measures durations, records written files", () => {
    const s = applyEvents(
      emptyChat,
      [start(), delta(1, "I will write."), toolStart(2, "c1"), toolStart(3, "c2", "read_file", { path: "x" })],
      1000,
    );
    expect(tools(s).map((t) => t.state)).toEqual(["running", "running"]);
    const s2 = applyEvents(s, [toolEnd(4, "c2", "read_file", "no such file"), toolEnd(5, "c1")], 1250);
    const [c1, c2] = tools(s2);
    expect(c1).toMatchObject({ toolCallId: "c1", state: "done", output: "ok", startedAt: 1000, endedAt: 1250 });
    expect(c2).toMatchObject({ toolCallId: "c2", state: "error", error: "no such file" });
    expect(s2.writtenFiles).toEqual([{ path: "/workspace/a.txt", runId: RUN, eventId: id(5), version: 1 }]);
    // Text after a tool card is a new message.
    const s3 = applyEvents(s2, [delta(6, "Done.")], 1300);
    expect(textOf(s3)).toBe("I will write.|Done.");
  });

  it("shows an MCP tool's latest progress on its card, and a server that failed as an event", () => {
    const progress = (n: number, value: number, message: string, callId = "c1"): WickEvent => ({
      ...base,
      id: id(n),
      event: "on_tool_progress",
      data: { tool_call_id: callId, progress: value, total: 4, message },
    });
    const failed: WickEvent = {
      ...base,
      id: id(1),
      event: "on_mcp_server_error",
      data: { server: "bad", error: "start MCP server bad: the process exited", stderr: "Error: Cannot find module" },
    };
    const s = applyEvents(emptyChat, [start(), failed, toolStart(2, "c1", "ev__long"), progress(3, 1, "step 1"), progress(4, 2, "step 2")], 1000);
    expect(tools(s)[0]).toMatchObject({ state: "running", progress: { progress: 2, total: 4, message: "step 2" } });
    expect(s.items.find((it) => it.kind === "event")).toMatchObject({ eventKind: "on_mcp_server_error", data: { server: "bad" } });
    // Progress of a call the page has no card for changes nothing.
    const other = applyEvents(s, [progress(5, 3, "x", "nope")], 1100);
    expect(tools(other)).toEqual(tools(s));
  });

  it("ends every reply of a run with the run, also one an event of its own interrupted mid-stream", () => {
    const failed: WickEvent = { ...base, id: id(2), event: "on_mcp_server_error", data: { server: "bad", error: "exited" } };
    const s = applyEvents(emptyChat, [start(), delta(1, "Hel"), failed, delta(3, "lo"), done(4)], 1000);
    const replies = s.items.filter((it): it is AssistantItem => it.kind === "assistant");
    expect(replies.map((it) => it.text)).toEqual(["Hel", "lo"]);
    expect(replies.map((it) => it.streaming)).toEqual([false, false]);
  });

  it("keeps a tool's display title beside its name", () => {
    const titled: WickEvent = { ...base, id: id(2), name: "execute", event: "on_tool_start", data: { tool_call_id: "c1", args: { command: "ls" }, title: "`ls`" } };
    const cards = tools(applyEvents(emptyChat, [start(), titled, toolStart(3, "c2")], 1000));
    expect(cards[0]).toMatchObject({ name: "execute", title: "`ls`", args: { command: "ls" } });
    expect(cards[1]?.title).toBeUndefined();
  });

  it("bumps a rewritten file's version and puts it first", () => {
    const s = applyEvents(
      emptyChat,
      [
        start(),
        toolStart(1, "c1"),
        toolEnd(2, "c1"),
        toolStart(3, "c2", "write_file", { path: "b.md" }),
        toolEnd(4, "c2"),
        toolStart(5, "c3", "edit_file", { path: "/workspace/a.txt" }),
        toolEnd(6, "c3", "edit_file"),
        toolStart(7, "c4", "write_file", { path: "/workspace/c.txt" }),
        toolEnd(8, "c4", "write_file", "denied"),
      ],
      0,
    );
    expect(s.writtenFiles.map((f) => [f.path, f.version])).toEqual([
      ["/workspace/a.txt", 2],
      ["/workspace/b.md", 1],
    ]);
  });

  it("cancels the cards a run leaves open", () => {
    const s = applyEvents(
      emptyChat,
      [start(), toolStart(1, "c1"), { ...base, id: id(2), event: "error", data: { message: "run cancelled", code: "cancelled", stop_reason: "cancelled" } }],
      5,
    );
    expect(tools(s)[0]).toMatchObject({ state: "cancelled", endedAt: 5 });
    expect(s.runs[RUN]).toMatchObject({ status: "cancelled" });
    expect(s.runs[RUN]!.error).toBeUndefined();
    expect(isRunning(s)).toBe(false);
    expect(s.items.at(-1)).toMatchObject({ kind: "runEnd", runId: RUN });
  });

  it("ends a run cancelled by its error's code alone", () => {
    // A run whose replica could not log its last event ends with one made
    // from the run's record: a code, no stop_reason.
    const s = applyEvents(emptyChat, [start(), toolStart(1, "c1"), { ...base, id: "", event: "error", data: { message: "the run ended without logging its last event", code: "cancelled" } }], 5);
    expect(s.runs[RUN]).toMatchObject({ status: "cancelled" });
    expect(s.runs[RUN]!.error).toBeUndefined();
    expect(tools(s)[0]).toMatchObject({ state: "cancelled" });
  });

  it("shows a question, then the run going on once answered", () => {
    const ask: WickEvent = {
      ...base,
      id: id(2),
      event: "on_interrupt",
      data: { kind: "question", question: "Which colour?", choices: ["red", "blue"], tool_call_id: "q1", tool_calls: [{ id: "q1", name: "ask_user" }] },
    };
    let s = applyEvents(emptyChat, [start(), toolStart(1, "q1", "ask_user", {}), ask], 0);
    expect(s.items.at(-1)).toMatchObject({ kind: "interrupt", resolved: false, question: { toolCallId: "q1", text: "Which colour?", choices: ["red", "blue"] } });
    expect(threadStatus(s)).toBe("interrupted");
    s = applyEvents(s, [toolEnd(3, "q1", "ask_user")], 0);
    expect(s.items.find((it) => it.kind === "interrupt")).toMatchObject({ resolved: true });
    expect(s.runs[RUN]).toMatchObject({ status: "running" });
  });

  it("ends a stopped run as stopped, which Continue picks up until a message follows", () => {
    let s = applyEvents(emptyChat, [start(), toolStart(1, "c1"), toolEnd(2, "c1")], 0);
    s = markStopping(s, RUN);
    expect(s.runs[RUN]).toMatchObject({ status: "running", stopping: true });
    expect(stoppedRunId(s)).toBeUndefined();
    s = applyEvents(s, [{ ...base, id: id(3), event: "done", data: { stop_reason: "stopped" } }], 0);
    expect(s.runs[RUN]).toMatchObject({ status: "stopped", stopReason: "stopped" });
    expect(isRunning(s)).toBe(false);
    expect(stoppedRunId(s)).toBe(RUN);
    expect(stoppedRunId(addUserMessage(s, "something else"))).toBeUndefined();
    expect(stoppedRunId(applyEvents(emptyChat, [start(), done(1)], 0))).toBeUndefined();

    // After a reload the stopped run comes from storage, without usage.
    const loaded = withStoppedRun(fromThreadState({ thread_id: "th-1", messages: [{ role: "user", content: "go" }] }), RUN);
    expect(stoppedRunId(loaded)).toBe(RUN);
    expect(loaded.runs[RUN]).toMatchObject({ status: "stopped", restored: true });
    expect(withStoppedRun(loaded, RUN)).toBe(loaded);
  });

  it("keeps a run's error in words and ends its stream", () => {
    const s = applyEvents(
      emptyChat,
      [start(), delta(1, "par"), { ...base, id: id(2), event: "error", data: { message: "model unavailable", code: "error", stop_reason: "error" } }],
      0,
    );
    expect(s.runs[RUN]).toMatchObject({ status: "error", error: "model unavailable" });
    expect((s.items[0] as AssistantItem).streaming).toBe(false);
    expect(threadStatus(s)).toBe("idle");
  });

  it("ends a run the page lost", () => {
    let s = applyEvents(emptyChat, [start(), toolStart(1, "c1")], 0);
    s = endRunLocally(s, RUN, "connection lost", 9);
    expect(tools(s)[0]!.state).toBe("cancelled");
    expect(s.runs[RUN]!.error).toBe("connection lost");
  });

  it("sums usage per run", () => {
    const s = applyEvents(
      emptyChat,
      [
        start(),
        { ...base, id: id(1), event: "on_usage", data: { input_tokens: 10, output_tokens: 3 } },
        { ...base, id: id(2), event: "on_usage", data: { input_tokens: 20, output_tokens: 4 } },
        done(3),
      ],
      0,
    );
    expect(s.runs[RUN]!.usage).toEqual({ input: 30, output: 7 });
    expect(s.runs[RUN]!.status).toBe("done");
  });

  it("keeps todos and unknown kinds in order", () => {
    const s = applyEvents(
      emptyChat,
      [
        start(),
        delta(1, "a"),
        { ...base, id: id(2), event: "unknown", kind: "on_new_kind", data: { name: "researcher" } },
        { ...base, id: id(3), event: "on_todos", data: { todos: [{ id: "1", title: "plan", status: "in_progress" }] } },
        { ...base, id: id(4), event: "unknown", kind: "on_background_task", data: {} },
      ],
      0,
    );
    expect(s.items.map((it) => (it.kind === "event" ? it.eventKind : it.kind))).toEqual(["assistant", "on_new_kind", "on_background_task"]);
    expect(s.todos).toEqual([{ id: "1", title: "plan", status: "in_progress" }]);
  });

  it("asks for approval and resolves the card when the run goes on", () => {
    let s = applyEvents(
      emptyChat,
      [start(), { ...base, id: id(1), event: "on_interrupt", data: { tool_calls: [{ id: "c1", name: "write_file", args: { path: "a" } }] } }],
      0,
    );
    expect(threadStatus(s)).toBe("interrupted");
    expect(isRunning(s)).toBe(true);
    expect(s.items.at(-1)).toMatchObject({ kind: "interrupt", resolved: false });
    s = applyEvents(s, [toolStart(2, "c1"), toolEnd(3, "c1")], 0);
    expect(threadStatus(s)).toBe("running");
    expect(s.items.find((it) => it.kind === "interrupt")).toMatchObject({ resolved: true });
  });

  it("keeps asking when the waited call's start comes after the interrupt (an ACP agent asks before it announces)", () => {
    const ask: WickEvent = { ...base, id: id(1), event: "on_interrupt", data: { tool_calls: [{ id: "perm-1", name: "Write /workspace/a.txt", args: { path: "/workspace/a.txt" } }] } };
    let s = applyEvents(emptyChat, [start(), ask, toolStart(2, "perm-1", "Write /workspace/a.txt")], 0);
    expect(threadStatus(s)).toBe("interrupted");
    expect(s.items.find((it) => it.kind === "interrupt")).toMatchObject({ resolved: false });
    expect(s.items.at(-1)).toMatchObject({ kind: "tool", toolCallId: "perm-1" });
    // Another call's start is the run going on.
    s = applyEvents(s, [toolStart(3, "other")], 0);
    expect(threadStatus(s)).toBe("running");
    expect(s.items.find((it) => it.kind === "interrupt")).toMatchObject({ resolved: true });
  });

  it("follows two runs of a thread apart", () => {
    const other = { run_id: "run-2", thread_id: "th-1" };
    let s = applyEvents(emptyChat, [start(), delta(1, "one"), done(2)], 0);
    // The second run's ids are smaller than the first's last: ids are per run.
    s = applyEvents(s, [{ ...other, id: "1-0", event: "on_run_start", data: { run_id: "run-2", agent_id: "a" } }, { ...other, id: "1-1", event: "on_chat_model_stream", data: { delta: "two" } }], 0);
    expect(textOf(s)).toBe("one|two");
    expect(s.activeRunId).toBe("run-2");
  });
});

describe("fromThreadState", () => {
  it("renders messages, tool calls with results, todos and files", () => {
    const s = fromThreadState({
      thread_id: "th-9",
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "write  a\nnote" },
        { role: "assistant", content: "Sure.", tool_calls: [{ id: "c1", name: "write_file", args: { path: "/workspace/n.txt" } as never }, { id: "c2", name: "ls" }] },
        { role: "tool", tool_call_id: "c1", name: "write_file", content: "wrote 4 bytes" },
        { role: "assistant", content: "Done." },
      ],
      todos: [{ id: "1", title: "t", status: "done" }],
      files: { "/workspace/n.txt": "note" },
    });
    expect(s.threadId).toBe("th-9");
    expect(s.items.map((it) => it.kind)).toEqual(["user", "assistant", "tool", "tool", "assistant"]);
    expect(tools(s).map((t) => [t.toolCallId, t.state, t.output])).toEqual([
      ["c1", "done", "wrote 4 bytes"],
      ["c2", "cancelled", undefined],
    ]);
    expect(s.todos).toHaveLength(1);
    expect(s.writtenFiles.map((f) => f.path)).toEqual(["/workspace/n.txt"]);
    expect(titleOf("write  a\nnote")).toBe("write a note");
    // The server's rule (threads.title): 80 code points with the "…", cut on a code point.
    expect(titleOf("x".repeat(80))).toBe("x".repeat(80));
    expect(titleOf("😀".repeat(81))).toBe("😀".repeat(79) + "…");
    expect(titleOf("a".repeat(78) + " bcd")).toBe("a".repeat(78) + "…");
  });
});

describe("knowledge retrieval", () => {
  const source = (n: number, document: string, score: number) => ({
    n,
    chunk_id: `handbook/${document}#0`,
    collection: "handbook",
    document,
    title: document,
    heading: "Summary",
    source: "text",
    score,
    text: "…",
  });
  const retrieval = (n: number, data: { query: string; sources: ReturnType<typeof source>[]; error?: string }): WickEvent => ({
    ...base,
    id: id(n),
    name: "knowledge",
    event: "on_knowledge_retrieval",
    data,
  });

  it("keeps the run's sources, once, and the error of a failed search", () => {
    const sources = [source(1, "redis", 0.6), source(2, "ferry", 0.3)];
    let s = applyEvents(emptyChat, [start(), retrieval(1, { query: "replicas?", sources }), delta(2, "Through Redis [1].")], 0);
    expect(s.runs[RUN]?.knowledge).toEqual({ query: "replicas?", sources });
    // A repeat (a re-join that overlaps) changes nothing; the end keeps them.
    s = applyEvents(s, [retrieval(1, { query: "other", sources: [] }), done(3)], 0);
    expect(s.runs[RUN]?.knowledge?.sources).toBe(sources);
    expect(textOf(s)).toBe("Through Redis [1].");

    const failed = applyEvents(emptyChat, [start(), retrieval(1, { query: "q", sources: [], error: "collection gone not found" })], 0);
    expect(failed.runs[RUN]?.knowledge).toEqual({ query: "q", sources: [], error: "collection gone not found" });
    // No item of its own: the sources go under the reply.
    expect(failed.items).toEqual([]);
  });
});

describe("sub-agents", () => {
  const tags = (run: string, parent: string, call: string, depth: number) => ({
    name: "general-purpose",
    run_id: run,
    thread_id: `th-${run}`,
    parent_run_id: parent,
    tool_call_id: call,
    depth,
  });
  const wrapped = (n: number, t: ReturnType<typeof tags>, event: string, data: SubagentInnerEvent["data"], name?: string): WickEvent => ({
    ...base,
    id: id(n),
    name: t.name,
    event: "on_subagent_event",
    data: { ...t, event: { event, data, ...(name ? { name } : {}) } },
  });

  it("nests a sub-agent's events in its task card, and a deeper one in the child's task card", () => {
    const child = tags("run-c", RUN, "t1", 1);
    const grandchild = tags("run-g", "run-c", "t2", 2);
    const s = applyEvents(
      emptyChat,
      [
        start(0),
        toolStart(1, "t1", "task", { description: "write notes" }),
        { ...base, id: id(2), event: "on_subagent_start", data: { ...child, description: "write notes" } },
        wrapped(3, child, "on_chat_model_stream", { delta: "working" }),
        wrapped(4, child, "on_tool_start", { tool_call_id: "t2", args: { description: "deeper" } }, "task"),
        { ...base, id: id(5), event: "on_subagent_start", data: { ...grandchild, description: "deeper" } },
        wrapped(6, grandchild, "on_tool_start", { tool_call_id: "w1", args: { path: "/workspace/n.txt" } }, "write_file"),
        wrapped(7, grandchild, "on_tool_end", { tool_call_id: "w1", output: "ok", error: "" }, "write_file"),
        wrapped(8, grandchild, "done", { stop_reason: "completed" }),
        { ...base, id: id(9), event: "on_subagent_end", data: { ...grandchild, status: "completed" } },
        wrapped(10, child, "on_tool_end", { tool_call_id: "t2", output: "deep done", error: "" }, "task"),
        wrapped(11, child, "done", { stop_reason: "completed" }),
        { ...base, id: id(12), event: "on_subagent_end", data: { ...child, status: "completed" } },
        toolEnd(13, "t1", "task"),
      ],
      1000,
    );
    // The child's done is not the run's: the parent still runs.
    expect(isRunning(s)).toBe(true);
    const [task] = tools(s);
    expect(task?.state).toBe("done");
    const view = task?.subagents?.[0];
    expect(view).toMatchObject({ runId: "run-c", description: "write notes", status: "completed", depth: 1 });
    expect(textOf(view!.chat)).toBe("working");
    const inner = tools(view!.chat);
    expect(inner.map((t) => [t.name, t.state, t.output])).toEqual([["task", "done", "deep done"]]);
    const deeper = inner[0]?.subagents?.[0];
    expect(deeper).toMatchObject({ runId: "run-g", status: "completed", depth: 2 });
    expect(tools(deeper!.chat).map((t) => [t.name, t.state])).toEqual([["write_file", "done"]]);
    // Only the thread's own writes reach the files panel.
    expect(s.writtenFiles).toEqual([]);
  });

  it("shows a failed sub-agent's error", () => {
    const child = tags("run-c", RUN, "t1", 1);
    const s = applyEvents(
      emptyChat,
      [
        start(0),
        toolStart(1, "t1", "task", {}),
        { ...base, id: id(2), event: "on_subagent_start", data: { ...child, description: "slow" } },
        { ...base, id: id(3), event: "on_subagent_end", data: { ...child, status: "timeout", error: "sub-agent timed out" } },
      ],
      1000,
    );
    expect(tools(s)[0]?.subagents?.[0]).toMatchObject({ status: "timeout", error: "sub-agent timed out" });
  });
});

describe("files found after a run", () => {
  const wrote = applyEvents(
    emptyChat,
    [
      start(0),
      toolStart(1, "c1", "write_file", { path: "/workspace/sales.csv" }),
      toolEnd(2, "c1"),
      toolStart(3, "c2", "execute", { command: "python3 analyze.py" }),
      toolEnd(4, "c2", "execute"),
      done(5),
    ],
    0,
  );

  it("knows a run that ran commands", () => {
    expect(ranCommands(wrote, RUN)).toBe(true);
    expect(ranCommands(applyEvents(emptyChat, [start(0), toolStart(1, "c1"), toolEnd(2, "c1")], 0), RUN)).toBe(false);
    expect(ranCommands(wrote, "run-2")).toBe(false);
  });

  const cases: { name: string; state: ChatState; paths: string[]; want: { path: string; version: number; found?: boolean }[] }[] = [
    {
      name: "adds new files first, found, with the run's id",
      state: wrote,
      paths: ["/workspace/report/chart.png"],
      want: [
        { path: "/workspace/report/chart.png", version: 1, found: true },
        { path: "/workspace/sales.csv", version: 1 },
      ],
    },
    {
      name: "keeps a file the run wrote through a tool as it is",
      state: wrote,
      paths: ["/workspace/sales.csv"],
      want: [{ path: "/workspace/sales.csv", version: 1 }],
    },
    {
      name: "bumps a file an earlier run wrote",
      state: { ...wrote, writtenFiles: [{ path: "/workspace/old.md", runId: "run-0", eventId: "1-1", version: 2 }] },
      paths: ["/workspace/old.md"],
      want: [{ path: "/workspace/old.md", version: 3, found: true }],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = addFoundFiles(c.state, RUN, c.paths).writtenFiles;
      expect(got.map((f) => ({ path: f.path, version: f.version, ...(f.found ? { found: true } : {}) }))).toEqual(c.want);
      for (const f of got) if (f.found) expect(f).toMatchObject({ runId: RUN, eventId: "" });
    });
  }

  it("returns the same state when nothing is new", () => {
    expect(addFoundFiles(wrote, RUN, [])).toBe(wrote);
  });
});

describe("tool card states", () => {
  // The results the agent gives calls that did not run to completion
  // (services/agent/internal/loop's result texts).
  const CANCELLED = "cancelled: run was cancelled before this tool call finished";
  const INTERRUPTED = "cancelled: the previous run ended before this tool call finished";
  const REJECTED = "rejected by the user: not today";

  it("maps an on_tool_end's error to the call's state", () => {
    expect(endedToolState(undefined)).toBe("done");
    expect(endedToolState("")).toBe("done");
    expect(endedToolState(CANCELLED)).toBe("cancelled");
    expect(endedToolState(INTERRUPTED)).toBe("cancelled");
    expect(endedToolState(REJECTED)).toBe("rejected");
    expect(endedToolState("rejected by the user (remembered for this thread)")).toBe("rejected");
    expect(endedToolState("not executed: the run failed before this tool call could run")).toBe("error");
    expect(endedToolState("open /workspace/x: no such file")).toBe("error");
  });

  it("maps a stored tool message's content to the call's state", () => {
    expect(storedToolState("wrote 4 bytes")).toBe("done");
    expect(storedToolState(CANCELLED)).toBe("cancelled");
    expect(storedToolState(REJECTED)).toBe("rejected");
    expect(storedToolState("Error: exit status 1\nboom")).toBe("error");
    expect(storedToolState("Error: " + CANCELLED)).toBe("cancelled");
    expect(storedToolState("not executed: the run failed before this tool call could run")).toBe("error");
  });

  it("shows a cancelled, a rejected and a failed call as such, never as done", () => {
    const s = applyEvents(
      emptyChat,
      [start(), toolStart(1, "c1", "execute"), toolStart(2, "c2"), toolStart(3, "c3", "ls"), toolEnd(4, "c1", "execute", CANCELLED), toolEnd(5, "c2", "write_file", REJECTED), toolEnd(6, "c3", "ls", "boom")],
      0,
    );
    expect(tools(s).map((t) => [t.toolCallId, t.state, t.error])).toEqual([
      ["c1", "cancelled", CANCELLED],
      ["c2", "rejected", REJECTED],
      ["c3", "error", "boom"],
    ]);
    // A rejected write wrote nothing.
    expect(s.writtenFiles).toEqual([]);
  });

  it("shows a stored thread's cancelled, rejected and failed calls as such", () => {
    const s = fromThreadState({
      messages: [
        { role: "user", content: "go" },
        { role: "assistant", tool_calls: [{ id: "c1", name: "execute" }, { id: "c2", name: "write_file" }, { id: "c3", name: "ls" }, { id: "c4", name: "ls" }] },
        { role: "tool", tool_call_id: "c1", content: CANCELLED },
        { role: "tool", tool_call_id: "c2", content: REJECTED },
        { role: "tool", tool_call_id: "c3", content: "Error: no such directory" },
        { role: "tool", tool_call_id: "c4", content: "a.txt" },
      ],
    });
    expect(tools(s).map((t) => [t.toolCallId, t.state, t.error, t.output])).toEqual([
      ["c1", "cancelled", CANCELLED, undefined],
      ["c2", "rejected", REJECTED, undefined],
      ["c3", "error", "no such directory", undefined],
      ["c4", "done", undefined, "a.txt"],
    ]);
  });

  it("shows a call announced while its approval is asked for as waiting, then running once decided", () => {
    const ask: WickEvent = { ...base, id: id(1), event: "on_interrupt", data: { tool_calls: [{ id: "perm-1", name: "Write", args: {} }] } };
    let s = applyEvents(emptyChat, [start(), ask, toolStart(2, "perm-1", "Write")], 0);
    expect(tools(s)[0]!.state).toBe("waiting");
    // Decided: the run goes on with the call.
    s = applyEvents(s, [delta(3, "writing")], 0);
    expect(tools(s)[0]!.state).toBe("running");
    s = applyEvents(s, [toolEnd(4, "perm-1", "Write")], 0);
    expect(tools(s)[0]!.state).toBe("done");
  });

  it("cancels a call still waiting when its run ends", () => {
    const ask: WickEvent = { ...base, id: id(1), event: "on_interrupt", data: { tool_calls: [{ id: "perm-1", name: "Write", args: {} }] } };
    const s = applyEvents(emptyChat, [start(), ask, toolStart(2, "perm-1", "Write"), { ...base, id: id(3), event: "error", data: { message: "cancelled", code: "cancelled" } }], 0);
    expect(tools(s)[0]!.state).toBe("cancelled");
  });
});

describe("removeItem", () => {
  it("takes a refused message out, and keeps the state when there is none", () => {
    const s = addUserMessage(emptyChat, "too long");
    const key = s.items[0]!.key;
    expect(removeItem(s, key).items).toEqual([]);
    expect(removeItem(s, "nope")).toBe(s);
  });
});
