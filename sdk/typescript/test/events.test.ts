// The SDK's event types are the OpenAPI document's RunEvent components: the
// type assertions here are checked by tsc (npm test runs it first), the
// kind lists at run time against the document itself.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { describe, expect, expectTypeOf, test } from "vitest";

import { RUN_EVENT_KINDS } from "../src/gen/events.js";
import { toEvent } from "../src/events.js";
import { EVENT_KINDS, type EventData, type EventKind, type KnownEvent, type WickEvent, type components } from "../src/index.js";

type Schemas = components["schemas"];
/** The data of the generated RunEvent.<K> component. */
type Generated<K extends EventKind> = NonNullable<Schemas[`RunEvent.${K}`]["data"]>;
/** The kinds that have a RunEvent.<kind> component. */
type ComponentKinds = keyof Schemas extends infer N ? (N extends `RunEvent.${infer K}` ? K : never) : never;
/** What narrowing a known event on `event` gives as its data. */
type Narrowed<K extends EventKind> = Extract<KnownEvent, { event: K }>["data"];

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

async function documentKinds(): Promise<string[]> {
  const doc = JSON.parse(await readFile(path.resolve(root, "../../gen/openapi/wick.openapi.json"), "utf8"));
  const mapping: Record<string, string> | undefined = doc.components?.schemas?.RunEvent?.discriminator?.mapping;
  expect(mapping, "the document's RunEvent has no discriminator mapping").toBeDefined();
  return Object.keys(mapping!);
}

describe("event types", () => {
  test("the kinds are the document's RunEvent components", () => {
    expectTypeOf<EventKind>().toEqualTypeOf<ComponentKinds>();
    expectTypeOf<(typeof RUN_EVENT_KINDS)[number]>().toEqualTypeOf<EventKind>();
  });

  test("narrowing on event gives the generated data of that kind", () => {
    expectTypeOf<{ [K in EventKind]: Narrowed<K> }>().toEqualTypeOf<{ [K in EventKind]: Generated<K> }>();
    expectTypeOf<EventData<"done">>().toEqualTypeOf<Generated<"done">>();

    const seen: string[] = [];
    const read = (ev: WickEvent) => {
      switch (ev.event) {
        case "on_tool_start":
          expectTypeOf(ev.data).toEqualTypeOf<Generated<"on_tool_start">>();
          seen.push(ev.data.tool_call_id);
          break;
        case "error":
          expectTypeOf(ev.data).toEqualTypeOf<Generated<"error">>();
          seen.push(ev.data.code);
          break;
        case "unknown":
          expectTypeOf(ev.data).toBeUnknown();
          seen.push(ev.kind);
          break;
      }
    };
    read(toEvent({ data: { tool_call_id: "c1", args: {} } }, "on_tool_start", "1-0"));
    read(toEvent({ data: { message: "run cancelled", code: "cancelled", stop_reason: "cancelled" } }, "error", "1-1"));
    read(toEvent({ data: {} }, "on_new_kind", "1-2"));
    expect(seen).toEqual(["c1", "cancelled", "on_new_kind"]);
  });
});

describe("event kinds", () => {
  test("every kind of the document's RunEvent is known to the SDK, and no other", async () => {
    const kinds = await documentKinds();
    expect([...EVENT_KINDS].sort()).toEqual([...kinds].sort());
  });

  test("an event of every documented kind is read as that kind", async () => {
    for (const kind of await documentKinds()) {
      expect(toEvent({ event: kind, data: {} }, kind, "1-0"), kind).toMatchObject({ event: kind });
    }
  });
});
