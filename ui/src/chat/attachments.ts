// Files attached to a message: each is uploaded into the agent's workspace
// under a safe name that no file there has yet, and the message sent names
// the paths so the agent can read them. The state is a list of chips; the
// uploads run outside React so that tests drive them with a fake uploader.
import { WickError } from "@wick-agent/sdk";

import { errorText, isAbort } from "../api/client";
import { humanBytes } from "./refusal";

/** UPLOAD_DIR is where attached files go, as the AI SDK adapter puts its file parts. */
export const UPLOAD_DIR = "/workspace/uploads";

/** MAX_FILES bounds the files of one message: more is a pile, not an attachment. */
export const MAX_FILES = 10;

/** DEFAULT_MAX_UPLOAD_BYTES is the gateway's default upload limit (-max-upload-bytes), which the API does not publish. */
export const DEFAULT_MAX_UPLOAD_BYTES = 100 << 20;

/** What the uploads need of the server. */
export interface Uploader {
  /** Writes file at path; onProgress hears the bytes sent so far. */
  upload(path: string, file: Blob, opts: { signal: AbortSignal; onProgress(sent: number): void }): Promise<{ path: string; bytes: number }>;
  /** The names in a workspace directory; none when it does not exist. */
  list(dir: string): Promise<string[]>;
}

export type AttachmentStatus = "uploading" | "done" | "failed";

/** Attachment is one chip above the message box. */
export interface Attachment {
  id: string;
  /** The file's own name, as the user picked it. */
  original: string;
  /** Where it goes (or went) in the workspace. */
  path: string;
  size: number;
  sent: number;
  status: AttachmentStatus;
  /** Why the upload failed, in words. */
  error?: string;
}

/**
 * sanitizeName keeps a file's base name to letters, digits, '.', '-' and
 * '_' (anything else becomes '_'), without leading dots, at most 100
 * characters with its extension kept: the same rule the AI SDK adapter
 * applies, so a name never climbs out of the upload directory or hides.
 */
export function sanitizeName(name: string): string {
  const base = name.replaceAll("\\", "/").split("/").pop() ?? "";
  let out = base.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "");
  if (out.length > 100) {
    const dot = out.lastIndexOf(".");
    const ext = dot > 0 && out.length - dot <= 16 ? out.slice(dot) : "";
    out = out.slice(0, 100 - ext.length) + ext;
  }
  return out === "" ? "file" : out;
}

/** uniqueName returns name, or name with "-1", "-2"… before its extension, whichever taken lacks. */
export function uniqueName(name: string, taken: ReadonlySet<string>): string {
  if (!taken.has(name)) return name;
  const dot = name.lastIndexOf(".");
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ""];
  for (let i = 1; ; i++) {
    const next = `${stem}-${i}${ext}`;
    if (!taken.has(next)) return next;
  }
}

/** ATTACHED_LEAD starts the line the message gets for its attachments. */
export const ATTACHED_LEAD = "Attached files (in the workspace): ";

/**
 * messageWith adds the attachments' paths to the text, in the words the AI
 * SDK adapter uses: a blank line, then "Attached files (in the workspace): "
 * and the paths, comma-separated.
 */
export function messageWith(text: string, paths: readonly string[]): string {
  if (paths.length === 0) return text;
  const lead = text.trim() === "" ? "" : `${text}\n\n`;
  return `${lead}${ATTACHED_LEAD}${paths.join(", ")}`;
}

/** sizeText writes a file's size in words: "37 bytes", "1.5 KiB", "100 MiB". */
export function sizeText(n: number): string {
  return humanBytes(n).replace(/\.0 /, " ");
}

/** uploadErrorText says why an upload failed, with the limit in words. */
export function uploadErrorText(err: unknown): string {
  if (err instanceof WickError && err.status === 413) {
    const limit = /limit of (\d+) bytes/.exec(err.message)?.[1];
    return `Too large: the upload limit is ${sizeText(limit ? Number(limit) : DEFAULT_MAX_UPLOAD_BYTES)}`;
  }
  if (err instanceof WickError && err.code === "FAILED_PRECONDITION") return `Not uploaded: ${err.message}`;
  return `Not uploaded: ${errorText(err)}`;
}

/**
 * AttachmentList holds a message's attachments and runs their uploads. It
 * tells its listener of every change with a new array (React state).
 */
export class AttachmentList {
  #items: Attachment[] = [];
  #ctrl = new Map<string, AbortController>();
  #pending = new Map<string, Promise<void>>();
  #seq = 0;
  #adding: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly uploader: Uploader,
    private readonly onChange: (items: Attachment[]) => void,
  ) {}

  get items(): readonly Attachment[] {
    return this.#items;
  }

  /**
   * add uploads files; beyond MAX_FILES it takes none and answers why. The
   * names already in the upload directory, and those of this message, are
   * never reused: a file is never overwritten.
   */
  add(files: readonly File[]): Promise<string | undefined> {
    // One at a time: a second batch names its files after the first's are named.
    const next = this.#adding.then(() => this.#add(files));
    this.#adding = next.catch(() => {});
    return next;
  }

  async #add(files: readonly File[]): Promise<string | undefined> {
    if (files.length === 0) return undefined;
    if (this.#items.length + files.length > MAX_FILES) {
      return `At most ${MAX_FILES} files per message: remove some first.`;
    }
    const placed: Attachment[] = files.map((f) => ({
      id: `att${++this.#seq}`,
      original: f.name,
      path: "",
      size: f.size,
      sent: 0,
      status: "uploading",
    }));
    this.#set([...this.#items, ...placed]);
    let existing: string[] = [];
    try {
      existing = await this.uploader.list(UPLOAD_DIR);
    } catch {
      // Unknown: the names of this message still never collide, and the
      // server is asked again next time.
    }
    const taken = new Set([...existing, ...this.#items.map((a) => a.path.slice(UPLOAD_DIR.length + 1)).filter((n) => n !== "")]);
    files.forEach((f, i) => {
      const a = placed[i]!;
      if (!this.#items.some((x) => x.id === a.id)) return; // removed while the names were read
      const name = uniqueName(sanitizeName(f.name), taken);
      taken.add(name);
      this.#update(a.id, { path: `${UPLOAD_DIR}/${name}` });
      this.#start(a.id, f);
    });
    return undefined;
  }

  /** remove drops an attachment, cancelling its upload (the server then writes nothing). */
  remove(id: string): void {
    this.#ctrl.get(id)?.abort();
    this.#ctrl.delete(id);
    this.#set(this.#items.filter((a) => a.id !== id));
  }

  /** clear forgets every attachment (after the message went). */
  clear(): void {
    for (const c of this.#ctrl.values()) c.abort();
    this.#ctrl.clear();
    this.#set([]);
  }

  /** settled resolves when no upload is in flight. */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all(this.#pending.values());
  }

  /** paths are the uploaded files' workspace paths, in the order attached. */
  paths(): string[] {
    return this.#items.filter((a) => a.status === "done").map((a) => a.path);
  }

  #start(id: string, file: File): void {
    const ctrl = new AbortController();
    this.#ctrl.set(id, ctrl);
    const path = this.#items.find((a) => a.id === id)!.path;
    const run = this.uploader
      .upload(path, file, { signal: ctrl.signal, onProgress: (sent) => this.#update(id, { sent }) })
      .then(
        (res) => this.#update(id, { status: "done", sent: file.size, path: res.path || path }),
        (err: unknown) => {
          if (ctrl.signal.aborted || isAbort(err)) return;
          this.#update(id, { status: "failed", error: uploadErrorText(err) });
        },
      )
      .finally(() => {
        this.#pending.delete(id);
        if (this.#ctrl.get(id) === ctrl) this.#ctrl.delete(id);
      });
    this.#pending.set(id, run);
  }

  #update(id: string, patch: Partial<Attachment>): void {
    if (!this.#items.some((a) => a.id === id)) return;
    this.#set(this.#items.map((a) => (a.id === id ? { ...a, ...patch } : a)));
  }

  #set(items: Attachment[]): void {
    this.#items = items;
    this.onChange(items);
  }
}
