import { describe, expect, it } from "vitest";

import { parseSSE } from "./sse";

function body(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const ch of chunks) c.enqueue(enc.encode(ch));
      c.close();
    },
  });
}

async function all(chunks: string[], max?: number) {
  const out = [];
  for await (const m of parseSSE(body(chunks), max)) out.push(m);
  return out;
}

describe("parseSSE", () => {
  it("parses frames split anywhere, skips comments, drops a cut-off frame", async () => {
    const got = await all([": ping\n\nid: 1\nevent: sub", "scribed\ndata: {}\n\n", "id: 2\r\nevent: agent_created\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n", "event: cut\ndata: x"]);
    expect(got).toEqual([
      { id: "1", event: "subscribed", data: "{}" },
      { id: "2", event: "agent_created", data: '{"a":\n1}' },
    ]);
  });

  it("refuses an event over the limit", async () => {
    await expect(all(["data: " + "x".repeat(100) + "\n\n"], 10)).rejects.toThrow(/longer than 10/);
  });
});
