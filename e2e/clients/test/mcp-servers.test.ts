// The MCP reference servers as an agent's MCP servers: the everything
// server over stdio and over streamable HTTP, the filesystem server over
// stdio. Runs go through Wick's REST API with scripted models whose tool
// calls name the servers' tools by Wick's prefixed names ("<server>__<tool>").
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { headers, url } from "./helpers.js";

const clientsDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const everything = path.join(clientsDir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");

/** One event of a run's SSE stream: its kind, name and data. */
interface RunEvent {
  event: string;
  name?: string;
  data: Record<string, unknown>;
}

/**
 * streamRun sends a message to an agent on a new thread and reads the
 * run's events to its end, handing each to onEvent as it comes.
 */
async function streamRun(agentId: string, text: string, onEvent?: (ev: RunEvent) => void): Promise<RunEvent[]> {
  const res = await fetch(`${url}/agents/${agentId}/stream`, {
    method: "POST",
    headers: { ...headers("alice"), "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify({ messages: [{ role: "user", content: text }] }),
  });
  expect(res.status, await (res.ok ? Promise.resolve("") : res.text())).toBe(200);
  const events: RunEvent[] = [];
  const decoder = new TextDecoder();
  let buf = "";
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      const frame = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const data = frame
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).trimStart())
        .join("\n");
      if (!data) continue;
      const parsed = JSON.parse(data) as { event: string; name?: string; data?: Record<string, unknown> };
      const ev = { event: parsed.event, name: parsed.name, data: parsed.data ?? {} };
      events.push(ev);
      onEvent?.(ev);
    }
  }
  return events;
}

/** toolEnds maps each tool call's id to its on_tool_end data. */
function toolEnds(events: RunEvent[]): Map<string, { output?: string; error?: string }> {
  const out = new Map<string, { output?: string; error?: string }>();
  for (const ev of events) {
    if (ev.event === "on_tool_end") out.set(ev.data.tool_call_id as string, ev.data as { output?: string; error?: string });
  }
  return out;
}

function progressOf(events: RunEvent[], callId: string): { progress: number; total?: number }[] {
  return events
    .filter((ev) => ev.event === "on_tool_progress" && ev.data.tool_call_id === callId)
    .map((ev) => ev.data as { progress: number; total?: number });
}

function last(events: RunEvent[]): RunEvent {
  return events[events.length - 1]!;
}

describe("MCP reference servers over stdio", () => {
  it("calls echo, get-sum, an image tool, the filesystem server and a long-running tool with progress; wrong arguments are a tool error", async () => {
    const events = await streamRun("mcpclient-stdio", "use the MCP servers");
    expect(last(events).event, JSON.stringify(last(events))).toBe("done");
    expect(events.filter((ev) => ev.event === "on_mcp_server_error")).toEqual([]);
    const ends = toolEnds(events);
    expect(ends.get("echo")).toMatchObject({ output: "Echo: hello over stdio" });
    expect(ends.get("sum")?.output).toContain("42");
    expect(ends.get("image")?.error).toBeFalsy();
    expect(ends.get("image")?.output).toMatch(/\[image: image\/png, \d+ bytes\]/);
    expect(ends.get("write")?.error).toBeFalsy();
    expect(ends.get("read")).toMatchObject({ output: "written by the filesystem server" });
    expect(ends.get("long")?.output).toContain("Long running operation completed");
    // Progress streamed while the call ran: before its end, growing, with
    // the tool's total.
    const progress = progressOf(events, "long");
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.every((p) => p.total === 4 && p.progress >= 1 && p.progress <= 4)).toBe(true);
    expect(progress.map((p) => p.progress)).toEqual([...progress.map((p) => p.progress)].sort((a, b) => a - b));
    const firstProgress = events.findIndex((ev) => ev.event === "on_tool_progress");
    const longEnd = events.findIndex((ev) => ev.event === "on_tool_end" && ev.data.tool_call_id === "long");
    expect(firstProgress).toBeLessThan(longEnd);
    expect(events[firstProgress]!.name).toBe("ev__trigger-long-running-operation");
    // The server's own validation error reaches the model as a failed call.
    expect(ends.get("wrong")?.error).toMatch(/invalid|expected/i);
    expect(ends.get("wrong")?.output ?? "").toBe("");
  });

  it("restarts a server killed during a call: that call fails, the next one works", { timeout: 60_000 }, async () => {
    let killed = false;
    const events = await streamRun("mcpclient-kill", "survive a crash", (ev) => {
      if (killed || ev.event !== "on_tool_progress" || ev.data.tool_call_id !== "long") return;
      killed = true;
      // The marker argument is this agent's server's alone.
      void promisify(execFile)("pgrep", ["-f", "mcpclient-kill-marker"]).then(({ stdout }) => {
        for (const pid of stdout.split("\n").filter(Boolean)) process.kill(Number(pid), "SIGKILL");
      });
    });
    expect(killed).toBe(true);
    expect(last(events).event, JSON.stringify(last(events))).toBe("done");
    const ends = toolEnds(events);
    expect(ends.get("long")?.error).toMatch(/MCP server ev stopped during the call/);
    expect(ends.get("after")).toMatchObject({ output: "Echo: back again" });
  });

  it("says on the run that a server exited at start, with its stderr, and runs with the other server's tools", async () => {
    const events = await streamRun("mcpclient-broken", "one server is broken");
    expect(events[0]!.event).toBe("on_run_start");
    const down = events.filter((ev) => ev.event === "on_mcp_server_error");
    expect(down).toHaveLength(1);
    expect(down[0]!.name).toBe("bad");
    expect(down[0]!.data.server).toBe("bad");
    expect(down[0]!.data.error).toBeTruthy();
    expect(down[0]!.data.stderr).toContain("mcpclient-broken: no configuration found at /etc/bad.json");
    expect(last(events).event, JSON.stringify(last(events))).toBe("done");
    const ends = toolEnds(events);
    expect(ends.get("bad")?.error).toContain("MCP server bad is unavailable");
    expect(ends.get("good")).toMatchObject({ output: "Echo: still here" });
  });
});

describe("the everything server over streamable HTTP", () => {
  let server: ChildProcess | undefined;
  let endpoint = "";
  const agentId = `mcpclient-http-${process.pid}`;

  beforeAll(async () => {
    const port = await freePort();
    server = spawn("node", [everything, "streamableHttp"], {
      env: { PATH: process.env.PATH ?? "", PORT: String(port) },
      stdio: ["ignore", "ignore", "pipe"],
    });
    await listening(server, /listening on port/i);
    endpoint = `http://127.0.0.1:${port}/mcp`;
    const res = await fetch(`${url}/agents`, {
      method: "POST",
      headers: { ...headers("alice"), "Content-Type": "application/json" },
      body: JSON.stringify({
        agent_id: agentId,
        name: "The everything server over HTTP",
        model: "script:mcpclient-http",
        backend: { type: "local" },
        mcp_servers: [{ name: "evh", url: endpoint }],
      }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
  });

  afterAll(async () => {
    await fetch(`${url}/agents/${agentId}`, { method: "DELETE", headers: headers("alice") });
    server?.kill("SIGTERM");
  });

  it("calls echo, get-sum and a long-running tool with progress through the SSRF guard's allowlist", async () => {
    const events = await streamRun(agentId, "use the HTTP server");
    expect(last(events).event, JSON.stringify(last(events))).toBe("done");
    expect(events.filter((ev) => ev.event === "on_mcp_server_error")).toEqual([]);
    const ends = toolEnds(events);
    expect(ends.get("echo")).toMatchObject({ output: "Echo: hello over HTTP" });
    expect(ends.get("sum")?.output).toContain("42");
    expect(ends.get("long")?.output).toContain("Long running operation completed");
    expect(progressOf(events, "long").length).toBeGreaterThan(0);
  });
});

/** freePort is a loopback port nothing listens on. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

/** listening waits for the line a server prints on stderr once it listens. */
function listening(child: ChildProcess, line: RegExp): Promise<void> {
  return new Promise((resolve, reject) => {
    let err = "";
    const timer = setTimeout(() => reject(new Error(`the server did not start: ${err}`)), 30_000);
    child.stderr?.on("data", (b: Buffer) => {
      err += b.toString();
      if (line.test(err)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}): ${err}`));
    });
  });
}
