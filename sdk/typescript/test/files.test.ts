import { randomBytes } from "node:crypto";

import { expect, test } from "vitest";

import { WickError } from "../src/index.js";
import { client } from "./helpers.js";

const alice = client("alice");

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

test("upload and download round trip", async () => {
  const data = new Uint8Array(randomBytes(3 << 20));
  const up = await alice.upload("default", "/workspace/sdk/blob.bin", data);
  expect(up).toEqual({ path: "/workspace/sdk/blob.bin", bytes_written: data.length });

  expect(Buffer.from(await alice.download("default", "workspace/sdk/blob.bin")).equals(data)).toBe(true);
  const streamed = await readAll(await alice.downloadStream("default", "/workspace/sdk/blob.bin"));
  expect(Buffer.from(streamed).equals(data)).toBe(true);
});

test("upload from a stream, and a name that needs escaping", async () => {
  const parts = ["one ", "two ", "three"];
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (const p of parts) c.enqueue(new TextEncoder().encode(p));
      c.close();
    },
  });
  const path = "/workspace/sdk/a file #1?.txt";
  expect(await alice.upload("default", path, body)).toEqual({ path, bytes_written: 13 });
  expect(new TextDecoder().decode(await alice.download("default", path))).toBe("one two three");
});

test("a missing file is NOT_FOUND", async () => {
  const err = await alice.download("default", "/workspace/sdk/missing.bin").catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WickError);
  expect(err).toMatchObject({ status: 404, code: "NOT_FOUND" });
});

test("a path that names no file is refused before any request", async () => {
  await expect(alice.download("default", "//")).rejects.toThrow(RangeError);
});
