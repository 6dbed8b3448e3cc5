import { randomUUID } from "node:crypto";

import { HttpAgent, type BaseEvent, type Interrupt, type Message } from "@ag-ui/client";
import { EventSchemas } from "@ag-ui/core/schemas";
import { describe, expect, it } from "vitest";

import { headers, url } from "./helpers.js";

// AG-UI (POST /ag-ui/agents/{agent_id}) driven by @ag-ui/client's HttpAgent;
// every event is checked against @ag-ui/core's own schema, and what the
// client assembles is compared with Wick's own record of the thread.

type WickMessage = {
  role: string;
  content?: string;
  tool_calls?: { id: string; name: string; args?: Record<string, unknown> }[];
  tool_call_id?: string;
};

function agent(agentId: string, user: "alice" | "bob" = "alice", threadId: string = randomUUID()): HttpAgent {
  return new HttpAgent({ url: `${url}/ag-ui/agents/${agentId}`, headers: headers(user), threadId });
}

// run sends text and returns every event, each parsed by @ag-ui/core's schema.
async function run(a: HttpAgent, text: string): Promise<BaseEvent[]> {
  a.addMessage({ id: randomUUID(), role: "user", content: text });
  const events: BaseEvent[] = [];
  await a.runAgent({}, { onEvent: ({ event }) => void events.push(EventSchemas.parse(event) as BaseEvent) });
  return events;
}

async function wickThread(threadId: string, user: "alice" | "bob" = "alice"): Promise<{ status: number; messages: WickMessage[]; todos: unknown[] }> {
  const res = await fetch(`${url}/threads/${threadId}`, { headers: headers(user) });
  if (res.status !== 200) return { status: res.status, messages: [], todos: [] };
  const body = (await res.json()) as { thread: { messages?: WickMessage[]; todos?: unknown[] } };
  return { status: 200, messages: body.thread.messages ?? [], todos: body.thread.todos ?? [] };
}

// comparable is a conversation without the user's messages, as both sides
// can say it: assistant text and calls (arguments parsed), tool results.
function fromAGUI(msgs: Message[]): unknown[] {
  return msgs
    .filter((m) => m.role !== "user")
    .map((m) =>
      m.role === "assistant"
        ? { role: "assistant", content: m.content ?? "", calls: (m.toolCalls ?? []).map((c) => ({ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) })) }
        : m.role === "tool"
          ? { role: "tool", id: m.toolCallId, content: m.content }
          : { role: m.role },
    );
}

function fromWick(msgs: WickMessage[]): unknown[] {
  return msgs
    .filter((m) => m.role !== "user" && m.role !== "system")
    .map((m) =>
      m.role === "assistant"
        ? { role: "assistant", content: m.content ?? "", calls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.name, args: c.args ?? {} })) }
        : { role: "tool", id: m.tool_call_id, content: m.content ?? "" },
    );
}

describe("AG-UI", () => {
  it("streams text, tool calls and todos that the client assembles into Wick's own thread", async () => {
    const a = agent("agui-tools");
    const events = await run(a, "plan and answer");
    const types = events.map((e) => e.type);
    expect(types[0]).toBe("RUN_STARTED");
    expect(types.at(-1)).toBe("RUN_FINISHED");
    for (const t of ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "STATE_SNAPSHOT", "STATE_DELTA"]) {
      expect(types).toContain(t);
    }
    const finished = events.at(-1) as BaseEvent & { outcome?: { type: string }; usage?: { inputTokens: number; outputTokens: number }[] };
    expect(finished.outcome?.type).toBe("success");
    expect(finished.usage?.[0]).toMatchObject({ inputTokens: 60, outputTokens: 18 });

    const wick = await wickThread(a.threadId);
    expect(wick.status).toBe(200);
    expect(fromAGUI(a.messages)).toEqual(fromWick(wick.messages));
    expect(fromAGUI(a.messages).at(-1)).toEqual({ role: "assistant", content: "The plan is done and the answer is 42.", calls: [] });
    // The snapshot, then the delta applied by the client, give Wick's list.
    expect(a.state).toEqual({ todos: wick.todos });
    expect((a.state as { todos: { title: string; status: string }[] }).todos.map((t) => [t.title, t.status])).toEqual([
      ["plan", "done"],
      ["answer", "in_progress"],
      ["check", "pending"],
    ]);

    // A second run continues the same Wick thread.
    await run(a, "and again");
    const again = await wickThread(a.threadId);
    expect(again.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["plan and answer", "and again"]);
    expect(fromAGUI(a.messages)).toEqual(fromWick(again.messages));
  });

  it("ends a failing run with RUN_ERROR", async () => {
    const a = agent("agui-fail");
    a.addMessage({ id: randomUUID(), role: "user", content: "fail, please" });
    const events: BaseEvent[] = [];
    await a
      .runAgent({}, { onEvent: ({ event }) => void events.push(EventSchemas.parse(event) as BaseEvent) })
      .catch(() => undefined);
    expect(events[0]?.type).toBe("RUN_STARTED");
    const last = events.at(-1) as BaseEvent & { message?: string };
    expect(last.type).toBe("RUN_ERROR");
    expect(last.message).toBeTruthy();
  });

  it("suspends a run for approval and resumes it with the client's resume entries", async () => {
    const a = agent("agui-approve");
    const first = await run(a, "add two and three");
    const end = first.at(-1) as BaseEvent & { outcome?: { type: string; interrupts?: Interrupt[] } };
    expect(end.type).toBe("RUN_FINISHED");
    expect(end.outcome?.type).toBe("interrupt");
    const interrupts = end.outcome?.interrupts ?? [];
    expect(interrupts).toHaveLength(1);
    expect(interrupts[0]).toMatchObject({ reason: "approval", toolCallId: "calc1" });

    const events: BaseEvent[] = [];
    await a.runAgent(
      { resume: [{ interruptId: interrupts[0]!.id, status: "resolved", payload: { action: "approve" } }] },
      { onEvent: ({ event }) => void events.push(EventSchemas.parse(event) as BaseEvent) },
    );
    expect(events.map((e) => e.type)).toContain("TOOL_CALL_RESULT");
    expect((events.at(-1) as BaseEvent & { outcome?: { type: string } }).outcome?.type).toBe("success");
    const wick = await wickThread(a.threadId);
    expect(fromAGUI(a.messages)).toEqual(fromWick(wick.messages));
    expect(fromAGUI(a.messages).at(-1)).toEqual({ role: "assistant", content: "It is 5.", calls: [] });
  });

  it("answers bad requests with a status and a JSON body naming the field", async () => {
    const post = (path: string, body: unknown, user: "alice" | "bob" = "alice") =>
      fetch(`${url}${path}`, { method: "POST", headers: { ...headers(user), "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const ok = { threadId: randomUUID(), runId: randomUUID(), messages: [{ id: "m1", role: "user", content: "hi" }] };
    const cases: { name: string; path: string; body: unknown; status: number; says: string }[] = [
      { name: "unknown agent", path: "/ag-ui/agents/nope", body: ok, status: 404, says: "nope" },
      { name: "no threadId", path: "/ag-ui/agents/default", body: { ...ok, threadId: undefined }, status: 400, says: "threadId" },
      { name: "no runId", path: "/ag-ui/agents/default", body: { ...ok, runId: undefined }, status: 400, says: "runId" },
      { name: "messages not an array", path: "/ag-ui/agents/default", body: { ...ok, messages: "hi" }, status: 400, says: "messages" },
      { name: "last message not the user's", path: "/ag-ui/agents/default", body: { ...ok, messages: [{ id: "a", role: "assistant", content: "x" }] }, status: 400, says: "messages[0].role" },
      { name: "image part", path: "/ag-ui/agents/default", body: { ...ok, messages: [{ id: "m", role: "user", content: [{ type: "image", source: { type: "url", value: "http://x/y.png" } }] }] }, status: 400, says: "messages[0].content[0].type" },
      { name: "unknown interrupt", path: "/ag-ui/agents/default", body: { ...ok, resume: [{ interruptId: "run_nope:c1", status: "resolved" }] }, status: 404, says: "not found" },
    ];
    for (const c of cases) {
      const res = await post(c.path, c.body);
      expect(res.status, c.name).toBe(c.status);
      expect(res.headers.get("content-type"), c.name).toContain("application/json");
      const body = (await res.json()) as { message: string };
      expect(body.message, c.name).toContain(c.says);
    }
  });

  it("keeps threads per user: another user's thread id never reaches that thread", async () => {
    const a = agent("default");
    await run(a, "alice's secret");
    // Bob cannot read the thread, and a run of his on the same id is his own.
    expect((await wickThread(a.threadId, "bob")).status).toBe(404);
    const b = agent("default", "bob", a.threadId);
    await run(b, "bob's question");
    const bobs = await wickThread(a.threadId, "bob");
    expect(bobs.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["bob's question"]);
    const alices = await wickThread(a.threadId, "alice");
    expect(alices.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["alice's secret"]);
  });
});
