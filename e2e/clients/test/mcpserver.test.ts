// Wick's /mcp driven by the official TypeScript MCP client over streamable
// HTTP, with the gateway's bearer token as a header.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult, Progress } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { TOKENS } from "./fixtures.js";
import { headers, url } from "./helpers.js";

async function connect(user: keyof typeof TOKENS): Promise<Client> {
  const client = new Client({ name: "wick-clients-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: headers(user) } }));
  return client;
}

function text(result: CallToolResult): string {
  return result.content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

describe("MCP server (/mcp)", () => {
  let alice: Client;
  let bob: Client;
  beforeAll(async () => {
    const res = await fetch(`${url}/agents`, {
      method: "POST",
      headers: { ...headers("alice"), "Content-Type": "application/json" },
      body: JSON.stringify({ agent_id: "mcpserver-alice", model: "script:mcpserver", backend: { type: "local" } }),
    });
    expect(res.status).toBe(200);
    alice = await connect("alice");
    bob = await connect("bob");
  });
  afterAll(async () => {
    await alice?.close();
    await bob?.close();
  });

  it("lists the caller's agents and the templates as tools", async () => {
    const { tools } = await alice.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["default", "mcpserver-helper", "mcpserver-alice"]));
    const helper = tools.find((t) => t.name === "mcpserver-helper");
    expect(helper?.title).toBe("MCP helper");
    expect(helper?.inputSchema.required).toEqual(["message"]);
    expect(Object.keys(helper?.inputSchema.properties ?? {}).sort()).toEqual(["message", "thread_id"]);

    const bobs = (await bob.listTools()).tools.map((t) => t.name);
    expect(bobs).toContain("mcpserver-helper");
    expect(bobs).not.toContain("mcpserver-alice");
  });

  it("calls an agent, with progress, and continues its thread", async () => {
    const progress: Progress[] = [];
    const first = (await alice.callTool({ name: "mcpserver-alice", arguments: { message: "hello" } }, undefined, {
      onprogress: (p) => progress.push(p),
    })) as CallToolResult;
    expect(first.isError).toBeFalsy();
    expect(text(first)).toBe("Hello from the MCP test agent.");
    const sc = first.structuredContent as { thread_id: string; run_id: string; status: string };
    expect(sc.status).toBe("completed");
    expect(sc.thread_id).not.toBe("");
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[0]?.message).toBe(`run ${sc.run_id} started on thread ${sc.thread_id}`);

    const second = (await alice.callTool({
      name: "mcpserver-alice",
      arguments: { message: "again", thread_id: sc.thread_id },
    })) as CallToolResult;
    expect(text(second)).toBe("Second reply on the thread.");
    expect((second.structuredContent as { thread_id: string }).thread_id).toBe(sc.thread_id);
  });

  it("answers an unknown tool and another user's agent with a JSON-RPC error", async () => {
    await expect(alice.callTool({ name: "no-such-agent", arguments: { message: "hi" } })).rejects.toThrow(/unknown tool/);
    await expect(bob.callTool({ name: "mcpserver-alice", arguments: { message: "hi" } })).rejects.toThrow(/unknown tool/);
  });

  it("refuses a client without a token", async () => {
    const client = new Client({ name: "anonymous", version: "1.0.0" });
    const refused = client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
    await expect(refused).rejects.toBeInstanceOf(StreamableHTTPError);
    await expect(refused).rejects.toMatchObject({ code: 401 });
  });
});
