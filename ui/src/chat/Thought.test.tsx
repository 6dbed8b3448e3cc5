// An agent's reasoning (on_thought_stream) shows as a block of its own,
// open while it streams and folded once the answer follows; it is never
// part of the answer's text.
import { cleanup, render, screen } from "@testing-library/react";
import type { WickEvent } from "@wick-agent/sdk";
import { afterEach, describe, expect, it, vi } from "vitest";

import { applyEvents, emptyChat } from "../state/chat";
import { Chat } from "./Chat";

afterEach(cleanup);

const base = { run_id: "r1", thread_id: "t1" };
const thinking: WickEvent[] = [
  { ...base, id: "1-0", event: "on_run_start", data: { run_id: "r1", thread_id: "t1", agent_id: "a" } },
  { ...base, id: "1-1", event: "on_thought_stream", data: { delta: "The user wants the file; " } },
  { ...base, id: "1-2", event: "on_thought_stream", data: { delta: "read it first." } },
];
const answered: WickEvent[] = [
  ...thinking,
  { ...base, id: "1-3", event: "on_chat_model_stream", data: { delta: "It says hello." } },
  { ...base, id: "1-4", event: "done", data: { stop_reason: "completed" } },
];

function show(events: WickEvent[]) {
  const chat = applyEvents(emptyChat, events, 0);
  render(<Chat chat={chat} loading={false} running={false} disabled={false} placeholder="" onSend={vi.fn()} onStop={vi.fn()} onCancel={vi.fn()} onContinue={vi.fn()} onDecide={vi.fn()} onError={vi.fn()} />);
}

describe("ThoughtBlock", () => {
  it("is open and says Thinking while the thought streams", () => {
    show(thinking);
    const block = screen.getByTestId("thought");
    expect(block).toHaveProperty("open", true);
    expect(block.textContent).toContain("Thinking…");
    expect(screen.getByTestId("thought-text").textContent).toBe("The user wants the file; read it first.");
  });

  it("folds once the answer follows, and keeps the thought out of the answer", () => {
    show(answered);
    const block = screen.getByTestId("thought");
    expect(block).toHaveProperty("open", false);
    expect(block.querySelector("summary")?.textContent).toBe("Thought");
    const replies = screen.getAllByTestId("message").filter((m) => m.dataset.role === "assistant");
    expect(replies.map((r) => r.textContent)).toEqual(["It says hello."]);
  });
});
