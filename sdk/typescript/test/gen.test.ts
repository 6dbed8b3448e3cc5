// The committed src/gen is what `npm run gen` makes from the committed
// OpenAPI document: a change of the API that was not regenerated fails here,
// as `make gen-check` fails for the Go side.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { generate } from "../scripts/generate.mjs";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

describe("generated sources", () => {
  it("match the OpenAPI document", async () => {
    const docPath = path.resolve(root, "../../gen/openapi/wick.openapi.json");
    const doc = JSON.parse(await readFile(docPath, "utf8"));
    const files = await generate(doc, docPath);
    for (const [name, text] of Object.entries(files)) {
      const committed = await readFile(path.join(root, "src/gen", name), "utf8");
      expect(committed, `src/gen/${name} is stale: run npm run gen`).toBe(text);
    }
  });
});
