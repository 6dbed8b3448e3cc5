// A reply whose run searched the knowledge base shows its numbered sources
// under its last message, not under the run's earlier ones.
import { cleanup, render, screen, within } from "@testing-library/react";
import type { WickEvent } from "@wick-agent/sdk";
import { afterEach, describe, expect, it, vi } from "vitest";

import { applyEvents, emptyChat } from "../state/chat";
import { Chat } from "./Chat";

afterEach(cleanup);

const base = { run_id: "r1", thread_id: "t1" };
const events: WickEvent[] = [
  { ...base, id: "1-0", event: "on_run_start", data: { run_id: "r1", thread_id: "t1", agent_id: "a" } },
  {
    ...base,
    id: "1-1",
    event: "on_knowledge_retrieval",
    data: {
      query: "how do replicas share state?",
      sources: [
        { n: 1, chunk_id: "handbook/redis#1", collection: "handbook", document: "redis", title: "Redis", heading: "Redis > Replicas", source: "text", score: 0.612, text: "…" },
        { n: 2, chunk_id: "acme.ops/ferry#0", collection: "acme.ops", document: "ferry", title: "Ferry", heading: "", source: "/workspace/ferry.md", score: 0.3, text: "…" },
      ],
    },
  },
  { ...base, id: "1-2", event: "on_chat_model_stream", data: { delta: "Let me look." } },
  { ...base, id: "1-3", name: "ls", event: "on_tool_start", data: { tool_call_id: "c1", args: {} } },
  { ...base, id: "1-4", name: "ls", event: "on_tool_end", data: { tool_call_id: "c1", output: "" } },
  { ...base, id: "1-5", event: "on_chat_model_stream", data: { delta: "Replicas share state through Redis [1]." } },
  { ...base, id: "1-6", event: "done", data: { stop_reason: "completed" } },
];

describe("Sources", () => {
  it("lists collection, document, heading and score, numbered, under the run's last reply", () => {
    const chat = applyEvents(emptyChat, events, 0);
    render(<Chat chat={chat} loading={false} running={false} disabled={false} placeholder="" onSend={vi.fn()} onStop={vi.fn()} onCancel={vi.fn()} onContinue={vi.fn()} onDecide={vi.fn()} onError={vi.fn()} />);
    const replies = screen.getAllByTestId("message").filter((m) => m.dataset.role === "assistant");
    expect(replies).toHaveLength(2);
    expect(within(replies[0]!).queryByTestId("sources")).toBeNull();
    const items = within(replies[1]!).getAllByTestId("source");
    expect(items.map((li) => li.getAttribute("value"))).toEqual(["1", "2"]);
    expect(items[0]?.textContent).toContain("Redis — Redis > Replicas");
    expect(items[0]?.textContent).toContain("handbook/redis");
    expect(within(items[0]!).getByTestId("source-score").textContent).toBe("0.61");
    expect(items[1]?.textContent).toContain("acme.ops/ferry");
  });
});
