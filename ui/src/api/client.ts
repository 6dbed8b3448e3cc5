// The client the shell and the panels share: the SDK's, with the page's
// token, and a fetch that tells the shell how the connection fares.
import { Wick, WickError, ConnectionLost } from "@wick-agent/sdk";

export type ConnState = "connected" | "reconnecting" | "offline";

/**
 * makeClient returns a client of the gateway the page came from. token ""
 * sends none (a gateway without tokens). onConn hears "reconnecting" when a
 * request fails to connect or a run is re-joined, and "connected" when an
 * answer arrives.
 */
export function makeClient(baseUrl: string, token: string, onConn: (s: ConnState) => void): Wick {
  const fetchTracked = async (req: Request): Promise<Response> => {
    // A join that carries Last-Event-ID resumes a run after a lost
    // connection (or a reload): the page is catching up.
    if (req.headers.has("Last-Event-ID")) onConn("reconnecting");
    try {
      const res = await globalThis.fetch(req);
      onConn("connected");
      return res;
    } catch (err) {
      if (!req.signal.aborted) onConn(navigator.onLine === false ? "offline" : "reconnecting");
      throw err;
    }
  };
  return new Wick({ baseUrl, ...(token ? { token } : {}), fetch: fetchTracked });
}

/** isUnauthenticated reports whether err says the token is missing or wrong. */
export function isUnauthenticated(err: unknown): boolean {
  return err instanceof WickError && err.status === 401;
}

/** isAbort reports whether err is the end of a request the page gave up on. */
export function isAbort(err: unknown): boolean {
  return err instanceof DOMException && err.name === "AbortError";
}

/** errorText says what went wrong, in words, with what the server told. */
export function errorText(err: unknown): string {
  if (err instanceof WickError) {
    const trace = err.traceId ? ` · trace ${err.traceId}` : "";
    // The server names the limit and how to get under it; say first that it is one.
    const lead = err.code === "RESOURCE_EXHAUSTED" ? "Over a limit: " : "";
    return `${lead}${err.message} (${err.status} ${err.code}${trace})`;
  }
  if (err instanceof ConnectionLost) return `Connection lost: ${err.message}`;
  if (err instanceof TypeError && /fetch|network/i.test(err.message)) return `The server cannot be reached (${err.message})`;
  if (err instanceof Error) return err.message;
  return String(err);
}
