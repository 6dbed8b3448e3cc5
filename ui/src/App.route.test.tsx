// Which agent and thread the app opens: the default agent on a fresh page,
// the last ones opened after that, and a clear state (no list entry) for an
// agent or thread the URL names that does not exist.
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { App, defaultAgentId } from "./App";

const TOKEN = "t0ken";

function json(v: unknown, status = 200): Response {
  return new Response(JSON.stringify(v), { status, headers: { "Content-Type": "application/json" } });
}

/** Listed by id, as the API lists them: "approve" before "default". */
const AGENTS = [
  { agent_id: "approve", name: "Approver" },
  { agent_id: "default", name: "Default agent" },
  { agent_id: "hello", name: "Hello" },
];
const THREADS: Record<string, { thread_id: string; agent_id: string; title: string; updated_at: string }[]> = {
  hello: [{ thread_id: "th_hello", agent_id: "hello", title: "Hi there", updated_at: new Date().toISOString() }],
};

function gateway(req: Request): Response {
  const u = new URL(req.url);
  if (u.pathname === "/health") return json({ status: "ok", services: {}, agents: AGENTS.length });
  switch (u.pathname) {
    case "/agents":
      return json({ agents: AGENTS });
    case "/agents/events":
      return new Response(`id: 1\nevent: subscribed\ndata: {"event":"subscribed"}\n\n`, { headers: { "Content-Type": "text/event-stream" } });
    case "/agents/skills/available":
      return json({ skills: [] });
    case "/threads":
      return json({ threads: THREADS[u.searchParams.get("agent_id") ?? ""] ?? [] });
    case "/threads/th_hello":
      return json({ thread: { thread_id: "th_hello", messages: [{ role: "user", content: "Hi there" }] } });
  }
  if (u.pathname.startsWith("/threads/")) return json({ code: 5, status: "NOT_FOUND", message: `thread ${u.pathname.slice(9)} not found` }, 404);
  if (u.pathname.startsWith("/agents/")) return json({ agent: AGENTS.find((a) => u.pathname.startsWith(`/agents/${a.agent_id}`)) ?? {} });
  return json({ code: 5, status: "NOT_FOUND", message: `no ${u.pathname}` }, 404);
}

beforeEach(() => {
  sessionStorage.clear();
  localStorage.clear();
  sessionStorage.setItem("wick.token", TOKEN);
  location.hash = "";
  vi.stubGlobal("fetch", vi.fn(async (req: Request) => gateway(req)));
});

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const selectedAgent = () => document.querySelector('[data-testid="agent-item"][aria-current="true"]')?.getAttribute("data-agent-id");

describe("defaultAgentId", () => {
  it("is the agent named default when listed, else the first", () => {
    expect(defaultAgentId(AGENTS)).toBe("default");
    expect(defaultAgentId([{ agent_id: "b" }, { agent_id: "c" }])).toBe("b");
    expect(defaultAgentId([])).toBeUndefined();
  });
});

describe("App's first screen", () => {
  it("opens the default agent on a fresh page, not the first listed", async () => {
    render(<App baseUrl="http://wick.test" />);
    await waitFor(() => expect(location.hash).toBe("#/agents/default"));
    await waitFor(() => expect(selectedAgent()).toBe("default"));
  });

  it("reopens the agent and thread open last", async () => {
    localStorage.setItem("wick.lastOpened", JSON.stringify({ agentId: "hello", threadId: "th_hello" }));
    render(<App baseUrl="http://wick.test" />);
    await waitFor(() => expect(location.hash).toBe("#/agents/hello/threads/th_hello"));
    await waitFor(() => expect(document.querySelector('[data-testid="thread-item"][aria-current="true"]')?.getAttribute("data-thread-id")).toBe("th_hello"));
  });

  it("remembers what was opened", async () => {
    location.hash = "#/agents/hello/threads/th_hello";
    render(<App baseUrl="http://wick.test" />);
    await waitFor(() => expect(JSON.parse(localStorage.getItem("wick.lastOpened") ?? "null")).toEqual({ agentId: "hello", threadId: "th_hello" }));
  });

  it("opens the last agent without its thread when the thread is gone", async () => {
    localStorage.setItem("wick.lastOpened", JSON.stringify({ agentId: "hello", threadId: "th_gone" }));
    render(<App baseUrl="http://wick.test" />);
    await waitFor(() => expect(selectedAgent()).toBe("hello"));
    await screen.findByTestId("thread-item");
    expect(location.hash).toBe("#/agents/hello");
    expect(screen.queryByTestId("thread-not-found")).toBeNull();
  });

  it("falls back to the default agent when the last one is gone", async () => {
    localStorage.setItem("wick.lastOpened", JSON.stringify({ agentId: "deleted" }));
    render(<App baseUrl="http://wick.test" />);
    await waitFor(() => expect(location.hash).toBe("#/agents/default"));
  });

  it("says that an agent of the URL does not exist, loading nothing for it", async () => {
    location.hash = "#/agents/nope/threads/th_x";
    render(<App baseUrl="http://wick.test" />);
    const nf = await screen.findByTestId("agent-not-found");
    expect(nf.textContent).toContain("nope");
    expect(screen.queryByText("Loading the thread…")).toBeNull();
    const calls = vi.mocked(fetch).mock.calls.map(([req]) => new URL((req as Request).url).pathname);
    expect(calls).not.toContain("/threads/th_x");
    fireEvent.click(screen.getByTestId("not-found-action"));
    await waitFor(() => expect(location.hash).toBe("#/agents/default"));
    expect(screen.queryByTestId("agent-not-found")).toBeNull();
  });

  it("says that a thread of the URL does not exist, and lists no entry for it", async () => {
    location.hash = "#/agents/hello/threads/th_doesnotexist";
    render(<App baseUrl="http://wick.test" />);
    const nf = await screen.findByTestId("thread-not-found");
    expect(nf.textContent).toContain("th_doesnotexist");
    await screen.findByTestId("thread-item");
    expect(screen.getAllByTestId("thread-item").map((t) => t.dataset.threadId)).toEqual(["th_hello"]);
    expect(document.querySelector('[data-testid="thread-item"][aria-current="true"]')).toBeNull();
    fireEvent.click(screen.getByTestId("not-found-action"));
    await waitFor(() => expect(location.hash).toBe("#/agents/hello"));
    expect(screen.queryByTestId("thread-not-found")).toBeNull();
  });
});
