import { WickError, parseErrorBody } from "./errors.js";
import { isTerminal, toEvent, type WickEvent } from "./events.js";
import { ConnectionLost, messages } from "./sse.js";

/** How a stream re-joins its run after losing its connection. */
export interface ReconnectOptions {
  /** Re-join attempts in a row before the stream fails; an event received resets the count. Default 5. */
  maxAttempts?: number;
  /** The wait before the first attempt, doubled for each next one. Default 250 ms. */
  initialDelayMs?: number;
  /** The longest wait between attempts. Default 5000 ms. */
  maxDelayMs?: number;
}

/** Defaults of a stream. */
export const DEFAULT_RECONNECT: Required<ReconnectOptions> = { maxAttempts: 5, initialDelayMs: 250, maxDelayMs: 5000 };
/** The most characters of an SSE event a stream holds while it arrives (a tool's whole output travels in one event). */
export const DEFAULT_MAX_EVENT_CHARS = 16 << 20;
/** How long abandoning a run may wait for its cancellation. */
export const CANCEL_TIMEOUT_MS = 5000;

/** What a RunStream needs from the client. */
export interface StreamTransport {
  /** Opens the run's event stream after the event id after ("" from the start); throws WickError for an error status. */
  join(runId: string, after: string, signal: AbortSignal): Promise<Response>;
  /** Cancels the run. */
  cancel(runId: string, signal: AbortSignal): Promise<unknown>;
}

/** How a RunStream behaves; the client fills it from its options and the call's. */
export interface RunStreamConfig {
  /** Opens the first connection: the POST that starts the run, or the first re-join. */
  open(signal: AbortSignal): Promise<Response>;
  /** The run, when known before the first event (join). */
  runId?: string;
  /** The event id the stream starts after (join). */
  after?: string;
  signal?: AbortSignal;
  reconnect: Required<ReconnectOptions> | false;
  /** Cancel the run when the stream is abandoned before the run's end (aborted, left early, failed). */
  cancelOnAbandon: boolean;
  maxEventChars: number;
}

/**
 * RunStream is the event stream of one run, as an async iterable of typed
 * events that ends after the run's last event ("done" or "error").
 *
 * When the connection drops, it re-joins the run (GET
 * /runs/{run_id}/events with Last-Event-ID) after the last event it
 * yielded, so that no event is lost or repeated. Aborting its signal ends
 * the iteration with the signal's reason. It can be iterated once.
 */
export class RunStream implements AsyncIterable<WickEvent> {
  #transport: StreamTransport;
  #cfg: RunStreamConfig;
  #started = false;
  #runId: string | undefined;
  #threadId: string | undefined;
  #lastEventId: string;
  #reconnects = 0;

  constructor(transport: StreamTransport, cfg: RunStreamConfig) {
    this.#transport = transport;
    this.#cfg = cfg;
    this.#runId = cfg.runId;
    this.#lastEventId = cfg.after ?? "";
  }

  /** The run's id, known from its first event on. */
  get runId(): string | undefined {
    return this.#runId;
  }

  /** The run's thread, known from its first event on. */
  get threadId(): string | undefined {
    return this.#threadId;
  }

  /** The id of the last event yielded: where a re-join resumes. */
  get lastEventId(): string {
    return this.#lastEventId;
  }

  /** How many times the stream re-joined its run after losing its connection. */
  get reconnects(): number {
    return this.#reconnects;
  }

  /** Cancels the run (POST /runs/{run_id}/cancel); the stream then ends with an "error" event whose code is "cancelled". */
  async cancel(signal?: AbortSignal): Promise<void> {
    if (this.#runId === undefined) {
      throw new Error("the run's id is not known before its first event");
    }
    await this.#transport.cancel(this.#runId, signal ?? AbortSignal.timeout(CANCEL_TIMEOUT_MS));
  }

  /** Collects every event until the run's end. */
  async toArray(): Promise<WickEvent[]> {
    const out: WickEvent[] = [];
    for await (const ev of this) out.push(ev);
    return out;
  }

  [Symbol.asyncIterator](): AsyncIterator<WickEvent> {
    if (this.#started) {
      throw new Error("a RunStream can be iterated once");
    }
    this.#started = true;
    return this.#events();
  }

  async *#events(): AsyncGenerator<WickEvent> {
    const cfg = this.#cfg;
    const user = cfg.signal;
    user?.throwIfAborted();
    // One controller per connection, so that ending a connection never
    // ends the next; the user's signal aborts the current one.
    let conn = new AbortController();
    const onAbort = () => conn.abort(user?.reason);
    user?.addEventListener("abort", onAbort);
    let ended = false;
    try {
      let res: Response | undefined = await aborting(cfg.open(conn.signal), user);
      let attempts = 0;
      let lost: unknown;
      for (;;) {
        if (res) {
          try {
            for await (const ev of this.#read(res)) {
              attempts = 0;
              yield ev;
              if (isTerminal(ev)) {
                ended = true;
                return;
              }
            }
            lost = new ConnectionLost("the event stream ended before the run did");
          } catch (err) {
            user?.throwIfAborted();
            if (!(err instanceof ConnectionLost)) throw err;
            lost = err;
          }
        }
        // The connection is gone: re-join the run after the last event.
        user?.throwIfAborted();
        if (!cfg.reconnect || this.#runId === undefined) throw lost;
        if (attempts >= cfg.reconnect.maxAttempts) {
          throw new ConnectionLost(`the run's event stream was lost and ${attempts} re-joins failed`, { cause: lost });
        }
        await sleep(Math.min(cfg.reconnect.initialDelayMs * 2 ** attempts, cfg.reconnect.maxDelayMs), user);
        attempts++;
        conn = new AbortController();
        try {
          res = await aborting(this.#transport.join(this.#runId, this.#lastEventId, conn.signal), user);
          this.#reconnects++;
        } catch (err) {
          if (!retryable(err)) throw err;
          res = undefined;
          lost = err;
        }
      }
    } finally {
      user?.removeEventListener("abort", onAbort);
      conn.abort();
      if (!ended && cfg.cancelOnAbandon && this.#runId !== undefined) {
        // The run outlives a dropped connection only so that it can be
        // re-joined; a stream given up on takes its run with it.
        await this.#transport.cancel(this.#runId, AbortSignal.timeout(CANCEL_TIMEOUT_MS)).catch(() => {});
      }
    }
  }

  async *#read(res: Response): AsyncGenerator<WickEvent> {
    if (!res.body) {
      throw new ConnectionLost("the event stream has no body");
    }
    for await (const m of messages(res.body, this.#cfg.maxEventChars)) {
      const kind = m.event ?? "message";
      if (kind === "error" && m.id === undefined) {
        // The stream failed (not the run): the frame is an error body.
        const body = parseErrorBody(m.data);
        throw body ? WickError.fromBody(body) : new Error(`event stream: malformed error frame: ${m.data.slice(0, 200)}`);
      }
      let wire: unknown;
      try {
        wire = JSON.parse(m.data);
      } catch (err) {
        throw new Error(`event stream: event ${m.id ?? "?"} is not JSON`, { cause: err });
      }
      if (typeof wire !== "object" || wire === null) {
        throw new Error(`event stream: event ${m.id ?? "?"} is not a JSON object`);
      }
      const ev = toEvent(wire as Record<string, unknown>, kind, m.id ?? "");
      this.#runId ??= ev.run_id;
      this.#threadId ??= ev.thread_id;
      if (ev.id !== "") this.#lastEventId = ev.id;
      yield ev;
    }
  }
}

// retryable reports whether a failed re-join may succeed later: the
// connection failed, or the server was unavailable for a moment.
function retryable(err: unknown): boolean {
  if (err instanceof WickError) {
    return err.status === 429 || err.status === 502 || err.status === 503 || err.status === 504;
  }
  // fetch rejects with a TypeError when the connection fails.
  return err instanceof TypeError;
}

// aborting is p, except that it rejects with the reason of signal when
// that is what failed it: fetch's own abort error does not carry it.
async function aborting<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  try {
    return await p;
  } catch (err) {
    signal?.throwIfAborted();
    throw err;
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
