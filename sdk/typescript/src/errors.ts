/**
 * The body of every error the gateway answers: an HTTP error response, an
 * SSE `error` frame's data, and (code and message) a terminal's close frame.
 */
export interface ErrorBody {
  /** The gRPC status code, e.g. 5. */
  code: number;
  /** The code's name, e.g. "NOT_FOUND". */
  status: string;
  /** What went wrong, written for the client. */
  message: string;
  /** The OpenTelemetry trace id under which the gateway logged the error. */
  trace_id?: string;
}

/**
 * The gateway's names of the gRPC codes, indexed by code (Go's code names
 * in upper snake case: "CANCELED", as the gateway spells it).
 */
export const CODE_NAMES = [
  "OK",
  "CANCELED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
] as const;

/** The name of a gRPC code, e.g. "NOT_FOUND". */
export type CodeName = (typeof CODE_NAMES)[number];

// The HTTP status grpc-gateway answers for each gRPC code
// (runtime.HTTPStatusFromCode), for errors that arrive without one: an SSE
// error frame after the stream started, a terminal's close frame.
const HTTP_STATUS_OF_CODE = [200, 499, 500, 400, 504, 404, 409, 403, 429, 400, 409, 400, 501, 500, 503, 500, 401];

// The gRPC code of an HTTP status, for error answers that carry no body of
// the gateway's (a proxy in between): the gateway's httperr.CodeFromHTTP.
function codeOfHTTPStatus(status: number): number {
  switch (status) {
    case 400:
      return 3;
    case 401:
      return 16;
    case 403:
      return 7;
    case 404:
      return 5;
    case 405:
    case 501:
      return 12;
    case 409:
      return 10;
    case 413:
    case 429:
      return 8;
    case 502:
    case 503:
      return 14;
    case 504:
      return 4;
  }
  return 2;
}

function codeName(code: number): string {
  return CODE_NAMES[code] ?? "UNKNOWN";
}

/** The longest error text kept from a response that is not the gateway's JSON. */
const MAX_FOREIGN_MESSAGE = 512;

/**
 * WickError is every error the API answers: an HTTP error status, an SSE
 * `error` frame, a terminal closed by the server with an error.
 */
export class WickError extends Error {
  override readonly name = "WickError";
  /** The HTTP status: the response's, or the one the gRPC code maps to. */
  readonly status: number;
  /** The gRPC code's name, e.g. "NOT_FOUND" or "UNAUTHENTICATED". */
  readonly code: CodeName | (string & {});
  /** The gRPC status code, e.g. 5. */
  readonly grpcCode: number;
  /** The trace id to quote when reporting the problem; the gateway logged the error under it. */
  readonly traceId: string | undefined;

  constructor(status: number, body: ErrorBody, options?: { cause?: unknown }) {
    super(body.message, options);
    this.status = status;
    this.grpcCode = body.code;
    this.code = body.status || codeName(body.code);
    this.traceId = body.trace_id || undefined;
  }

  /** The error of an SSE error frame or a close frame: the HTTP status is the one its code maps to. */
  static fromBody(body: ErrorBody): WickError {
    return new WickError(HTTP_STATUS_OF_CODE[body.code] ?? 500, body);
  }

  /** The error a code and message stand for, e.g. from a terminal's close frame. */
  static fromCode(code: number, message: string): WickError {
    return WickError.fromBody({ code, status: codeName(code), message });
  }

  /** The error of a response whose status is not 2xx; it reads the body. */
  static async fromResponse(res: Response): Promise<WickError> {
    let text = "";
    try {
      text = await res.text();
    } catch {
      // The body failed; the status still says what happened.
    }
    const body = parseErrorBody(text);
    if (body) {
      return new WickError(res.status, body);
    }
    const code = codeOfHTTPStatus(res.status);
    const message = text.trim().slice(0, MAX_FOREIGN_MESSAGE) || res.statusText || `HTTP ${res.status}`;
    return new WickError(res.status, { code, status: codeName(code), message });
  }
}

/** parseErrorBody returns text as the gateway's error body, or undefined when it is not one. */
export function parseErrorBody(text: string): ErrorBody | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof v !== "object" || v === null) {
    return undefined;
  }
  const o = v as Record<string, unknown>;
  if (typeof o.code !== "number" || typeof o.message !== "string") {
    return undefined;
  }
  return {
    code: o.code,
    status: typeof o.status === "string" ? o.status : codeName(o.code),
    message: o.message,
    ...(typeof o.trace_id === "string" ? { trace_id: o.trace_id } : {}),
  };
}
