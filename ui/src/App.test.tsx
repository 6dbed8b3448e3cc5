// The shell against a fake gateway: the token prompt, the agents, sending
// with Enter and rendering the streamed reply.
import { act, cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { App } from "./App";

const TOKEN = "t0ken";

function sse(frames: string[]): Response {
  return new Response(frames.join(""), { headers: { "Content-Type": "text/event-stream" } });
}

function json(v: unknown, status = 200): Response {
  return new Response(JSON.stringify(v), { status, headers: { "Content-Type": "application/json" } });
}

function frame(id: string, event: string, data: unknown): string {
  return `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify({ id, run_id: "r1", thread_id: "th1", event, data })}\n\n`;
}

let streamed: unknown[] = [];

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
      return json({ threads: [] });
    case "/agents/default/stream":
      return sse([
        frame("5-0", "on_run_start", { run_id: "r1", thread_id: "th1", agent_id: "default" }),
        frame("5-1", "on_chat_model_stream", { delta: "Hello " }),
        frame("5-2", "on_chat_model_stream", { delta: "**world**" }),
        frame("5-3", "on_usage", { input_tokens: 7, output_tokens: 2 }),
        frame("5-4", "done", { stop_reason: "end_turn" }),
      ]);
  }
  return json({ code: 5, status: "NOT_FOUND", message: `no ${u.pathname}` }, 404);
}

beforeEach(() => {
  sessionStorage.clear();
  location.hash = "";
  streamed = [];
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
