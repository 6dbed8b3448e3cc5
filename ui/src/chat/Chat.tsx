// The chat of the open thread: its items, and the box to write in. Enter
// sends, Shift+Enter breaks the line, Esc cancels the run. Stop lets the
// run finish its step first; Continue goes on from a stopped run.
import { memo, useEffect, useLayoutEffect, useMemo, useRef, useState, type KeyboardEvent } from "react";

import { stoppedRunId, type ChatItem, type ChatState, type Retrieval } from "../state/chat";
import { refusalText } from "./refusal";
import { ApprovalCard, AssistantMessage, GenericEvent, QuestionCard, RunEnd, ThoughtBlock, ToolCard, UserMessage } from "./Items";
import type { Decision } from "./useThreadChat";

/** How close to the bottom (px) the view must be to follow new content. */
const STICK_PX = 80;

interface ChatProps {
  chat: ChatState;
  loading: boolean;
  running: boolean;
  disabled: boolean;
  placeholder: string;
  onSend(text: string): void | Promise<void>;
  onStop(): void;
  onCancel(): void;
  onContinue(): void;
  onDecide(runId: string, decisions: Decision[]): Promise<void>;
  onError(err: unknown): void;
}

export function Chat({ chat, loading, running, disabled, placeholder, onSend, onStop, onCancel, onContinue, onDecide, onError }: ChatProps) {
  const scroller = useRef<HTMLDivElement>(null);
  const stick = useRef(true);

  useLayoutEffect(() => {
    const el = scroller.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [chat.items]);

  // A run's sources go under its last message: the reply that cites them.
  const lastReplyOfRun = useMemo(() => {
    const keys = new Map<string, string>();
    for (const it of chat.items) if (it.kind === "assistant" && it.runId !== "") keys.set(it.runId, it.key);
    return new Set(keys.values());
  }, [chat.items]);

  return (
    <section className="chat" aria-label="Chat">
      <div
        className="messages"
        ref={scroller}
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < STICK_PX;
        }}
      >
        {chat.items.length === 0 && !loading && <div className="empty muted">{placeholder}</div>}
        {loading && <div className="empty muted">Loading the thread…</div>}
        {chat.items.map((it) => (
          <Item
            key={it.key}
            item={it}
            run={it.kind === "runEnd" ? chat.runs[it.runId] : undefined}
            knowledge={it.kind === "assistant" && lastReplyOfRun.has(it.key) ? chat.runs[it.runId]?.knowledge : undefined}
            onDecide={onDecide}
            onError={onError}
          />
        ))}
      </div>
      <Composer
        running={running}
        stopping={!!(chat.activeRunId && chat.runs[chat.activeRunId]?.stopping)}
        waiting={!!(chat.activeRunId && chat.runs[chat.activeRunId]?.status === "interrupted")}
        canContinue={!running && stoppedRunId(chat) !== undefined}
        disabled={disabled}
        onSend={onSend}
        onStop={onStop}
        onCancel={onCancel}
        onContinue={onContinue}
      />
    </section>
  );
}

const Item = memo(function Item({
  item,
  run,
  knowledge,
  onDecide,
  onError,
}: {
  item: ChatItem;
  run: ChatState["runs"][string] | undefined;
  knowledge: Retrieval | undefined;
  onDecide: ChatProps["onDecide"];
  onError: ChatProps["onError"];
}) {
  switch (item.kind) {
    case "user":
      return <UserMessage item={item} />;
    case "assistant":
      return <AssistantMessage item={item} knowledge={knowledge} />;
    case "thought":
      return <ThoughtBlock item={item} />;
    case "tool":
      return <ToolCard item={item} />;
    case "interrupt":
      return item.question ? <QuestionCard item={item} onDecide={onDecide} onError={onError} /> : <ApprovalCard item={item} onDecide={onDecide} onError={onError} />;
    case "event":
      return <GenericEvent item={item} />;
    case "runEnd":
      return <RunEnd run={run} />;
  }
});

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

export function Composer({ running, stopping, waiting, canContinue, disabled, onSend, onStop, onCancel, onContinue }: ComposerProps) {
  const [text, setText] = useState("");
  const [refusal, setRefusal] = useState<string | undefined>();
  const box = useRef<HTMLTextAreaElement>(null);

  // Esc cancels the run from anywhere on the page.
  useEffect(() => {
    if (!running) return;
    const onKey = (e: globalThis.KeyboardEvent) => {
      if (e.key === "Escape" && !e.defaultPrevented) onCancel();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [running, onCancel]);

  const send = () => {
    if (running || disabled || text.trim() === "") return;
    const sent = text;
    setText("");
    setRefusal(undefined);
    const taken = onSend(sent);
    if (!taken) return;
    taken.catch((err: unknown) => {
      // Nothing typed since: the message comes back to be shortened or sent again.
      setText((t) => (t === "" ? sent : t));
      setRefusal(refusalText(err));
      box.current?.focus();
    });
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      send();
    }
  };

  return (
    <form
      className="composer"
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
      <textarea
        ref={box}
        data-testid="chat-input"
        aria-label="Message"
        placeholder={disabled ? "Choose an agent first" : "Message…"}
        title="Enter sends, Shift+Enter breaks the line, Esc cancels the run"
        value={text}
        rows={Math.min(8, Math.max(1, text.split("\n").length))}
        disabled={disabled}
        aria-invalid={refusal ? true : undefined}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={onKeyDown}
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
          <button type="submit" className="primary" data-testid="chat-send" disabled={disabled || text.trim() === ""}>
            Send
          </button>
        </>
      )}
    </form>
  );
}
