// A small reader of Server-Sent Events for the config feed (GET
// /agents/events): the SDK parses run streams but exposes no reader of
// other feeds.

export interface SSEMessage {
  id?: string;
  event: string;
  data: string;
}

/** The longest event held while it arrives; the config feed's are small. */
export const MAX_SSE_EVENT_CHARS = 1 << 20;

/**
 * parseSSE yields the messages of an SSE body as they complete (comments
 * and retry fields skipped; an event cut off by the end is dropped).
 */
export async function* parseSSE(body: ReadableStream<Uint8Array>, maxChars = MAX_SSE_EVENT_CHARS): AsyncGenerator<SSEMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let id: string | undefined;
  let event = "";
  let data: string[] = [];
  let held = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (data.length > 0) yield { ...(id !== undefined ? { id } : {}), event: event || "message", data: data.join("\n") };
          event = "";
          data = [];
          held = 0;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        held += value.length;
        if (held > maxChars) throw new Error(`event stream: an event is longer than ${maxChars} characters`);
        if (field === "data") data.push(value);
        else if (field === "event") event = value;
        else if (field === "id") id = value;
      }
      if (buf.length > maxChars) throw new Error(`event stream: a line is longer than ${maxChars} characters`);
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
