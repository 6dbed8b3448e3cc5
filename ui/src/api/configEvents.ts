// Follows the config feed (GET /agents/events) so that every list stays
// live. The feed cannot be resumed: after a reconnect the caller re-reads
// what it shows.
import { WickError, type ErrorBody, type Wick, type components } from "@wick-agent/sdk";

import { parseSSE } from "./sse";

type Schemas = components["schemas"];

/**
 * One config event as the OpenAPI document describes it: the envelope, whose
 * data has the shape of its kind's ConfigEvent.<kind> schema. Kinds this page
 * does not know pass as they came.
 */
export type ConfigEvent = Schemas["wick.agent.v1.ConfigEvent"] & { event: string };

/** The data of a config event of kind K. */
export type ConfigEventData<K extends Schemas["ConfigEvent"]["event"]> = Extract<Schemas["ConfigEvent"], { event: K }>["data"];

/** The first wait before reconnecting, doubled up to MAX_RETRY_MS. */
const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 30_000;

/**
 * followConfig calls onEvent for each config event until signal aborts;
 * onLive after each (re)subscription; onError for a failure it will retry.
 * A 401 is reported and ends the feed.
 */
export async function followConfig(
  client: Wick,
  baseUrl: string,
  signal: AbortSignal,
  on: { event(ev: ConfigEvent): void; live(): void; error(err: unknown): void },
): Promise<void> {
  let wait = FIRST_RETRY_MS;
  while (!signal.aborted) {
    try {
      const res = await client.send(new Request(`${baseUrl}/agents/events`, { headers: { Accept: "text/event-stream" }, signal }));
      if (!res.body) throw new Error("the config feed has no body");
      for await (const m of parseSSE(res.body)) {
        if (m.event === "error" && m.id === undefined) {
          throw streamError(m.data);
        }
        let ev: ConfigEvent;
        try {
          ev = JSON.parse(m.data) as ConfigEvent;
        } catch {
          continue; // A frame this page cannot read changes nothing it shows.
        }
        ev.event ||= m.event;
        if (ev.event === "subscribed") {
          wait = FIRST_RETRY_MS;
          on.live();
          continue;
        }
        on.event(ev);
      }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof WickError && err.status === 401) {
        on.error(err);
        return;
      }
    }
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, MAX_RETRY_MS);
  }
}

// streamError is the error of the feed's own failure frame: the gateway's
// error body.
function streamError(data: string): Error {
  try {
    const b = JSON.parse(data) as Partial<ErrorBody>;
    if (typeof b.code === "number" && typeof b.message === "string") return WickError.fromBody(b as ErrorBody);
  } catch {
    // Not the gateway's body: said as it came.
  }
  return new Error(`the config feed failed: ${data.slice(0, 200)}`);
}
