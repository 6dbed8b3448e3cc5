import createClient, { type Client } from "openapi-fetch";

import { WickError } from "./errors.js";
import type { Decision } from "./events.js";
import type { paths } from "./gen/wick.js";
import { Knowledge } from "./knowledge.js";
import {
  DEFAULT_MAX_EVENT_CHARS,
  DEFAULT_RECONNECT,
  RunStream,
  type ReconnectOptions,
  type StreamTransport,
} from "./stream.js";
import { Terminal, checkSize, closeError, type TerminalOptions, type WebSocketConstructor } from "./terminal.js";

/** A bearer token, or a function that returns the current one (called for every request). */
export type TokenSource = string | (() => string | Promise<string>);

/** Options of a Wick client. */
export interface WickOptions {
  /** The gateway's URL, e.g. "http://localhost:8000". */
  baseUrl: string;
  /** The bearer token; none for a gateway without tokens. */
  token?: TokenSource;
  /** The fetch to use (default: the global fetch). */
  fetch?: (input: Request) => Promise<Response>;
  /** The WebSocket class of terminals (default: the global WebSocket; on Node 20 pass `ws`'s). */
  WebSocket?: WebSocketConstructor;
  /** How streams re-join their run after a dropped connection; false never re-joins. */
  reconnect?: ReconnectOptions | false;
  /** The most characters of an SSE event held while it arrives (a tool's whole output travels in one event). Default 16 Mi. */
  maxEventChars?: number;
}

/** A message of a run's input. */
export interface InputMessage {
  /** "user" or "system". */
  role: string;
  content: string;
}

/** What starts a run (the body of POST /agents/{agent_id}/stream). */
export interface StreamRequest {
  /** The new input: "user" or "system" messages. */
  messages: InputMessage[];
  /** Continues a thread; none starts a new one. */
  thread_id?: string;
  /** Waits for a run already going on the thread instead of failing. */
  enqueue?: boolean;
  /**
   * Keeps the run going when the stream is abandoned (aborted, left early).
   * Either way the run survives a dropped connection, which the stream
   * re-joins; see StreamOptions.reconnect.
   */
  background?: boolean;
}

/** Options of one stream. */
export interface StreamOptions {
  /** Aborting it ends the iteration with the signal's reason (and cancels the run unless it is a background run). */
  signal?: AbortSignal;
  /** Overrides the client's reconnect option for this stream. */
  reconnect?: ReconnectOptions | false;
}

/** Options of Wick.join. */
export interface JoinOptions extends StreamOptions {
  /** The last event id already seen; the stream starts after it. Default: the run's first event. */
  after?: string;
}

/** The answer to an upload. */
export interface UploadResult {
  /** The file written, agent-facing ("/workspace/notes.txt"). */
  path: string;
  /** The file's size. */
  bytes_written: number;
}

/** The body of an upload. */
export type UploadBody = string | Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array>;

/**
 * Wick is a client of the Wick gateway: `api` is the client generated from
 * the OpenAPI document (every REST route, typed), and the methods cover
 * what it cannot: run streams over SSE that survive dropped connections,
 * raw file transfer and the WebSocket terminal; `knowledge` types the
 * knowledge base's routes. Every error the API answers is thrown as a
 * WickError.
 */
export class Wick {
  /** The generated REST client (openapi-fetch): `await wick.api.GET("/agents")`. An error status throws a WickError. */
  readonly api: Client<paths>;
  /** The knowledge base: collections, documents and search. */
  readonly knowledge: Knowledge;
  readonly #baseUrl: string;
  readonly #token: TokenSource | undefined;
  readonly #fetch: (input: Request) => Promise<Response>;
  readonly #WebSocket: WebSocketConstructor | undefined;
  readonly #reconnect: ReconnectOptions | false;
  readonly #maxEventChars: number;
  readonly #transport: StreamTransport;

  constructor(options: WickOptions) {
    const base = new URL(options.baseUrl);
    if (base.protocol !== "http:" && base.protocol !== "https:") {
      throw new TypeError(`baseUrl ${options.baseUrl} must be an http or https URL`);
    }
    this.#baseUrl = base.href.replace(/\/+$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((req) => globalThis.fetch(req));
    this.#WebSocket = options.WebSocket;
    this.#reconnect = options.reconnect ?? {};
    this.#maxEventChars = options.maxEventChars ?? DEFAULT_MAX_EVENT_CHARS;
    this.api = createClient<paths>({ baseUrl: this.#baseUrl, fetch: (req) => this.send(req) });
    this.knowledge = new Knowledge(this.api);
    this.#transport = {
      join: (runId, after, signal) => this.#openJoin(runId, after, signal),
      cancel: (runId, signal) => this.cancelRun(runId, { signal }),
    };
  }

  /**
   * send sends a request with the client's token and returns the response;
   * an error status is thrown as a WickError. Every call of the client goes
   * through it.
   */
  async send(req: Request): Promise<Response> {
    if (this.#token !== undefined && !req.headers.has("Authorization")) {
      req.headers.set("Authorization", `Bearer ${await this.#tokenValue()}`);
    }
    const res = await this.#fetch(req);
    if (!res.ok) {
      throw await WickError.fromResponse(res);
    }
    return res;
  }

  /**
   * stream starts a run of the agent and yields its events until the run
   * ends. A dropped connection is re-joined after the last event yielded.
   *
   * The run is sent as a background run, so that it survives a dropped
   * connection; unless request.background is true, the stream cancels it
   * when given up on (its signal aborted, the loop left early, re-joining
   * failed), as the server does for a client that goes away.
   */
  stream(agentId: string, request: StreamRequest, options: StreamOptions = {}): RunStream {
    const reconnect = this.#reconnectOf(options);
    // Without re-joins the server's own rule applies: a non-background run
    // ends when its client goes away.
    const body = { ...request, background: reconnect ? true : (request.background ?? false) };
    return new RunStream(this.#transport, {
      open: (signal) =>
        this.send(
          new Request(this.#url(`/agents/${encodeURIComponent(agentId)}/stream`), {
            method: "POST",
            headers: { Accept: "text/event-stream", "Content-Type": "application/json" },
            body: JSON.stringify(body),
            signal,
          }),
        ),
      ...(options.signal ? { signal: options.signal } : {}),
      reconnect,
      cancelOnAbandon: reconnect !== false && !request.background,
      maxEventChars: this.#maxEventChars,
    });
  }

  /**
   * join re-joins a run's events (GET /runs/{run_id}/events): those after
   * options.after (default: from the first), then live ones until the run
   * ends. Leaving it never cancels the run.
   */
  join(runId: string, options: JoinOptions = {}): RunStream {
    const after = options.after ?? "";
    return new RunStream(this.#transport, {
      open: (signal) => this.#openJoin(runId, after, signal),
      runId,
      after,
      ...(options.signal ? { signal: options.signal } : {}),
      reconnect: this.#reconnectOf(options),
      cancelOnAbandon: false,
      maxEventChars: this.#maxEventChars,
    });
  }

  /** cancelRun stops a run (POST /runs/{run_id}/cancel); its stream ends with an "error" event, code "cancelled". */
  async cancelRun(runId: string, options: { signal?: AbortSignal } = {}) {
    const { data } = await this.api.POST("/runs/{run_id}/cancel", {
      params: { path: { run_id: runId } },
      body: {},
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return data;
  }

  /**
   * stopRun asks a run to stop gracefully (POST /runs/{run_id}/stop), from
   * any replica: the step in flight (a model call and the tool round it
   * asked for) finishes and is saved, then the stream ends with a "done"
   * event, stop_reason "stopped", and the run's status is "stopped". A run
   * waiting for the user is refused (FAILED_PRECONDITION): answer it or cancel it.
   */
  async stopRun(runId: string, options: { signal?: AbortSignal } = {}) {
    const { data } = await this.api.POST("/runs/{run_id}/stop", {
      params: { path: { run_id: runId } },
      body: {},
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return data;
  }

  /**
   * continueRun starts a new run on the thread of a stopped run, without a
   * new message (POST /runs/{run_id}/continue), and returns it; follow it
   * with join(run.run_id). A run that is not stopped, or whose thread changed
   * since, is refused (FAILED_PRECONDITION).
   */
  async continueRun(runId: string, options: { signal?: AbortSignal } = {}) {
    const { data } = await this.api.POST("/runs/{run_id}/continue", {
      params: { path: { run_id: runId } },
      body: {},
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return data;
  }

  /**
   * renameThread gives a thread a title (PATCH /threads/{thread_id}) that
   * ListThreads shows instead of its first message, and returns the thread's
   * summary. The title is trimmed; empty, over 200 characters or with a
   * control character (a line break) is refused (INVALID_ARGUMENT naming
   * title). null drops the title given, so the first message titles the
   * thread again. Runs on the thread keep the title.
   */
  async renameThread(threadId: string, title: string | null, options: { signal?: AbortSignal } = {}) {
    const { data } = await this.api.PATCH("/threads/{thread_id}", {
      params: { path: { thread_id: threadId } },
      body: title === null ? { reset_title: true } : { title },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return data?.thread;
  }

  /** listTasks returns the background tasks started on a thread, oldest first (GET /threads/{thread_id}/tasks). */
  async listTasks(threadId: string, options: { signal?: AbortSignal } = {}) {
    const { data } = await this.api.GET("/threads/{thread_id}/tasks", {
      params: { path: { thread_id: threadId } },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return data?.tasks ?? [];
  }

  /**
   * getUsage returns the caller's tokens and cost by UTC day, agent and model, with this
   * month's total and the monthly budgets (GET /usage). from and to are days (YYYY-MM-DD;
   * default: this month so far); all asks for every user's usage, which only operators
   * (-operator-users) may (PERMISSION_DENIED otherwise). Counts are int64, so strings.
   */
  async getUsage(query: { from?: string; to?: string; all?: boolean } = {}, options: { signal?: AbortSignal } = {}) {
    const { data } = await this.api.GET("/usage", {
      params: { query },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return data!;
  }

  /** getTask returns a background task (GET /tasks/{task_id}); another user's is NOT_FOUND. */
  async getTask(taskId: string, options: { signal?: AbortSignal } = {}) {
    const { data } = await this.api.GET("/tasks/{task_id}", {
      params: { path: { task_id: taskId } },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return data?.task;
  }

  /**
   * cancelTask cancels a running background task (POST /tasks/{task_id}/cancel)
   * and returns it; a finished task is returned unchanged.
   */
  async cancelTask(taskId: string, options: { signal?: AbortSignal } = {}) {
    const { data } = await this.api.POST("/tasks/{task_id}/cancel", {
      params: { path: { task_id: taskId } },
      body: {},
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return data?.task;
  }

  /**
   * resumeRun decides the tool calls a run waits for (approve, reject, edit),
   * or answers its question (see answer()), through POST
   * /runs/{run_id}/resume; a pending call without a decision is rejected.
   */
  async resumeRun(runId: string, decisions: Decision[], options: { signal?: AbortSignal } = {}) {
    const { data } = await this.api.POST("/runs/{run_id}/resume", {
      params: { path: { run_id: runId } },
      body: { decisions },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return data;
  }

  /**
   * upload writes a workspace file from raw bytes (PUT
   * /agents/{agent_id}/files/raw/{path}); path is agent-facing, e.g.
   * "/workspace/data.csv". The gateway refuses a file over its upload limit
   * (100 MiB by default) with a 413 WickError, and writes nothing.
   */
  async upload(agentId: string, path: string, body: UploadBody, options: { signal?: AbortSignal } = {}): Promise<UploadResult> {
    const init: RequestInit & { duplex?: "half" } = {
      method: "PUT",
      headers: { "Content-Type": "application/octet-stream" },
      body: body as BodyInit,
      ...(options.signal ? { signal: options.signal } : {}),
    };
    if (typeof ReadableStream !== "undefined" && body instanceof ReadableStream) {
      // A streamed request body must say so (fetch's half-duplex mode).
      init.duplex = "half";
    }
    const res = await this.send(new Request(this.#rawFileURL(agentId, path), init));
    const out = (await res.json()) as { path?: string; bytes_written?: string | number };
    // bytes_written is an int64, which proto JSON writes as a string.
    return { path: out.path ?? "", bytes_written: Number(out.bytes_written ?? 0) };
  }

  /** download reads a workspace file's raw bytes (GET /agents/{agent_id}/files/raw/{path}). */
  async download(agentId: string, path: string, options: { signal?: AbortSignal } = {}): Promise<Uint8Array> {
    const res = await this.#getRaw(agentId, path, options.signal);
    return new Uint8Array(await res.arrayBuffer());
  }

  /**
   * downloadStream is download as a stream, for large files. The stream
   * fails when the transfer does: the gateway cuts the connection short of
   * Content-Length.
   */
  async downloadStream(agentId: string, path: string, options: { signal?: AbortSignal } = {}): Promise<ReadableStream<Uint8Array>> {
    const res = await this.#getRaw(agentId, path, options.signal);
    if (!res.body) {
      return new ReadableStream({ start: (c) => c.close() });
    }
    return res.body;
  }

  /**
   * terminal opens an interactive shell in the agent's sandbox over the
   * WebSocket at /agents/{agent_id}/terminal. The token travels as the
   * access_token query parameter, since browsers cannot set headers on a
   * WebSocket. The agent is looked up first (GET /agents/{agent_id}) so that
   * a wrong token or agent fails with its WickError (401, 404), which a
   * refused WebSocket upgrade does not tell a browser.
   */
  async terminal(agentId: string, options: TerminalOptions = {}): Promise<Terminal> {
    const WS = this.#WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!WS) {
      throw new TypeError("no WebSocket class: pass WickOptions.WebSocket (on Node 20, the ws package's)");
    }
    checkSize("rows", options.rows);
    checkSize("cols", options.cols);
    const { signal } = options;
    await this.api.GET("/agents/{agent_id}", {
      params: { path: { agent_id: agentId } },
      ...(signal ? { signal } : {}),
    });
    signal?.throwIfAborted();
    const url = new URL(this.#url(`/agents/${encodeURIComponent(agentId)}/terminal`));
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    if (options.rows !== undefined) url.searchParams.set("rows", String(options.rows));
    if (options.cols !== undefined) url.searchParams.set("cols", String(options.cols));
    if (this.#token !== undefined) url.searchParams.set("access_token", await this.#tokenValue());

    const ws = new WS(url.href);
    const term = new Terminal(ws, options.onData);
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        ws.close(1000);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      ws.onopen = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      // Before the socket opens, closed settles only with a failure.
      term.closed.then(
        (exit) => reject(closeError(exit.closeCode, exit.reason || "the terminal closed before it opened")),
        reject,
      );
    });
    signal?.addEventListener("abort", () => term.close(), { once: true });
    return term;
  }

  #reconnectOf(options: StreamOptions): Required<ReconnectOptions> | false {
    const r = options.reconnect ?? this.#reconnect;
    return r === false ? false : { ...DEFAULT_RECONNECT, ...r };
  }

  #openJoin(runId: string, after: string, signal: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { Accept: "text/event-stream" };
    if (after !== "") headers["Last-Event-ID"] = after;
    return this.send(new Request(this.#url(`/runs/${encodeURIComponent(runId)}/events`), { headers, signal }));
  }

  #getRaw(agentId: string, path: string, signal: AbortSignal | undefined): Promise<Response> {
    return this.send(new Request(this.#rawFileURL(agentId, path), signal ? { signal } : {}));
  }

  #rawFileURL(agentId: string, path: string): string {
    const segments = path.split("/").filter((s) => s !== "");
    if (segments.length === 0) {
      throw new RangeError(`file path ${JSON.stringify(path)} names no file`);
    }
    return this.#url(`/agents/${encodeURIComponent(agentId)}/files/raw/${segments.map(encodeURIComponent).join("/")}`);
  }

  #url(path: string): string {
    return this.#baseUrl + path;
  }

  async #tokenValue(): Promise<string> {
    const t = this.#token;
    return typeof t === "function" ? await t() : (t ?? "");
  }
}
