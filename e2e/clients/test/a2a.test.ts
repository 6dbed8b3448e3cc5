// A2A: each Wick agent published as an A2A 0.3 agent, driven by the
// official JavaScript SDK (@a2a-js/sdk) with its v0.3 compatibility
// transport, which it selects from the card's protocolVersion.
import { describe, expect, it } from "vitest";

import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { TaskState } from "@a2a-js/sdk";
import type { Client } from "@a2a-js/sdk/client";

import { headers, url } from "./helpers.js";
import type { TOKENS } from "./fixtures.js";

const HELLO = "Hello from the A2A agent.";

/** authFetch is fetch with a user's bearer token. */
function authFetch(user: keyof typeof TOKENS): typeof fetch {
  return (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers(user) } });
}

/** The agent's JSON-RPC endpoint, as its card names it. */
function rpcURL(agent: string): string {
  return `${url}/a2a/agents/${agent}`;
}

function agentBase(agent: string): string {
  // With the slash: the SDK resolves the card path relative to it.
  return `${url}/a2a/agents/${agent}/`;
}

async function client(user: keyof typeof TOKENS, agent: string): Promise<Client> {
  const fetchImpl = authFetch(user);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
    }),
  );
  return factory.createFromUrl(agentBase(agent));
}

function userMessage(text: string, extra: { contextId?: string; taskId?: string } = {}) {
  return {
    tenant: "",
    message: {
      messageId: crypto.randomUUID(),
      contextId: extra.contextId ?? "",
      taskId: extra.taskId ?? "",
      role: 1, // ROLE_USER
      parts: [{ content: { $case: "text" as const, value: text }, metadata: undefined, filename: "", mediaType: "" }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}

function textOf(parts: { content?: { $case: string; value?: unknown } }[] | undefined): string {
  return (parts ?? []).map((p) => (p.content?.$case === "text" ? String(p.content.value) : "")).join("");
}

describe("A2A", () => {
  it("publishes an agent card the SDK accepts", async () => {
    const resolver = new DefaultAgentCardResolver({ fetchImpl: authFetch("alice"), legacyCompat: { enabled: true } });
    const card = await resolver.resolve(agentBase("a2a-hello"));
    expect(card.name).toBe("A2A helper");
    expect(card.description).toBe("Answers greetings for the A2A tests.");
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.supportedInterfaces[0]?.url).toBe(rpcURL("a2a-hello"));
    expect(card.supportedInterfaces[0]?.protocolBinding).toBe("JSONRPC");
    expect(Object.keys(card.securitySchemes)).toEqual(["bearer"]);
    expect(card.skills.map((s) => s.id)).toEqual(["chat", "tool:calculate"]);
    expect(card.defaultInputModes).toContain("text/plain");
  });

  it("refuses the card without a token and for an unknown agent", async () => {
    expect((await fetch(`${agentBase("a2a-hello")}.well-known/agent-card.json`)).status).toBe(401);
    const res = await fetch(`${agentBase("nobody")}.well-known/agent-card.json`, { headers: headers("alice") });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { status?: string }).status).toBe("NOT_FOUND");
  });

  it("streams a reply with message/stream, then answers tasks/get", async () => {
    const c = await client("alice", "a2a-hello");
    let taskId = "";
    let contextId = "";
    let streamed = "";
    const states: number[] = [];
    for await (const ev of c.sendMessageStream(userMessage("hi"))) {
      const p = ev.payload;
      if (p?.$case === "task") {
        taskId = p.value.id;
        contextId = p.value.contextId;
      } else if (p?.$case === "artifactUpdate") {
        streamed += textOf(p.value.artifact?.parts);
      } else if (p?.$case === "statusUpdate") {
        states.push(p.value.status?.state ?? -1);
      }
    }
    expect(taskId).toMatch(/./);
    expect(streamed).toBe(HELLO);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);

    const task = await c.getTask({ tenant: "", id: taskId, historyLength: undefined });
    expect(task.contextId).toBe(contextId);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task.artifacts.at(-1)?.parts)).toBe(HELLO);

    // The same task is nobody else's.
    const bob = await client("bob", "a2a-hello");
    await expect(bob.getTask({ tenant: "", id: taskId, historyLength: undefined })).rejects.toThrow(/not found/i);
  });

  it("answers message/send with the finished task, continuing its context", async () => {
    const c = await client("alice", "a2a-hello");
    const first = await c.sendMessage(userMessage("hi"));
    if (!("status" in first)) throw new Error("message/send answered a message, want a task");
    expect(first.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const second = await c.sendMessage(userMessage("again", { contextId: first.contextId }));
    if (!("status" in second)) throw new Error("message/send answered a message, want a task");
    expect(second.contextId).toBe(first.contextId);
    expect(second.id).not.toBe(first.id);
    const thread = await fetch(`${url}/threads/${first.contextId}`, { headers: headers("alice") });
    const body = (await thread.json()) as { thread?: { messages?: { role: string }[] } };
    expect(body.thread?.messages?.filter((m) => m.role === "user")).toHaveLength(2);
  });

  it("cancels a slow task with tasks/cancel", async () => {
    const c = await client("alice", "a2a-slow");
    const stream = c.sendMessageStream(userMessage("go slowly"));
    let taskId = "";
    let final = -1;
    for await (const ev of stream) {
      const p = ev.payload;
      if (p?.$case === "artifactUpdate" && !taskId) {
        taskId = p.value.taskId;
        const cancelled = await c.cancelTask({ tenant: "", id: taskId, metadata: undefined });
        expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      }
      if (p?.$case === "statusUpdate") final = p.value.status?.state ?? -1;
    }
    expect(taskId).toMatch(/./);
    expect(final).toBe(TaskState.TASK_STATE_CANCELED);
    const task = await c.getTask({ tenant: "", id: taskId, historyLength: undefined });
    expect(task.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    // An ended task cannot be cancelled again.
    await expect(c.cancelTask({ tenant: "", id: taskId, metadata: undefined })).rejects.toThrow();
  });

  it("answers malformed and unknown requests with JSON-RPC errors", async () => {
    const rpc = async (body: string) => {
      const res = await fetch(rpcURL("a2a-hello"), { method: "POST", headers: { ...headers("alice"), "Content-Type": "application/json" }, body });
      return (await res.json()) as { error?: { code: number } };
    };
    expect((await rpc("{")).error?.code).toBe(-32700);
    expect((await rpc(`{"jsonrpc":"2.0","id":1}`)).error?.code).toBe(-32600);
    expect((await rpc(`{"jsonrpc":"2.0","id":1,"method":"nope"}`)).error?.code).toBe(-32601);
    expect((await rpc(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`)).error?.code).toBe(-32602);
    expect((await rpc(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"run_nope"}}`)).error?.code).toBe(-32001);
  });
});
