import { createParser, type EventSourceMessage, type ParseError } from "eventsource-parser";

/**
 * ConnectionLost is a stream that ended before its run did: the
 * connection failed, or the server closed it without a final event. It is
 * the one failure a re-join repairs.
 */
export class ConnectionLost extends Error {
  override readonly name = "ConnectionLost";
}

/**
 * messages yields the SSE messages of body as they complete. Comment
 * frames (the gateway's `: ping` heartbeats) are skipped by the parser, and
 * an event cut off by the end of the body is never yielded. A failed read
 * is thrown as ConnectionLost; holding more than maxChars of a message
 * still arriving fails the stream. Leaving the loop early cancels the body.
 */
export async function* messages(body: ReadableStream<Uint8Array>, maxChars: number): AsyncGenerator<EventSourceMessage> {
  const queue: EventSourceMessage[] = [];
  let tooLong: ParseError | undefined;
  const parser = createParser({
    onEvent: (m) => queue.push(m),
    onError: (err) => {
      if (err.type === "max-buffer-size-exceeded") tooLong = err;
    },
    maxBufferSize: maxChars,
  });
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (err) {
        throw new ConnectionLost("the event stream's connection failed", { cause: err });
      }
      if (chunk.done) {
        return;
      }
      parser.feed(decoder.decode(chunk.value, { stream: true }));
      if (tooLong) {
        throw new Error(`event stream: an event is longer than the limit of ${maxChars} characters`, { cause: tooLong });
      }
      // Events are taken off the queue one by one so that a consumer that
      // stops early has not been handed the rest.
      let m: EventSourceMessage | undefined;
      while ((m = queue.shift())) {
        yield m;
      }
    }
  } finally {
    // Frees the connection when the consumer stops before the end; a
    // stream that already failed rejects, which changes nothing.
    reader.cancel().catch(() => {});
  }
}
