// The actions under a message, shown on hover and keyboard focus: copy its
// text; on the thread's last reply, retry; on a user message, edit and send
// again. Retry and edit start a new run on the same thread (the API has no
// branches), so they wait while a run is going.
import { Check, Copy, Pencil, RotateCcw } from "lucide-react";
import { useEffect, useRef, useState, type ButtonHTMLAttributes } from "react";

/** How long "Copied" shows after a copy. */
export const COPIED_MS = 2000;

interface Props {
  text: string;
  /** Starts a new run for the same question; set on the last reply only. */
  onRetry?: (() => void) | undefined;
  /** Opens the message for editing; set on user messages. */
  onEdit?: (() => void) | undefined;
  /** A run is going: retry and edit wait for it. */
  busy: boolean;
  onError(err: unknown): void;
}

export function MessageActions({ text, onRetry, onEdit, busy, onError }: Props) {
  const [copied, setCopied] = useState(false);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(true);
      clearTimeout(timer.current);
      timer.current = setTimeout(() => setCopied(false), COPIED_MS);
    } catch (err) {
      onError(err);
    }
  };

  return (
    <div className="msg-actions" data-testid="message-actions">
      <ActionButton label={copied ? "Copied" : "Copy message"} data-testid="message-copy" data-copied={copied || undefined} onClick={() => void copy()}>
        {copied ? <Check size={16} aria-hidden="true" /> : <Copy size={16} aria-hidden="true" />}
      </ActionButton>
      {onEdit && (
        <ActionButton label="Edit and send again" data-testid="message-edit" disabled={busy} onClick={onEdit}>
          <Pencil size={16} aria-hidden="true" />
        </ActionButton>
      )}
      {onRetry && (
        <ActionButton label="Retry: answer the last message again" data-testid="message-retry" disabled={busy} onClick={onRetry}>
          <RotateCcw size={16} aria-hidden="true" />
        </ActionButton>
      )}
      {/* Said once to screen readers: the button's name changes too, but focus stays on it. */}
      <span className="visually-hidden" role="status">
        {copied ? "Copied" : ""}
      </span>
    </div>
  );
}

/**
 * ActionButton is an icon button named by its aria-label, whose tooltip is
 * the chat's shared one (SharedTooltip): a thread's every message has these.
 */
function ActionButton({ label, children, ...rest }: ButtonHTMLAttributes<HTMLButtonElement> & { label: string; "data-testid": string; "data-copied"?: true | undefined }) {
  return (
    <button type="button" aria-label={label} data-tip="" className="icon" {...rest}>
      {children}
    </button>
  );
}

/**
 * MessageEditor edits a user message in place; Send starts a new run with
 * the edited text, Esc or Cancel closes it unchanged.
 */
export function MessageEditor({ text, busy, onSend, onCancel }: { text: string; busy: boolean; onSend(text: string): void; onCancel(): void }) {
  const [draft, setDraft] = useState(text);
  const box = useRef<HTMLTextAreaElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    el.focus();
    el.setSelectionRange(el.value.length, el.value.length);
  }, []);
  const can = !busy && draft.trim() !== "";
  return (
    <form
      className="msg-editor"
      data-testid="message-editor"
      onSubmit={(e) => {
        e.preventDefault();
        if (can) onSend(draft);
      }}
    >
      <textarea
        ref={box}
        aria-label="Edit the message"
        data-testid="message-editor-input"
        value={draft}
        rows={Math.min(8, Math.max(2, draft.split("\n").length))}
        onChange={(e) => setDraft(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Escape") {
            // The page's Esc would cancel a run; here it only closes the editor.
            e.preventDefault();
            e.stopPropagation();
            onCancel();
          } else if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault();
            if (can) onSend(draft);
          }
        }}
      />
      <div className="row msg-editor-buttons">
        <button type="button" data-testid="message-editor-cancel" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="primary" data-testid="message-editor-send" disabled={!can}>
          Send as a new message
        </button>
      </div>
    </form>
  );
}
