import { describe, expect, test } from "vitest";

import { answer, type WickEvent } from "../src/index.js";
import { client, userMessage } from "./helpers.js";

const alice = client("alice");

describe("run control", () => {
  test("stopRun ends a run after its step; continueRun finishes it", async () => {
    const s = alice.stream("step", userMessage("go"));
    let stopped = false;
    const seen: WickEvent[] = [];
    for await (const ev of s) {
      seen.push(ev);
      if (!stopped && ev.event === "on_chat_model_stream") {
        stopped = true;
        await alice.stopRun(s.runId!);
      }
    }
    expect(seen.at(-1)).toMatchObject({ event: "done", data: { stop_reason: "stopped" } });
    expect(seen.some((ev) => ev.event === "on_tool_end")).toBe(true);
    const { data: run } = await alice.api.GET("/runs/{run_id}", { params: { path: { run_id: s.runId! } } });
    expect(run?.run?.status).toBe("stopped");

    const next = await alice.continueRun(s.runId!);
    const runId = next?.run?.run_id;
    expect(runId).toBeTruthy();
    const events = await alice.join(runId!).toArray();
    expect(events.at(-1)).toMatchObject({ event: "done", data: { stop_reason: "completed" } });

    await expect(alice.continueRun(runId!)).rejects.toMatchObject({ code: "FAILED_PRECONDITION" });
  });

  test("a question is answered through resumeRun", async () => {
    const s = alice.stream("ask", userMessage("paint it"));
    const seen: WickEvent[] = [];
    for await (const ev of s) {
      seen.push(ev);
      if (ev.event === "on_interrupt" && ev.data.kind === "question") {
        expect(ev.data.question).toBe("Which colour?");
        expect(ev.data.choices).toEqual(["red", "blue"]);
        await alice.resumeRun(s.runId!, [answer(ev.data.tool_call_id!, "blue")]);
      }
    }
    const end = seen.find((ev) => ev.event === "on_tool_end");
    expect(end?.event === "on_tool_end" && end.data.output).toBe("blue");
    expect(seen.at(-1)).toMatchObject({ event: "done", data: { stop_reason: "completed" } });
  });
});

describe("background tasks", () => {
  test("a thread lists its tasks; an unknown task is NOT_FOUND", async () => {
    const s = alice.stream("default", userMessage("hi"));
    await s.toArray();
    expect(await alice.listTasks(s.threadId!)).toEqual([]);
    await expect(alice.getTask("task_missing")).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(alice.cancelTask("task_missing")).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});
