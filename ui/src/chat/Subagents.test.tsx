// A task call's card shows the sub-agents it started, nested: each with its
// task, its status, and its own messages and tool cards.
import { cleanup, render, screen, within } from "@testing-library/react";
import type { WickEvent } from "@wick-agent/sdk";
import { afterEach, describe, expect, it } from "vitest";

import { applyEvents, emptyChat, type ToolItem } from "../state/chat";
import { ToolCard } from "./Items";

afterEach(cleanup);

const base = { run_id: "r1", thread_id: "t1" };
const tags = { name: "researcher", run_id: "rc", thread_id: "th_sub_1", parent_run_id: "r1", tool_call_id: "t1", depth: 1 };
const events: WickEvent[] = [
  { ...base, id: "1-0", event: "on_run_start", data: { run_id: "r1", thread_id: "t1", agent_id: "a" } },
  { ...base, id: "1-1", name: "task", event: "on_tool_start", data: { tool_call_id: "t1", args: { subagent_type: "researcher", description: "find it" } } },
  { ...base, id: "1-2", name: "researcher", event: "on_subagent_start", data: { ...tags, description: "find it" } },
  { ...base, id: "1-3", name: "researcher", event: "on_subagent_event", data: { ...tags, event: { event: "on_chat_model_stream", data: { delta: "Found it." } } } },
  { ...base, id: "1-4", name: "researcher", event: "on_subagent_event", data: { ...tags, event: { event: "on_tool_start", name: "calculate", data: { tool_call_id: "c1", args: {} } } } },
  { ...base, id: "1-5", name: "researcher", event: "on_subagent_event", data: { ...tags, event: { event: "on_tool_end", name: "calculate", data: { tool_call_id: "c1", output: "42" } } } },
  { ...base, id: "1-6", name: "researcher", event: "on_subagent_end", data: { ...tags, status: "completed" } },
  { ...base, id: "1-7", name: "task", event: "on_tool_end", data: { tool_call_id: "t1", output: "Found it." } },
];

describe("sub-agents in the task card", () => {
  it("shows the sub-agent, its reply and its tool cards nested", () => {
    const chat = applyEvents(emptyChat, events, 0);
    const task = chat.items.find((it): it is ToolItem => it.kind === "tool")!;
    render(<ToolCard item={task} />);
    const sub = screen.getByTestId("subagent");
    expect(sub.dataset.name).toBe("researcher");
    expect(sub.dataset.status).toBe("completed");
    expect(within(sub).getByText("find it")).toBeTruthy();
    expect(within(sub).getByTestId("message-text").textContent).toContain("Found it.");
    const nested = within(sub).getAllByTestId("tool-card");
    expect(nested.map((c) => c.dataset.toolName)).toEqual(["calculate"]);
    // Only the task's own card is at the top.
    expect(screen.getAllByTestId("tool-card")).toHaveLength(2);
  });
});
