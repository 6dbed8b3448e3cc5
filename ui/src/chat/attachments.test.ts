// The attachments' state: names, collisions, and uploads that finish, are
// refused or are cancelled, driven through a fake uploader.
import { WickError } from "@wick-agent/sdk";
import { describe, expect, it, vi } from "vitest";

import { AttachmentList, MAX_FILES, messageWith, sanitizeName, uniqueName, type Attachment, type Uploader } from "./attachments";

/** A fake upload that the test settles; it records what it was asked. */
function fakeUploader(existing: string[] = []) {
  const calls: { path: string; signal: AbortSignal; progress(n: number): void; resolve(): void; reject(e: unknown): void }[] = [];
  const uploader: Uploader = {
    list: vi.fn(async () => existing),
    upload: (path, file, { signal, onProgress }) =>
      new Promise((resolve, reject) => {
        calls.push({ path, signal, progress: onProgress, resolve: () => resolve({ path, bytes: file.size }), reject });
        signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
      }),
  };
  return { uploader, calls };
}

function newList(u: Uploader) {
  let seen: Attachment[] = [];
  const list = new AttachmentList(u, (items) => (seen = items));
  return { list, items: () => seen };
}

const file = (name: string, text = "hello") => new File([text], name, { type: "text/plain" });

describe("sanitizeName", () => {
  it.each([
    ["notes.txt", "notes.txt"],
    ["my report (final).md", "my_report__final_.md"],
    ["../../etc/passwd", "passwd"],
    ["C:\\Users\\me\\data.csv", "data.csv"],
    [".env", "env"],
    ["...", "file"],
    ["", "file"],
    ["résumé.pdf", "r_sum_.pdf"],
  ])("%j becomes %j", (name, want) => {
    expect(sanitizeName(name)).toBe(want);
  });

  it("shortens a long name, keeping its extension", () => {
    const out = sanitizeName(`${"a".repeat(300)}.json`);
    expect(out).toHaveLength(100);
    expect(out.endsWith(".json")).toBe(true);
  });
});

describe("uniqueName", () => {
  it("adds a counter before the extension until the name is free", () => {
    expect(uniqueName("a.txt", new Set())).toBe("a.txt");
    expect(uniqueName("a.txt", new Set(["a.txt"]))).toBe("a-1.txt");
    expect(uniqueName("a.txt", new Set(["a.txt", "a-1.txt"]))).toBe("a-2.txt");
    expect(uniqueName("README", new Set(["README"]))).toBe("README-1");
  });
});

describe("messageWith", () => {
  it("names the uploaded paths after the text", () => {
    expect(messageWith("Summarise these", ["/workspace/uploads/a.txt", "/workspace/uploads/b.csv"])).toBe(
      "Summarise these\n\nAttached files (in the workspace): /workspace/uploads/a.txt, /workspace/uploads/b.csv",
    );
    expect(messageWith("", ["/workspace/uploads/a.txt"])).toBe("Attached files (in the workspace): /workspace/uploads/a.txt");
    expect(messageWith("plain", [])).toBe("plain");
  });
});

describe("AttachmentList", () => {
  it("uploads a file under /workspace/uploads, with progress, and gives its path once done", async () => {
    const { uploader, calls } = fakeUploader();
    const { list, items } = newList(uploader);
    await list.add([file("notes.txt", "0123456789")]);
    expect(calls.map((c) => c.path)).toEqual(["/workspace/uploads/notes.txt"]);
    expect(items()[0]).toMatchObject({ status: "uploading", size: 10, sent: 0 });
    calls[0]!.progress(4);
    expect(items()[0]!.sent).toBe(4);
    calls[0]!.resolve();
    await list.settled();
    expect(items()[0]).toMatchObject({ status: "done", path: "/workspace/uploads/notes.txt", sent: 10 });
    expect(list.paths()).toEqual(["/workspace/uploads/notes.txt"]);
  });

  it("never reuses a name the directory or the message has", async () => {
    const { uploader, calls } = fakeUploader(["notes.txt", "notes-1.txt"]);
    const { list } = newList(uploader);
    await list.add([file("notes.txt"), file("notes.txt")]);
    await list.add([file("notes.txt")]);
    expect(calls.map((c) => c.path)).toEqual(["/workspace/uploads/notes-2.txt", "/workspace/uploads/notes-3.txt", "/workspace/uploads/notes-4.txt"]);
  });

  it("says in words why a refused upload failed, and leaves it out of the message", async () => {
    const { uploader, calls } = fakeUploader();
    const { list, items } = newList(uploader);
    await list.add([file("big.bin"), file("ok.txt")]);
    calls[0]!.reject(new WickError(413, { code: 8, status: "RESOURCE_EXHAUSTED", message: "upload is larger than the limit of 104857600 bytes" }));
    calls[1]!.resolve();
    await list.settled();
    expect(items()[0]).toMatchObject({ status: "failed", error: "Too large: the upload limit is 100 MiB" });
    expect(list.paths()).toEqual(["/workspace/uploads/ok.txt"]);
  });

  it("says why an agent without a workspace refused a file", async () => {
    const { uploader, calls } = fakeUploader();
    const { list, items } = newList(uploader);
    await list.add([file("a.txt")]);
    calls[0]!.reject(new WickError(400, { code: 9, status: "FAILED_PRECONDITION", message: "agent x has no backend" }));
    await list.settled();
    expect(items()[0]!.error).toBe("Not uploaded: agent x has no backend");
  });

  it("cancels an upload that is removed, and forgets it", async () => {
    const { uploader, calls } = fakeUploader();
    const { list, items } = newList(uploader);
    await list.add([file("a.txt"), file("b.txt")]);
    list.remove(items()[0]!.id);
    expect(calls[0]!.signal.aborted).toBe(true);
    calls[1]!.resolve();
    await list.settled();
    expect(items().map((a) => a.path)).toEqual(["/workspace/uploads/b.txt"]);
    expect(list.paths()).toEqual(["/workspace/uploads/b.txt"]);
  });

  it(`takes at most ${MAX_FILES} files per message`, async () => {
    const { uploader, calls } = fakeUploader();
    const { list, items } = newList(uploader);
    expect(await list.add(Array.from({ length: MAX_FILES }, (_, i) => file(`f${i}.txt`)))).toBeUndefined();
    expect(await list.add([file("one-more.txt")])).toBe(`At most ${MAX_FILES} files per message: remove some first.`);
    expect(items()).toHaveLength(MAX_FILES);
    expect(calls).toHaveLength(MAX_FILES);
  });

  it("names files even when the directory cannot be listed", async () => {
    const { uploader, calls } = fakeUploader();
    uploader.list = () => Promise.reject(new Error("down"));
    const { list } = newList(uploader);
    await list.add([file("a.txt"), file("a.txt")]);
    expect(calls.map((c) => c.path)).toEqual(["/workspace/uploads/a.txt", "/workspace/uploads/a-1.txt"]);
  });
});
