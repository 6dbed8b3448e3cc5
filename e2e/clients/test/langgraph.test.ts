import { Client } from "@langchain/langgraph-sdk";
import { describe, expect, it } from "vitest";

import { headers, token, url } from "./helpers.js";

// LangGraph's Agent Server API at /langgraph, driven by its own SDK.
const apiUrl = `${url}/langgraph`;
const client = (user: "alice" | "bob" = "alice") =>
  new Client({ apiUrl, apiKey: token(user), callerOptions: { maxRetries: 0 } });

type Msg = { type: string; content: string; id?: string; tool_calls?: { name: string; id: string }[] };
type Part = { event: string; data: unknown; id?: string };

async function collect(stream: AsyncIterable<Part>): Promise<Part[]> {
  const parts: Part[] = [];
  for await (const p of stream) parts.push(p);
  return parts;
}

/** text assembles the model's reply from messages-tuple chunks, by message id. */
function text(parts: Part[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of parts) {
    if (p.event !== "messages") continue;
    const [chunk] = p.data as [Msg, unknown];
    if (chunk.type !== "AIMessageChunk") continue;
    out.set(chunk.id!, (out.get(chunk.id!) ?? "") + chunk.content);
  }
  return out;
}

/** lastValues is the messages of the last values event. */
function lastValues(parts: Part[]): Msg[] {
  const v = parts.filter((p) => p.event === "values").at(-1);
  return (v?.data as { messages: Msg[] }).messages;
}

/** wickInvoke is Wick's own API's reply to a message on a new thread. */
async function wickInvoke(agent: string, message: string): Promise<string> {
  const res = await fetch(`${url}/agents/${agent}/invoke`, {
    method: "POST",
    headers: { ...headers("alice"), "Content-Type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: message }] }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { content: string }).content;
}

describe("LangGraph Agent Server API", () => {
  it("lists each agent as an assistant, and answers info", async () => {
    const c = client();
    const list = await c.assistants.search({ limit: 100 });
    const ids = list.map((a) => a.assistant_id);
    expect(ids).toContain("default");
    expect(ids).toContain("langgraph-approve");
    const a = await c.assistants.get("default");
    expect(a.graph_id).toBe("default");
    const graph = await c.assistants.getGraph("default");
    expect(graph.nodes.map((n) => n.id)).toEqual(["__start__", "agent", "tools", "__end__"]);
    const info = await fetch(`${apiUrl}/info`, { headers: { "x-api-key": token("alice") } });
    expect(info.status).toBe(200);
  });

  it("streams a run on a thread in messages-tuple and values: the reply Wick's API gives", async () => {
    const c = client();
    const th = await c.threads.create();
    const parts = await collect(
      c.runs.stream(th.thread_id, "default", {
        input: { messages: [{ type: "human", content: "hi" }] },
        streamMode: ["messages-tuple", "values"],
      }) as AsyncIterable<Part>,
    );
    expect(parts[0]!.event).toBe("metadata");
    const streamed = [...text(parts).values()].join("");
    const expected = await wickInvoke("default", "hi");
    expect(streamed).toBe(expected);
    const final = lastValues(parts);
    expect(final.map((m) => m.type)).toEqual(["human", "ai"]);
    expect(final[1]!.content).toBe(expected);
    // The chunks' message id is the id the state gives the message.
    expect([...text(parts).keys()]).toEqual([final[1]!.id]);

    const state = await c.threads.getState<{ messages: Msg[] }>(th.thread_id);
    expect(state.values.messages.at(-1)?.content).toBe(expected);
    const got = await c.threads.get(th.thread_id);
    expect(got.status).toBe("idle");
    const found = await c.threads.search({ metadata: { graph_id: "default" }, limit: 100 });
    expect(found.map((t) => t.thread_id)).toContain(th.thread_id);
    const history = await c.threads.getHistory(th.thread_id);
    expect(history).toHaveLength(1);

    await c.threads.delete(th.thread_id);
    await expect(c.threads.get(th.thread_id)).rejects.toThrow(/404/);
  });

  it("runs statelessly with wait", async () => {
    const c = client();
    const out = (await c.runs.wait(null, "default", { input: { messages: [{ role: "user", content: "hello" }] } })) as {
      messages: Msg[];
    };
    expect(out.messages.at(-1)?.type).toBe("ai");
    expect(out.messages.at(-1)?.content).toBe(await wickInvoke("default", "hello"));
  });

  it("interrupts for an approval and resumes with a Command", async () => {
    const c = client();
    const th = await c.threads.create();
    const first = await collect(
      c.runs.stream(th.thread_id, "langgraph-approve", {
        input: { messages: [{ type: "human", content: "write it" }] },
        streamMode: ["values", "updates"],
      }) as AsyncIterable<Part>,
    );
    const upd = first.find((p) => p.event === "updates" && "__interrupt__" in (p.data as object));
    expect(upd).toBeDefined();
    const [intr] = (upd!.data as { __interrupt__: { id: string; value: { action_requests: { name: string }[] } }[] })
      .__interrupt__;
    expect(intr!.value.action_requests[0]!.name).toBe("write_file");
    const t = await c.threads.get(th.thread_id);
    expect(t.status).toBe("interrupted");

    const second = await collect(
      c.runs.stream(th.thread_id, "langgraph-approve", {
        command: { resume: { decisions: [{ type: "approve" }] } },
        streamMode: ["values", "messages-tuple"],
      }) as AsyncIterable<Part>,
    );
    const final = lastValues(second);
    expect(final.map((m) => m.type)).toEqual(["human", "ai", "tool", "ai"]);
    expect(final[1]!.tool_calls?.[0]?.name).toBe("write_file");
    expect(final.at(-1)?.content).toBe("The file is written.");
  });

  it("answers an ask_user question with a Command keyed by the interrupt's id", async () => {
    const c = client();
    const th = await c.threads.create();
    const first = await collect(
      c.runs.stream(th.thread_id, "langgraph-ask", { input: { messages: [{ type: "human", content: "ask me" }] } }) as AsyncIterable<Part>,
    );
    const v = first.filter((p) => p.event === "values").at(-1)!.data as {
      __interrupt__: { id: string; value: { question: string; choices: string[] } }[];
    };
    expect(v.__interrupt__[0]!.value).toMatchObject({ question: "Which colour?", choices: ["red", "blue"] });
    const out = (await c.runs.wait(th.thread_id, "langgraph-ask", {
      command: { resume: { [v.__interrupt__[0]!.id]: "blue" } },
    })) as { messages: Msg[] };
    expect(out.messages.find((m) => m.type === "tool")?.content).toContain("blue");
    expect(out.messages.at(-1)?.content).toBe("Thanks for answering.");
  });

  it("cancels a run and re-joins a run's stream from Last-Event-ID", async () => {
    const c = client();
    const th = await c.threads.create();
    let runId = "";
    const parts: Part[] = [];
    const stream = c.runs.stream(th.thread_id, "langgraph-slow", {
      input: { messages: [{ type: "human", content: "go" }] },
      streamMode: ["messages-tuple"],
      onDisconnect: "continue",
      onRunCreated: (m) => {
        runId = m.run_id;
      },
    }) as AsyncIterable<Part>;
    for await (const p of stream) {
      parts.push(p);
      if (parts.filter((x) => x.event === "messages").length >= 5) break;
    }
    expect(runId).not.toBe("");
    const lastId = parts.filter((p) => p.id).at(-1)!.id!;
    // Re-join after the last event seen: the rest of the reply, without repeats.
    const rest = await collect(
      c.runs.joinStream(th.thread_id, runId, { lastEventId: lastId, streamMode: ["messages-tuple"] }) as AsyncIterable<Part>,
    );
    const whole = [...text(parts).values()].join("") + [...text(rest).values()].join("");
    expect(whole).toBe(await wickInvoke("langgraph-slow", "go"));

    // A second run, cancelled mid-stream.
    let run2 = "";
    const s2 = c.runs.stream(th.thread_id, "langgraph-slow", {
      input: { messages: [{ type: "human", content: "again" }] },
      streamMode: ["messages-tuple"],
      onRunCreated: (m) => {
        run2 = m.run_id;
      },
    }) as AsyncIterable<Part>;
    const got: Part[] = [];
    let cancelled = false;
    for await (const p of s2) {
      got.push(p);
      if (!cancelled && got.filter((x) => x.event === "messages").length >= 3) {
        cancelled = true;
        await c.runs.cancel(th.thread_id, run2);
      }
    }
    expect(got.at(-1)?.event).toBe("error");
    const run = await c.runs.get(th.thread_id, run2);
    expect(run.status).toBe("interrupted");
  });

  it("answers unknown and another user's ids with 404 in LangGraph's shape", async () => {
    const th = await client().threads.create();
    await collect(
      client().runs.stream(th.thread_id, "default", { input: { messages: [{ type: "human", content: "mine" }] } }) as AsyncIterable<Part>,
    );
    for (const path of [`/threads/${th.thread_id}`, `/threads/${th.thread_id}/state`, "/assistants/nope", "/threads/nope/runs/run_nope"]) {
      const user = path.startsWith("/threads/nope") || path === "/assistants/nope" ? "alice" : "bob";
      const res = await fetch(`${apiUrl}${path}`, { headers: { "x-api-key": token(user) } });
      expect(res.status, path).toBe(404);
      expect(Object.keys(await res.json())).toEqual(["detail"]);
    }
    await expect(
      client("bob").runs.wait(null, "nope", { input: { messages: [{ type: "human", content: "x" }] } }),
    ).rejects.toThrow(/404/);
  });
});
