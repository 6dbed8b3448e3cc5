// Errors in words: what the server said, with its status, and what kind of
// failure it is when that is not plain from the message.
import { WickError } from "@wick-agent/sdk";
import { describe, expect, it } from "vitest";

import { errorText } from "./client";

describe("errorText", () => {
  it.each([
    {
      name: "a limit says it is one, with the server's words",
      err: new WickError(429, { code: 8, status: "RESOURCE_EXHAUSTED", message: "user alice has 8 runs going, the limit (-max-runs-per-user)" }),
      want: "Over a limit: user alice has 8 runs going, the limit (-max-runs-per-user) (429 RESOURCE_EXHAUSTED)",
    },
    {
      name: "a limit from a stream's error frame",
      err: WickError.fromBody({ code: 8, status: "", message: "too many open event streams" }),
      want: "Over a limit: too many open event streams (429 RESOURCE_EXHAUSTED)",
    },
    {
      name: "another error is the server's words and status",
      err: new WickError(404, { code: 5, status: "NOT_FOUND", message: "no thread th1", trace_id: "abc" }),
      want: "no thread th1 (404 NOT_FOUND · trace abc)",
    },
    { name: "a failed fetch", err: new TypeError("Failed to fetch"), want: "The server cannot be reached (Failed to fetch)" },
  ])("$name", ({ err, want }) => {
    expect(errorText(err)).toBe(want);
  });
});
