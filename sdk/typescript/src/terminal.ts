import { WickError } from "./errors.js";

/**
 * The part of the WebSocket API the terminal uses: the browser's
 * WebSocket, or the `ws` package's on Node (which has no global WebSocket
 * before Node 22).
 */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: string | ArrayBuffer | Uint8Array): void;
  close(code?: number, reason?: string): void;
  // The handlers' events are typed loosely: every implementation has its own
  // event classes, with data (message), code and reason (close) in common.
  onopen: ((ev: any) => void) | null;
  onmessage: ((ev: any) => void) | null;
  onclose: ((ev: any) => void) | null;
  onerror: ((ev: any) => void) | null;
}

/** A WebSocket class: the browser's global WebSocket or `ws`'s default export. */
export type WebSocketConstructor = new (url: string) => WebSocketLike;

/** Options of Wick.terminal. */
export interface TerminalOptions {
  /** The terminal's lines, 1 to 65535. Default 24. */
  rows?: number;
  /** The terminal's columns, 1 to 65535. Default 80. */
  cols?: number;
  /** Receives the terminal's output, as it arrives. */
  onData?: (chunk: Uint8Array) => void;
  /** Aborting it before the terminal opens fails the call; after, it closes the terminal. */
  signal?: AbortSignal;
}

/** How a terminal session ended. */
export interface TerminalExit {
  /** The shell's exit code, when the shell exited. */
  exitCode: number | undefined;
  /** The WebSocket close code: 1000 for a normal end. */
  closeCode: number;
  /** The close frame's reason, e.g. "shell exited with code 0". */
  reason: string;
}

const NORMAL_CLOSURE = 1000;
const NO_STATUS = 1005;
// The gateway closes with 4000 plus the gRPC code when the session failed
// (4005: not found), 1008 for a frame it refused, 1011 otherwise.
const SERVICE_ERROR_BASE = 4000;
const POLICY_VIOLATION = 1008;

const encoder = new TextEncoder();

/**
 * Terminal is an interactive shell in an agent's sandbox over the gateway's
 * WebSocket: binary frames carry terminal bytes both ways, a text frame
 * {"type":"resize","rows","cols"} resizes it, and the server's text frame
 * {"type":"exit","code"} gives the shell's exit code before it closes.
 */
export class Terminal {
  #ws: WebSocketLike;
  #exitCode: number | undefined;
  /** Settles when the session ends: with how it ended, or with a WickError when the server ended it with an error. */
  readonly closed: Promise<TerminalExit>;

  /** Use Wick.terminal, which checks the agent and waits for the socket to open. */
  constructor(ws: WebSocketLike, onData: ((chunk: Uint8Array) => void) | undefined) {
    this.#ws = ws;
    ws.binaryType = "arraybuffer";
    ws.onmessage = (ev: { data: unknown }) => {
      if (typeof ev.data === "string") {
        this.#control(ev.data);
      } else if (ev.data instanceof ArrayBuffer) {
        onData?.(new Uint8Array(ev.data));
      }
    };
    this.closed = new Promise((resolve, reject) => {
      ws.onclose = (ev: { code: number; reason: string }) => {
        if (ev.code === NORMAL_CLOSURE || ev.code === NO_STATUS) {
          resolve({ exitCode: this.#exitCode, closeCode: ev.code, reason: ev.reason });
          return;
        }
        reject(closeError(ev.code, ev.reason));
      };
    });
    // A failure is followed by a close event, which settles closed.
    ws.onerror = () => {};
  }

  /** Sends input: a string is sent as its UTF-8 bytes. */
  write(data: string | Uint8Array): void {
    this.#ws.send(typeof data === "string" ? encoder.encode(data) : data);
  }

  /** Resizes the terminal. */
  resize(rows: number, cols: number): void {
    checkSize("rows", rows);
    checkSize("cols", cols);
    this.#ws.send(JSON.stringify({ type: "resize", rows, cols }));
  }

  /** Ends the session; closed then resolves. */
  close(): void {
    this.#ws.close(NORMAL_CLOSURE);
  }

  #control(text: string): void {
    try {
      const c = JSON.parse(text) as { type?: unknown; code?: unknown };
      if (c.type === "exit" && typeof c.code === "number") this.#exitCode = c.code;
    } catch {
      // The protocol has no other text frames from the server; a newer
      // server's frame is ignored.
    }
  }
}

/** checkSize refuses a size the gateway would refuse: its answer cannot reach a browser's WebSocket. */
export function checkSize(name: string, n: number | undefined): void {
  if (n !== undefined && !(Number.isInteger(n) && n >= 1 && n <= 65535)) {
    throw new RangeError(`terminal ${name} must be an integer from 1 to 65535, got ${n}`);
  }
}

/** closeError is the WickError a close code other than a normal closure stands for. */
export function closeError(code: number, reason: string): WickError {
  if (code >= SERVICE_ERROR_BASE && code < SERVICE_ERROR_BASE + 100) {
    return WickError.fromCode(code - SERVICE_ERROR_BASE, reason || "terminal session failed");
  }
  if (code === POLICY_VIOLATION) {
    return WickError.fromCode(3, reason || "the gateway refused a terminal frame");
  }
  if (code === 1011) {
    return WickError.fromCode(13, reason || "internal error");
  }
  // 1006: the connection was lost without a close frame; 1001: the server went away.
  return WickError.fromCode(14, reason || `terminal connection closed (${code})`);
}
