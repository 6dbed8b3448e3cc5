import { describe, expect, it } from "vitest";

import { decodeText, readLimited } from "./content";

function streamOf(chunks: Uint8Array[]): { stream: ReadableStream<Uint8Array>; pulled: () => number; cancelled: () => boolean } {
  let i = 0;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      const next = chunks[i++];
      if (next) c.enqueue(next);
      else c.close();
    },
    cancel() {
      cancelled = true;
    },
  });
  return { stream, pulled: () => i, cancelled: () => cancelled };
}

describe("readLimited", () => {
  it("reads a stream within the limit whole", async () => {
    const { stream } = streamOf([new Uint8Array([1, 2]), new Uint8Array([3])]);
    expect(await readLimited(stream, 3)).toEqual({ tooLarge: false, bytes: new Uint8Array([1, 2, 3]) });
  });

  it("stops and cancels past the limit, without reading the rest", async () => {
    const s = streamOf([new Uint8Array(2), new Uint8Array(2), new Uint8Array(2), new Uint8Array(2)]);
    expect(await readLimited(s.stream, 3)).toEqual({ tooLarge: true, bytesRead: 4 });
    expect(s.cancelled()).toBe(true);
    expect(s.pulled()).toBeLessThan(4);
  });
});

describe("decodeText", () => {
  it("decodes UTF-8", () => {
    expect(decodeText(new TextEncoder().encode("héllo ✓"))).toBe("héllo ✓");
  });
  it("refuses invalid UTF-8 and NUL bytes", () => {
    expect(decodeText(new Uint8Array([0xff, 0xfe, 0x41]))).toBeUndefined();
    expect(decodeText(new Uint8Array([0x41, 0, 0x42]))).toBeUndefined();
  });
});
