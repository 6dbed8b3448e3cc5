// The chat of the open thread: its items, and the box to write in. Enter
// sends, Shift+Enter breaks the line, Esc stops the run.
import { memo, useEffect, useLayoutEffect, useMemo, useRef, useState, type KeyboardEvent } from "react";

import type { ChatItem, ChatState, Retrieval } from "../state/chat";
import { ApprovalCard, AssistantMessage, GenericEvent, RunEnd, ToolCard, UserMessage } from "./Items";
import type { Decision } from "./useThreadChat";

/** How close to the bottom (px) the view must be to follow new content. */
const STICK_PX = 80;

interface ChatProps {
  chat: ChatState;
  loading: boolean;
  running: boolean;
  disabled: boolean;
  placeholder: string;
  onSend(text: string): void;
  onStop(): void;
  onDecide(runId: string, decisions: Decision[]): Promise<void>;
  onError(err: unknown): void;
}

export function Chat({ chat, loading, running, disabled, placeholder, onSend, onStop, onDecide, onError }: ChatProps) {
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
      <Composer running={running} disabled={disabled} onSend={onSend} onStop={onStop} />
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
    case "tool":
      return <ToolCard item={item} />;
    case "interrupt":
      return <ApprovalCard item={item} onDecide={onDecide} onError={onError} />;
    case "event":
      return <GenericEvent item={item} />;
    case "runEnd":
      return <RunEnd run={run} />;
  }
});

interface ComposerProps {
  running: boolean;
  disabled: boolean;
  onSend(text: string): void;
  onStop(): void;
}

export function Composer({ running, disabled, onSend, onStop }: ComposerProps) {
  const [text, setText] = useState("");
  const box = useRef<HTMLTextAreaElement>(null);

  // Esc stops the run from anywhere on the page.
  useEffect(() => {
    if (!running) return;
    const onKey = (e: globalThis.KeyboardEvent) => {
      if (e.key === "Escape" && !e.defaultPrevented) onStop();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [running, onStop]);

  const send = () => {
    if (running || disabled || text.trim() === "") return;
    onSend(text);
    setText("");
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
      <textarea
        ref={box}
        data-testid="chat-input"
        aria-label="Message"
        placeholder={disabled ? "Choose an agent first" : "Message…"}
        title="Enter sends, Shift+Enter breaks the line, Esc stops the run"
        value={text}
        rows={Math.min(8, Math.max(1, text.split("\n").length))}
        disabled={disabled}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={onKeyDown}
      />
      {running ? (
        <button type="button" className="danger" data-testid="chat-stop" onClick={onStop}>
          Stop
        </button>
      ) : (
        <button type="submit" className="primary" data-testid="chat-send" disabled={disabled || text.trim() === ""}>
          Send
        </button>
      )}
    </form>
  );
}
