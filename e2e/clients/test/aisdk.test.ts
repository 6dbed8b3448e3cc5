// The Vercel AI SDK's chat protocol, read by the `ai` package itself: its
// DefaultChatTransport sends the chat and parses the SSE stream, its
// readUIMessageStream assembles the chunks into the assistant message.
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from "ai";
import { describe, expect, it } from "vitest";

import { headers, url } from "./helpers.js";

type Meta = { runId?: string; threadId?: string; usage?: { inputTokens: number; outputTokens: number; totalTokens: number } };
type Msg = UIMessage<Meta>;

function chatURL(agent: string): string {
  return `${url}/ai-sdk/agents/${agent}/chat`;
}

function transport(agent: string, user: "alice" | "bob" = "alice"): DefaultChatTransport<Msg> {
  return new DefaultChatTransport<Msg>({ api: chatURL(agent), headers: headers(user) });
}

function userMessage(text: string, extra: Msg["parts"] = []): Msg {
  return { id: `u-${Math.random().toString(36).slice(2)}`, role: "user", parts: [...extra, { type: "text", text }] };
}

let chats = 0;
function chatId(): string {
  chats++;
  return `aisdk-chat-${Date.now()}-${chats}`;
}

/** send posts the chat as useChat would and returns the assembled assistant message. */
async function send(agent: string, chat: string, messages: Msg[], user: "alice" | "bob" = "alice"): Promise<Msg> {
  const stream = await transport(agent, user).sendMessages({
    chatId: chat,
    messages,
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
  });
  const last = messages.at(-1);
  let out: Msg | undefined;
  const errors: unknown[] = [];
  for await (const m of readUIMessageStream<Msg>({
    stream,
    message: last?.role === "assistant" ? last : undefined,
    onError: (e) => errors.push(e),
    terminateOnError: true,
  })) {
    out = m;
  }
  expect(errors).toEqual([]);
  if (!out) throw new Error("the stream assembled no message");
  return structuredClone(out);
}

function text(m: Msg): string {
  return m.parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("");
}

type WickMessage = { role: string; content?: string; tool_calls?: { id: string; name: string; args?: unknown }[]; tool_call_id?: string };

async function wick<T>(method: string, path: string, body?: unknown, user: "alice" | "bob" = "alice"): Promise<{ status: number; body: T }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...headers(user), "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

describe("AI SDK UI message stream", () => {
  it("assembles the same message as Wick's own API: text and a tool part", async () => {
    const question = "Write the note.";
    const msg = await send("aisdk-tools", chatId(), [userMessage(question)]);

    const own = await wick<{ messages: WickMessage[]; content: string }>("POST", "/agents/aisdk-tools/invoke", {
      messages: [{ role: "user", content: question }],
    });
    expect(own.status).toBe(200);
    const call = own.body.messages.flatMap((m) => m.tool_calls ?? [])[0];
    const result = own.body.messages.find((m) => m.role === "tool");
    expect(call?.name).toBe("write_file");

    const tools = msg.parts.filter((p) => p.type === "dynamic-tool");
    expect(tools).toHaveLength(1);
    const tool = tools[0]!;
    expect(tool.type === "dynamic-tool" && tool.toolName).toBe(call!.name);
    expect(tool.state).toBe("output-available");
    expect(tool.input).toEqual(call!.args);
    expect(tool.state === "output-available" && tool.output).toBe(result?.content);
    // The text of every assistant turn, in order, around the tool part.
    const ownText = own.body.messages.filter((m) => m.role === "assistant").map((m) => m.content ?? "").join("");
    expect(text(msg)).toBe(ownText);
    expect(text(msg)).toContain("The note is written.");
    expect(msg.parts.map((p) => p.type)).toEqual(["step-start", "text", "dynamic-tool", "step-start", "text"]);
    expect(msg.metadata?.runId).toMatch(/^run_/);
    expect(msg.metadata?.usage?.totalTokens).toBeGreaterThan(0);
  });

  it("answers with the stream header and ends with [DONE]", async () => {
    const res = await fetch(chatURL("default"), {
      method: "POST",
      headers: { ...headers("alice"), "content-type": "application/json" },
      body: JSON.stringify({ id: chatId(), messages: [userMessage("Hi")], trigger: "submit-message" }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const body = await res.text();
    expect(body.trimEnd().endsWith("data: [DONE]")).toBe(true);
  });

  it("continues the chat's thread, and another user's request with its id does not see it", async () => {
    const chat = chatId();
    const first = await send("default", chat, [userMessage("One")]);
    const msgs: Msg[] = [userMessage("One"), first, userMessage("Two")];
    const second = await send("default", chat, msgs);
    expect(second.metadata?.threadId).toBe(chat);
    const thread = await wick<{ thread: { messages: WickMessage[] } }>("GET", `/threads/${chat}`);
    expect(thread.body.thread.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["One", "Two"]);

    // Threads are per user: bob's chat of the same id is his own, new one.
    const bobs = await send("default", chat, [userMessage("Bob here")], "bob");
    expect(bobs.metadata?.threadId).toBe(chat);
    const again = await wick<{ thread: { messages: WickMessage[] } }>("GET", `/threads/${chat}`);
    expect(again.body.thread.messages).toEqual(thread.body.thread.messages);
    const bobThread = await wick<{ thread: { messages: WickMessage[] } }>("GET", `/threads/${chat}`, undefined, "bob");
    expect(bobThread.body.thread.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["Bob here"]);
  });

  it("maps an approval onto a tool approval request, and the response onto the run's resume", async () => {
    const chat = chatId();
    const user = userMessage("Write the file.");
    const asked = await send("aisdk-approve", chat, [user]);
    const part = asked.parts.find((p) => p.type === "dynamic-tool");
    expect(part?.state).toBe("approval-requested");
    if (part?.type !== "dynamic-tool" || part.state !== "approval-requested") throw new Error("no approval requested");
    expect(part.toolName).toBe("write_file");

    // Another user cannot answer it: the run is alice's.
    const answered: Msg = {
      ...asked,
      parts: asked.parts.map((p) =>
        p === part ? { ...part, state: "approval-responded", approval: { id: part.approval.id, approved: true } } : p,
      ),
    };
    const bob = await fetch(chatURL("aisdk-approve"), {
      method: "POST",
      headers: { ...headers("bob"), "content-type": "application/json" },
      body: JSON.stringify({ id: chat, messages: [user, answered], trigger: "submit-message" }),
    });
    expect(bob.status).toBe(404);
    expect(((await bob.json()) as { status: string }).status).toBe("NOT_FOUND");

    const done = await send("aisdk-approve", chat, [user, answered]);
    const tool = done.parts.find((p) => p.type === "dynamic-tool");
    expect(tool?.state).toBe("output-available");
    expect(done.parts.filter((p) => p.type === "dynamic-tool")).toHaveLength(1);
    expect(text(done)).toContain("Thank you: the file is written.");
    const file = await fetch(`${url}/agents/aisdk-approve/files/raw/workspace/aisdk/approved.txt`, { headers: headers("alice") });
    expect(await file.text()).toBe("approved\n");
  });

  it("writes a file part into the workspace and names it in the message", async () => {
    const chat = chatId();
    const data = `data:text/plain;base64,${Buffer.from("attached text\n").toString("base64")}`;
    await send("default", chat, [userMessage("Read the attachment.", [{ type: "file", mediaType: "text/plain", filename: "notes.txt", url: data }])]);
    const file = await fetch(`${url}/agents/default/files/raw/workspace/uploads/${chat}/notes.txt`, { headers: headers("alice") });
    expect(file.status).toBe(200);
    expect(await file.text()).toBe("attached text\n");
    const thread = await wick<{ thread: { messages: WickMessage[] } }>("GET", `/threads/${chat}`);
    expect(thread.body.thread.messages[0]?.content).toContain(`/workspace/uploads/${chat}/notes.txt`);
  });

  it("answers bad requests in JSON", async () => {
    const post = (agent: string, body: string) =>
      fetch(chatURL(agent), { method: "POST", headers: { ...headers("alice"), "content-type": "application/json" }, body });
    for (const [agent, body, status] of [
      ["no-such-agent", JSON.stringify({ id: chatId(), messages: [userMessage("Hi")] }), 404],
      ["default", "{not json", 400],
      ["default", JSON.stringify({ messages: [userMessage("Hi")] }), 400],
      ["default", JSON.stringify({ id: chatId(), messages: [] }), 400],
      ["default", JSON.stringify({ id: chatId(), messages: [userMessage("Hi")], trigger: "regenerate-message" }), 400],
      ["default", JSON.stringify({ id: "not a valid id!", messages: [userMessage("Hi")] }), 400],
    ] as const) {
      const res = await post(agent, body);
      expect(res.status, `${agent} ${body}`).toBe(status);
      expect(res.headers.get("content-type")).toBe("application/json");
      const b = (await res.json()) as { message: string };
      expect(b.message).toBeTruthy();
    }
    const anon = await fetch(chatURL("default"), { method: "POST", body: "{}" });
    expect(anon.status).toBe(401);
  });
});
