// The box to write in, under the chat: Enter sends, Shift+Enter breaks the
// line, Esc cancels the run; Stop lets the run finish its step first and
// Continue goes on from a stopped run. A refused message comes back.
// Files are attached with the paperclip, by dropping them on the chat or by
// pasting them: each uploads into the agent's workspace at once, and the
// message, sent once every upload is done, names their paths.
import {
  forwardRef,
  useContext,
  useEffect,
  useImperativeHandle,
  useRef,
  useState,
  type KeyboardEvent,
  type Ref,
} from "react";

import { AttachmentChips, AttachButton, useAttachments } from "./attachmentsView";
import { messageWith } from "./attachments";
import { AttachContext } from "./attachmentsUploader";
import { refusalText } from "./refusal";

interface ComposerProps {
  running: boolean;
  /** A graceful stop was asked for; the run ends after its step. */
  stopping?: boolean;
  /** The run waits for the user, who answers or cancels: it cannot be stopped. */
  waiting?: boolean;
  /** The thread's last run was stopped: Continue goes on from it. */
  canContinue?: boolean;
  disabled: boolean;
  /** Rejects when the server refused the message: the box then gets it back, with the reason. */
  onSend(text: string): void | Promise<void>;
  onStop(): void;
  onCancel(): void;
  onContinue?(): void;
}

/** What the chat asks of its box. */
export interface ComposerHandle {
  focus(): void;
  /** Puts text in the box (an example prompt), to be edited or sent. */
  fill(text: string): void;
  /**
   * Sends text as if typed (a retry, an edited message), leaving what is in
   * the box; a refused message comes back into an empty box, with the reason.
   */
  submit(text: string): void;
}

export const Composer = forwardRef(function Composer(
  { running, stopping, waiting, canContinue, disabled, onSend, onStop, onCancel, onContinue }: ComposerProps,
  ref: Ref<ComposerHandle>,
) {
  const [text, setText] = useState("");
  const [refusal, setRefusal] = useState<string | undefined>();
  const box = useRef<HTMLTextAreaElement>(null);
  const form = useRef<HTMLFormElement>(null);
  const target = useContext(AttachContext);
  const files = useAttachments(target, form, disabled);
  // Waiting for uploads before the message goes.
  const [awaiting, setAwaiting] = useState(false);
  const sendingRef = useRef(false);

  // Esc cancels the run from anywhere on the page.
  useEffect(() => {
    if (!running) return;
    const onKey = (e: globalThis.KeyboardEvent) => {
      if (e.key === "Escape" && !e.defaultPrevented) onCancel();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [running, onCancel]);

  const submit = async (sent: string, fromBox: boolean) => {
    const attached = fromBox ? files.list.items.length > 0 : false;
    if (running || disabled || (sent.trim() === "" && !attached) || sendingRef.current) return;
    setRefusal(undefined);
    let message = sent;
    if (attached) {
      // The text stays in the box until the uploads are done and the message goes.
      sendingRef.current = true;
      setAwaiting(true);
      await files.list.settled();
      sendingRef.current = false;
      setAwaiting(false);
      // Every chip removed meanwhile (or another agent opened): nothing goes; the text stays.
      if (files.list.items.length === 0) return;
      if (files.list.items.some((a) => a.status !== "done")) {
        setRefusal("Not sent: a file did not upload. Remove it (its chip says why), or attach it again.");
        return;
      }
      message = messageWith(sent, files.list.paths());
    }
    if (fromBox) setText("");
    const taken = onSend(message);
    if (!taken) {
      if (attached) files.list.clear();
      return;
    }
    taken.then(
      () => {
        if (attached) files.list.clear();
      },
      (err: unknown) => {
        // Nothing typed since: the message comes back to be shortened or sent again.
        setText((t) => (t === "" ? sent : t));
        setRefusal(refusalText(err));
        box.current?.focus();
      },
    );
  };
  const send = () => void submit(text, true);
  const submitRef = useRef(submit);
  submitRef.current = submit;

  useImperativeHandle(
    ref,
    () => ({
      focus: () => box.current?.focus(),
      fill: (t: string) => {
        setText(t);
        setRefusal(undefined);
        box.current?.focus();
      },
      submit: (t: string) => void submitRef.current(t, false),
    }),
    [],
  );

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      send();
    }
  };

  return (
    <form
      ref={form}
      className={`composer${files.dragging ? " composer-drop" : ""}`}
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      {refusal && (
        <p className="composer-error" role="alert" data-testid="composer-error">
          {refusal}
        </p>
      )}
      {target && <AttachmentChips state={files} />}
      {target && <AttachButton state={files} />}
      <textarea
        ref={box}
        data-testid="chat-input"
        aria-label="Message"
        placeholder={disabled ? "Choose an agent first" : "Message…"}
        title="Enter sends, Shift+Enter breaks the line, Esc cancels the run"
        value={text}
        rows={Math.min(8, Math.max(1, text.split("\n").length))}
        disabled={disabled}
        readOnly={awaiting}
        aria-invalid={refusal ? true : undefined}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={onKeyDown}
        onPaste={(e) => {
          // Pasted files (a screenshot, files copied in a file manager) are attached; text pastes as ever.
          const pasted = Array.from(e.clipboardData.files);
          if (!target || pasted.length === 0) return;
          e.preventDefault();
          files.add(pasted);
        }}
      />
      {running ? (
        <>
          <button
            type="button"
            data-testid="chat-stop-step"
            title={
              waiting
                ? "The run waits for you: answer it, or cancel it"
                : "Stop after the step in flight (the model call or the tool round) is done and saved; Continue goes on later"
            }
            disabled={stopping || waiting}
            onClick={onStop}
          >
            {stopping ? "Stopping…" : "Stop"}
          </button>
          <button type="button" className="danger" data-testid="chat-stop" title="Cancel at once (Esc): tool calls in flight are cut short" onClick={onCancel}>
            Cancel
          </button>
        </>
      ) : (
        <>
          {canContinue && onContinue && (
            <button type="button" data-testid="chat-continue" title="Go on from where the stopped run left off" onClick={onContinue}>
              Continue
            </button>
          )}
          <button
            type="submit"
            className="primary"
            data-testid="chat-send"
            disabled={disabled || awaiting || (text.trim() === "" && files.items.length === 0)}
            title={awaiting ? "The message goes once its files are uploaded" : undefined}
          >
            {awaiting ? "Uploading…" : "Send"}
          </button>
        </>
      )}
    </form>
  );
});
