// The composer's attachments: the paperclip button, the chips above the box
// (name, size, progress, why an upload failed, remove or cancel), and the
// hook that runs them, including files dropped on the chat.
import { LoaderCircle, Paperclip, X } from "lucide-react";
import { useCallback, useEffect, useMemo, useRef, useState, type RefObject } from "react";

import { FileIcon } from "../shell/FileIcon";
import { AttachmentList, DEFAULT_MAX_UPLOAD_BYTES, MAX_FILES, sizeText, UPLOAD_DIR, type Attachment, type Uploader } from "./attachments";
import type { AttachTarget } from "./attachmentsUploader";
import "./attachments.css";

/** LIMITS_TEXT says the limits in words, as the attach button and the chips show them. */
export const LIMITS_TEXT = `Files go to ${UPLOAD_DIR} in the agent's workspace: up to ${MAX_FILES} per message, each at most the server's upload limit (${sizeText(DEFAULT_MAX_UPLOAD_BYTES)} unless its operator set another).`;

const NO_UPLOADER: Uploader = {
  upload: () => Promise.reject(new Error("no agent to upload to")),
  list: async () => [],
};

export interface AttachmentsState {
  list: AttachmentList;
  items: Attachment[];
  /** Why the last files were not taken (too many, no workspace). */
  notice: string | undefined;
  /** Why files cannot be attached now; undefined when they can. */
  blocked: string | undefined;
  /** A file is dragged over the chat. */
  dragging: boolean;
  add(files: File[]): void;
  remove(id: string): void;
  /** Says why files cannot be attached now. */
  explain(): void;
}

/**
 * useAttachments runs the attachments of the open agent's composer; files
 * dropped anywhere on the chat around form are attached too. Another agent
 * starts with none (uploads in flight are cancelled).
 */
export function useAttachments(target: AttachTarget | undefined, form: RefObject<HTMLFormElement | null>, disabled: boolean): AttachmentsState {
  const [items, setItems] = useState<Attachment[]>([]);
  const [notice, setNotice] = useState<string | undefined>();
  const [dragging, setDragging] = useState(false);
  const uploader = target?.uploader;
  const list = useMemo(() => new AttachmentList(uploader ?? NO_UPLOADER, setItems), [uploader]);
  useEffect(() => {
    setNotice(undefined);
    return () => list.clear();
  }, [list]);

  const backend = target?.agent.backend?.type;
  const blocked = disabled
    ? "Choose an agent first"
    : !backend
      ? "This agent has no workspace (no backend), so it cannot read files: give it one in its settings"
      : undefined;

  const explain = useCallback(() => blocked && setNotice(`Not attached: ${blocked}.`), [blocked]);
  const add = useCallback(
    (files: File[]) => {
      if (files.length === 0) return;
      if (blocked) {
        explain();
        return;
      }
      setNotice(undefined);
      void list.add(files).then((why) => setNotice(why));
    },
    [list, blocked, explain],
  );
  const remove = useCallback((id: string) => list.remove(id), [list]);

  // Files dropped on the chat (the section around the composer).
  const addRef = useRef(add);
  addRef.current = add;
  const enabled = target !== undefined;
  useEffect(() => {
    const zone = form.current?.closest<HTMLElement>(".chat") ?? form.current;
    if (!zone || !enabled) return;
    let depth = 0;
    const hasFiles = (e: DragEvent) => !!e.dataTransfer && Array.from(e.dataTransfer.types).includes("Files");
    const onEnter = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      depth++;
      setDragging(true);
    };
    const onOver = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      e.preventDefault(); // allows the drop
      if (e.dataTransfer) e.dataTransfer.dropEffect = "copy";
    };
    const onLeave = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      depth = Math.max(0, depth - 1);
      if (depth === 0) setDragging(false);
    };
    const onDrop = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      depth = 0;
      setDragging(false);
      addRef.current(Array.from(e.dataTransfer?.files ?? []));
    };
    zone.addEventListener("dragenter", onEnter);
    zone.addEventListener("dragover", onOver);
    zone.addEventListener("dragleave", onLeave);
    zone.addEventListener("drop", onDrop);
    return () => {
      zone.removeEventListener("dragenter", onEnter);
      zone.removeEventListener("dragover", onOver);
      zone.removeEventListener("dragleave", onLeave);
      zone.removeEventListener("drop", onDrop);
    };
  }, [form, enabled]);

  return { list, items, notice, blocked, dragging, add, remove, explain };
}

/** AttachButton picks files to attach; when files cannot be attached it says why instead. */
export function AttachButton({ state }: { state: AttachmentsState }) {
  const input = useRef<HTMLInputElement>(null);
  const { blocked } = state;
  return (
    <>
      <button
        type="button"
        className="icon attach-button"
        data-testid="attach-button"
        aria-label={blocked ? `Attach files (unavailable: ${blocked})` : "Attach files"}
        title={blocked ? `Cannot attach files: ${blocked}` : `Attach files. ${LIMITS_TEXT}`}
        // aria-disabled, not disabled: the button stays focusable, and a click says why.
        aria-disabled={blocked ? true : undefined}
        onClick={() => (blocked ? state.explain() : input.current?.click())}
      >
        <Paperclip size={18} aria-hidden="true" />
      </button>
      <input
        ref={input}
        type="file"
        multiple
        hidden
        data-testid="attach-input"
        aria-label="Files to attach"
        onChange={(e) => {
          state.add(Array.from(e.target.files ?? []));
          e.target.value = ""; // the same file can be picked again
        }}
      />
    </>
  );
}

/** AttachmentChips shows the attached files, and what went wrong with them. */
export function AttachmentChips({ state }: { state: AttachmentsState }) {
  const { items, notice, dragging } = state;
  if (items.length === 0 && !notice && !dragging) return null;
  return (
    <div className="attachments" data-testid="attachments">
      {dragging && (
        <p className="attach-drop" data-testid="attach-drop">
          Drop the files to attach them
        </p>
      )}
      {items.length > 0 && (
        <ul className="attachment-list" aria-label="Attached files">
          {items.map((a) => (
            <Chip key={a.id} a={a} onRemove={() => state.remove(a.id)} />
          ))}
        </ul>
      )}
      {notice && (
        <p className="composer-error" role="alert" data-testid="attach-notice">
          {notice}
        </p>
      )}
      {items.length > 0 && <p className="attach-limits">{LIMITS_TEXT}</p>}
    </div>
  );
}

function Chip({ a, onRemove }: { a: Attachment; onRemove(): void }) {
  const name = a.path ? a.path.slice(a.path.lastIndexOf("/") + 1) : a.original;
  const pct = a.size > 0 ? Math.min(100, Math.round((a.sent / a.size) * 100)) : 0;
  return (
    <li className="attachment" data-testid="attachment" data-status={a.status} data-path={a.path || undefined} title={a.path || a.original}>
      {a.status === "uploading" ? (
        <LoaderCircle size={16} aria-hidden="true" className="attachment-spin" />
      ) : (
        <FileIcon path={name} type="file" />
      )}
      <span className="attachment-name">{name}</span>
      <span className="attachment-size">
        {a.status === "uploading" ? `${pct}% of ${sizeText(a.size)}` : sizeText(a.size)}
      </span>
      {a.status === "uploading" && <progress className="attachment-progress" max={100} value={pct} aria-label={`Uploading ${name}`} />}
      {a.status === "failed" && (
        <span className="attachment-error" data-testid="attachment-error">
          {a.error}
        </span>
      )}
      <button
        type="button"
        className="icon attachment-remove"
        data-testid="attachment-remove"
        aria-label={a.status === "uploading" ? `Cancel the upload of ${name}` : `Remove ${name}`}
        title={a.status === "uploading" ? "Cancel the upload" : a.status === "done" ? "Leave it out of the message (the file stays in the workspace)" : "Remove"}
        onClick={onRemove}
      >
        <X size={14} aria-hidden="true" />
      </button>
    </li>
  );
}
