// A2A client side: a Wick agent names another Wick agent, reached over
// A2A (its JSON-RPC endpoint on this suite's gateway, through the tool
// network guard that -tool-allow-nets opens to loopback), as a sub-agent.
// The caller is created here, as its sub-agent's URL is only known now;
// its token is the user's own, given inline.
import { describe, expect, it } from "vitest";

import { headers, token, url } from "./helpers.js";

const HELLO = "Hello from the A2A agent.";

interface WickMessage {
  role: string;
  content?: string;
  tool_calls?: { name: string; args?: Record<string, unknown> }[];
}

async function wick<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...headers("alice"), "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

/** createCaller stores an agent of alice's whose sub-agent "far" is the A2A agent at remote. */
async function createCaller(remote: string, tok: string): Promise<string> {
  const id = `a2aclient-caller-${crypto.randomUUID().slice(0, 8)}`;
  const res = await wick<{ agent: { subagents: { a2a?: { url: string; token: string } }[] } }>("POST", "/agents", {
    agent_id: id,
    name: "A2A caller",
    model: "script:a2aclient-caller",
    subagents: [{ name: "far", description: "A remote agent that greets.", timeout: "60s", a2a: { url: remote, token: tok } }],
  });
  expect(res.status).toBe(200);
  // The API never shows a literal token.
  expect(res.body.agent.subagents[0]?.a2a?.url).toBe(remote);
  expect(res.body.agent.subagents[0]?.a2a?.token).not.toBe(tok);
  return id;
}

async function invoke(agent: string) {
  const res = await wick<{ messages: WickMessage[]; content: string; status: string }>("POST", `/agents/${agent}/invoke`, {
    messages: [{ role: "user", content: "Greet me through the remote agent." }],
  });
  expect(res.status).toBe(200);
  const call = res.body.messages.flatMap((m) => m.tool_calls ?? [])[0];
  expect(call?.name).toBe("task");
  const result = res.body.messages.find((m) => m.role === "tool");
  return { ...res.body, result: result?.content ?? "" };
}

describe("A2A sub-agent", () => {
  it("calls another Wick agent through A2A and gets its final text as the tool result", async () => {
    const caller = await createCaller(`${url}/a2a/agents/a2a-hello`, token("alice"));
    const out = await invoke(caller);
    expect(out.result).toBe(HELLO);
    expect(out.content).toBe("The remote agent answered.");
  });

  it("reports a failed remote call as the tool's error, naming the remote agent", async () => {
    const remote = `${url}/a2a/agents/no-such-agent`;
    const out = await invoke(await createCaller(remote, token("alice")));
    expect(out.result).toContain(`A2A agent ${remote}`);
    expect(out.result).toContain("not found");
    expect(out.content).toBe("The remote agent answered.");
  });

  it("reports a refused token as the tool's error", async () => {
    const remote = `${url}/a2a/agents/a2a-hello`;
    const out = await invoke(await createCaller(remote, "not-a-token"));
    expect(out.result).toContain(`A2A agent ${remote}`);
    expect(out.result).toContain("401");
  });
});
