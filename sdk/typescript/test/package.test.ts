// The package as published: dist/ through package.json's exports (npm run
// build first; `make test-ts` does).
import { existsSync } from "node:fs";

import { expect, test } from "vitest";

test("the built package exports the client, its errors and the API version", async () => {
  expect(existsSync(new URL("../dist/index.js", import.meta.url)), "dist/ is missing: run npm run build").toBe(true);
  expect(existsSync(new URL("../dist/index.d.ts", import.meta.url))).toBe(true);
  const sdk = await import("@wick-agent/sdk");
  expect(sdk.API_VERSION).toMatch(/^\d+\.\d+\.\d+/);
  expect(typeof sdk.Wick).toBe("function");
  expect(new sdk.WickError(404, { code: 5, status: "NOT_FOUND", message: "x" })).toBeInstanceOf(Error);
  expect(sdk.EVENT_KINDS).toContain("on_chat_model_stream");
});
