import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import type { Wick } from "@wick-agent/sdk";
import { afterEach, describe, expect, it, vi } from "vitest";

import { TasksPanel, type Task } from "./TasksPanel";

afterEach(cleanup);

function fakeClient(tasks: Task[]) {
  const listTasks = vi.fn(async () => tasks.map((t) => ({ ...t })));
  const cancelTask = vi.fn(async (id: string) => {
    const t = tasks.find((x) => x.task_id === id);
    if (t) Object.assign(t, { status: "cancelled", result: "cancelled by the user" });
    return t;
  });
  return { client: { listTasks, cancelTask } as unknown as Wick, listTasks, cancelTask };
}

describe("TasksPanel", () => {
  it("lists the thread's tasks with their state and cancels a running one", async () => {
    const { client, listTasks, cancelTask } = fakeClient([
      { task_id: "task_1", tool: "render", status: "running", attempts: 2 },
      { task_id: "task_2", tool: "fetch", status: "done", result: "42 rows", attempts: 1 },
    ]);
    render(<TasksPanel client={client} threadId="th_1" running={false} onError={vi.fn()} />);
    const items = await screen.findAllByTestId("task-item");
    expect(listTasks).toHaveBeenCalledWith("th_1");
    expect(items.map((i) => i.dataset.status)).toEqual(["running", "done"]);
    expect(items[0]?.textContent).toContain("attempt 2");
    expect(items[1]?.textContent).toContain("42 rows");

    fireEvent.click(screen.getByTestId("task-cancel"));
    await waitFor(() => expect(screen.getAllByTestId("task-item")[0]?.dataset.status).toBe("cancelled"));
    expect(cancelTask).toHaveBeenCalledWith("task_1");
    expect(screen.queryByTestId("task-cancel")).toBeNull();
  });

  it("says so when the thread has none", async () => {
    const { client } = fakeClient([]);
    render(<TasksPanel client={client} threadId="th_1" running={false} onError={vi.fn()} />);
    await screen.findByText(/No background tasks/);
  });
});
