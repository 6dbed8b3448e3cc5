import { WickError } from "@wick-agent/sdk";
import { describe, expect, it } from "vitest";

import { humanBytes, refusalText } from "./refusal";

describe("humanBytes", () => {
  it("writes sizes in binary units", () => {
    expect(humanBytes(512)).toBe("512 bytes");
    expect(humanBytes(1024)).toBe("1 KiB");
    expect(humanBytes(1536)).toBe("1.5 KiB");
    expect(humanBytes(4194304)).toBe("4 MiB");
    expect(humanBytes(3 * 1024 ** 3)).toBe("3 GiB");
  });
});

describe("refusalText", () => {
  it("names the body limit in MiB", () => {
    const err = new WickError(413, { code: 8, status: "RESOURCE_EXHAUSTED", message: "request body is larger than the limit of 4194304 bytes" });
    const text = refusalText(err);
    expect(text).toContain("4 MiB");
    expect(text).not.toContain("4194304");
  });
});
