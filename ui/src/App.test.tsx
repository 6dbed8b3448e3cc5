// The shell against a fake gateway: the token prompt, the agents, sending
// with Enter and rendering the streamed reply.
import { act, cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import type { EventData, EventKind } from "@wick-agent/sdk";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { App } from "./App";

const TOKEN = "t0ken";

function sse(frames: string[]): Response {
  return new Response(frames.join(""), { headers: { "Content-Type": "text/event-stream" } });
}

function json(v: unknown, status = 200): Response {
  return new Response(JSON.stringify(v), { status, headers: { "Content-Type": "application/json" } });
}

// frame is one SSE frame of a run's stream; data has the shape the OpenAPI
// document gives the kind.
function frame<K extends EventKind>(id: string, event: K, data: EventData<K>, name?: string): string {
  return `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify({ id, run_id: "r1", thread_id: "th1", event, ...(name ? { name } : {}), data })}\n\n`;
}

let streamed: unknown[] = [];
/** What GET /threads answers. */
let listed: unknown[] = [];
/** The run writes a file instead of answering. */
let writes = false;

function gateway(req: Request): Response {
  const u = new URL(req.url);
  const authed = req.headers.get("Authorization") === `Bearer ${TOKEN}`;
  if (u.pathname === "/health") return json({ status: "ok", services: {}, ...(authed ? { agents: 1 } : {}) });
  if (!authed) return json({ code: 16, status: "UNAUTHENTICATED", message: "a token is required" }, 401);
  switch (u.pathname) {
    case "/agents":
      return json({ agents: [{ agent_id: "default", name: "Default" }] });
    case "/agents/default":
      return json({ agent: { agent_id: "default", sandbox_state: "none" } });
    case "/agents/events":
      return sse([`id: 1\nevent: subscribed\ndata: {"event":"subscribed"}\n\n`]);
    case "/agents/skills/available":
      return json({ skills: [] });
    case "/threads":
      return json({ threads: listed });
    case "/agents/default/stream":
      return sse(writes
        ? [
            frame("5-0", "on_run_start", { run_id: "r1", thread_id: "th1", agent_id: "default" }),
            frame("5-1", "on_tool_start", { tool_call_id: "c1", args: { path: "/workspace/a.md", content: "# A" } }, "write_file"),
            frame("5-2", "on_tool_end", { tool_call_id: "c1", output: "ok" }, "write_file"),
            frame("5-3", "done", { stop_reason: "completed" }),
          ]
        : [
            frame("5-0", "on_run_start", { run_id: "r1", thread_id: "th1", agent_id: "default" }),
            frame("5-1", "on_chat_model_stream", { delta: "Hello " }),
            frame("5-2", "on_chat_model_stream", { delta: "**world**" }),
            frame("5-3", "on_usage", { input_tokens: 7, output_tokens: 2 }),
            frame("5-4", "done", { stop_reason: "completed" }),
          ]);
  }
  return json({ code: 5, status: "NOT_FOUND", message: `no ${u.pathname}` }, 404);
}

beforeEach(() => {
  sessionStorage.clear();
  location.hash = "";
  streamed = [];
  listed = [];
  writes = false;
  vi.stubGlobal(
    "fetch",
    vi.fn(async (req: Request) => {
      if (req.url.endsWith("/stream")) streamed.push(await req.clone().json());
      return gateway(req);
    }),
  );
});

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe("App", () => {
  it("lists threads with the title and status the list carries, loading no thread", async () => {
    listed = [
      { thread_id: "ta", agent_id: "default", title: "Plan the trip", status: "interrupted" },
      { thread_id: "tb", agent_id: "default", status: "error" },
      { thread_id: "tc", agent_id: "default", title: "Newer server", status: "sleeping" },
    ];
    sessionStorage.setItem("wick.token", TOKEN);
    render(<App baseUrl="http://wick.test" />);
    await waitFor(() => expect(screen.getAllByTestId("thread-item")).toHaveLength(3));
    const items = screen.getAllByTestId("thread-item");
    expect(items.map((i) => i.dataset.status)).toEqual(["interrupted", "error", "idle"]);
    expect(items[0]!.textContent).toContain("Plan the trip");
    expect(items[1]!.textContent).toContain("Thread tb");
    const calls = vi.mocked(fetch).mock.calls.map(([req]) => new URL((req as Request).url).pathname);
    expect(calls.filter((p) => p.startsWith("/threads/"))).toEqual([]);
  });

  it("asks for the token, then chats", async () => {
    render(<App baseUrl="http://wick.test" />);
    const input = await screen.findByTestId("token-input");
    fireEvent.change(input, { target: { value: TOKEN } });
    fireEvent.click(screen.getByTestId("token-submit"));
    await screen.findByTestId("agent-item");
    expect(sessionStorage.getItem("wick.token")).toBe(TOKEN);
    expect(screen.queryByTestId("token-dialog")).toBeNull();

    const box = screen.getByTestId("chat-input");
    fireEvent.change(box, { target: { value: "hi" } });
    // Shift+Enter is a new line, not a send.
    fireEvent.keyDown(box, { key: "Enter", shiftKey: true });
    expect(streamed).toHaveLength(0);
    await act(async () => {
      fireEvent.keyDown(box, { key: "Enter" });
    });
    await waitFor(() => expect(screen.getByTestId("run-usage").textContent).toContain("7 tokens in"));
    expect(streamed[0]).toMatchObject({ messages: [{ role: "user", content: "hi" }], background: true });
    const reply = screen.getAllByTestId("message").find((m) => m.dataset.role === "assistant")!;
    expect(reply.querySelector("strong")?.textContent).toBe("world");
    expect(location.hash).toBe("#/agents/default/threads/th1");
    await waitFor(() => expect(screen.getByTestId("thread-item").dataset.status).toBe("idle"));
  });

  it("keeps the prompt open for a refused token, saying why, and keeps no token", async () => {
    render(<App baseUrl="http://wick.test" />);
    fireEvent.change(await screen.findByTestId("token-input"), { target: { value: "wrong" } });
    fireEvent.click(screen.getByTestId("token-submit"));
    const why = await screen.findByRole("alert");
    expect(why.textContent).toBe("The token was refused: a token is required (401 UNAUTHENTICATED)");
    expect(screen.getByTestId("token-dialog")).toBeTruthy();
    expect(screen.queryByTestId("agent-list")).toBeNull();
    expect(sessionStorage.getItem("wick.token")).toBeNull();

    fireEvent.change(screen.getByTestId("token-input"), { target: { value: TOKEN } });
    fireEvent.click(screen.getByTestId("token-submit"));
    await screen.findByTestId("agent-item");
    expect(screen.queryByTestId("token-dialog")).toBeNull();
  });

  it("keeps the side panel closed on a fresh thread and opens it when a run writes a file", async () => {
    sessionStorage.setItem("wick.token", TOKEN);
    writes = true;
    const { container } = render(<App baseUrl="http://wick.test" />);
    await screen.findByTestId("agent-item");
    expect(container.querySelector(".app")!.classList.contains("panel-open")).toBe(false);
    fireEvent.change(screen.getByTestId("chat-input"), { target: { value: "write" } });
    await act(async () => {
      fireEvent.click(screen.getByTestId("chat-send"));
    });
    await waitFor(() => expect(screen.getByTestId("tool-card").dataset.state).toBe("done"));
    await waitFor(() => expect(container.querySelector(".app")!.classList.contains("panel-open")).toBe(true));
    expect(screen.getByTestId("panel-tab-canvas").getAttribute("aria-selected")).toBe("true");
  });

  it("on a narrow screen: the sidebar starts closed, stays open for choosing a thread, closes on a thread", async () => {
    vi.stubGlobal("matchMedia", (q: string) => ({ matches: q === "(max-width: 800px)", media: q, addEventListener() {}, removeEventListener() {} }));
    sessionStorage.setItem("wick.token", TOKEN);
    const { container } = render(<App baseUrl="http://wick.test" />);
    const app = container.querySelector(".app")!;
    await screen.findByTestId("agent-item");
    expect(app.classList.contains("sidebar-open")).toBe(false);
    expect(app.classList.contains("panel-open")).toBe(false);
    fireEvent.click(screen.getByTestId("sidebar-toggle"));
    fireEvent.click(screen.getByTestId("agent-item"));
    expect(app.classList.contains("sidebar-open")).toBe(true);
    fireEvent.click(screen.getByTestId("thread-new"));
    expect(app.classList.contains("sidebar-open")).toBe(false);
  });

  it("shows an error in words and dismisses it", async () => {
    sessionStorage.setItem("wick.token", TOKEN);
    location.hash = "#/agents/default/threads/missing";
    render(<App baseUrl="http://wick.test" />);
    const banner = await screen.findByTestId("error-banner");
    expect(banner.textContent).toContain("no /threads/missing (404 NOT_FOUND)");
    fireEvent.click(screen.getByTestId("error-dismiss"));
    expect(screen.queryByTestId("error-banner")).toBeNull();
  });
});
