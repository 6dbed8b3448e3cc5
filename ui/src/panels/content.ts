// Reading workspace files for the panels: at most a stated number of bytes
// (the rest of a bigger file is never fetched), text told from binary, and
// downloads saved through a Blob URL.
import type { Wick } from "@wick-agent/sdk";

import { baseName } from "./fileTree";

/** A file's bytes, or the news that it is bigger than the limit. */
export type Limited = { bytes: Uint8Array; tooLarge: false } | { tooLarge: true; bytesRead: number };

/**
 * readLimited reads a stream to its end or until it passes limit bytes, in
 * which case it cancels the stream (which ends the download) and reports
 * the file too large.
 */
export async function readLimited(stream: ReadableStream<Uint8Array>, limit: number): Promise<Limited> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      return { tooLarge: true, bytesRead: total };
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return { bytes, tooLarge: false };
}

/** Fetches a workspace file, at most limit bytes of it. */
export async function fetchLimited(
  client: Wick,
  agentId: string,
  path: string,
  limit: number,
  signal?: AbortSignal,
): Promise<Limited> {
  const stream = await client.downloadStream(agentId, path, signal ? { signal } : {});
  return readLimited(stream, limit);
}

/**
 * decodeText returns the bytes as UTF-8 text, or undefined when they are
 * not text: invalid UTF-8, or a NUL byte (which no text file has and
 * many binary formats start with).
 */
export function decodeText(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** How long a Blob URL handed to a download outlives the click: the browser reads it asynchronously. */
const REVOKE_AFTER_MS = 60_000;

/**
 * saveFile downloads a workspace file to the user's disk: the streamed
 * body becomes a Blob (which the browser may keep on disk), handed to an
 * anchor with the download attribute.
 */
export async function saveFile(client: Wick, agentId: string, path: string, signal?: AbortSignal): Promise<void> {
  const stream = await client.downloadStream(agentId, path, signal ? { signal } : {});
  const blob = await new Response(stream).blob();
  saveBlob(blob, baseName(path));
}

/** saveBlob offers a Blob to the user as a file download. */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.rel = "noopener";
  a.style.display = "none";
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), REVOKE_AFTER_MS);
}
