// Generates src/gen/ from the OpenAPI document (see generate.mjs). The
// document is ../../gen/openapi/wick.openapi.json (`make gen` writes it)
// unless WICK_OPENAPI names another one.
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { generate } from "./generate.mjs";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const input = path.resolve(root, process.env.WICK_OPENAPI ?? "../../gen/openapi/wick.openapi.json");
const doc = JSON.parse(await readFile(input, "utf8"));
const files = await generate(doc, input);
const out = path.join(root, "src/gen");
await mkdir(out, { recursive: true });
for (const [name, text] of Object.entries(files)) {
  await writeFile(path.join(out, name), text);
}
console.log(`generated src/gen from ${path.relative(process.cwd(), input)} (API version ${doc.info.version})`);
