// What the composer says when the server refuses a message: for one over
// the gateway's body limit, the limit in units a person reads.
import { WickError } from "@wick-agent/sdk";

import { errorText } from "../api/client";

/** humanBytes writes n bytes in the largest binary unit it reaches: "4 MiB", "1.5 KiB", "512 bytes". */
export function humanBytes(n: number): string {
  const units = ["KiB", "MiB", "GiB"];
  let v = n;
  let unit = "";
  for (const u of units) {
    if (v < 1024) break;
    v /= 1024;
    unit = u;
  }
  if (unit === "") return `${n} bytes`;
  return `${Number.isInteger(v) ? v : v.toFixed(1)} ${unit}`;
}

/** refusalText says why the message was not sent. */
export function refusalText(err: unknown): string {
  if (err instanceof WickError && err.status === 413) {
    const limit = /limit of (\d+) bytes/.exec(err.message)?.[1];
    return limit
      ? `The message is too large to send: the limit is ${humanBytes(Number(limit))}. Shorten it, or put the text in a file in the workspace.`
      : `The message is too large to send: ${err.message}`;
  }
  return `Not sent: ${errorText(err)}`;
}
