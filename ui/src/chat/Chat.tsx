// The chat of the open thread: its items, and the box to write in. Enter
// sends, Shift+Enter breaks the line, Esc cancels the run. Stop lets the
// run finish its step first; Continue goes on from a stopped run. A new
// thread shows the agent and example prompts; messages have actions (copy,
// retry the last reply, edit and send a user message again). The items are
// in a virtualised list (MessageList): only those near the view are in the
// DOM; the view follows new content only while it is at the bottom, else
// offers a button that goes there.
import * as Tooltip from "@radix-ui/react-tooltip";
import {
  forwardRef,
  memo,
  useCallback,
  useImperativeHandle,
  useLayoutEffect,
  useMemo,
  useRef,
  useState,
  type Ref,
} from "react";

import type { Agent } from "../sidebar/Agents";
import { stoppedRunId, type ChatItem, type ChatState, type Retrieval } from "../state/chat";
import "./actions.css";
import { Composer, type ComposerHandle } from "./Composer";
import { EmptyState } from "./EmptyState";
import { MessageActions, MessageEditor } from "./MessageActions";
import { ApprovalCard, AssistantMessage, GenericEvent, QuestionCard, RunEnd, ThoughtBlock, ToolCard, UserMessage } from "./Items";
import { MessageList, type MessageListHandle } from "./MessageList";
import { SharedTooltip, TIP_DELAY_MS } from "./SharedTooltip";
import type { Decision } from "./useThreadChat";

/** What the page's shortcuts ask of the chat. */
export interface ChatHandle {
  focusComposer(): void;
  /** Goes to the newest message; false when there was nowhere to go. */
  scrollToBottom(): boolean;
}

/**
 * retryTarget is the key of the reply that Retry belongs to (the thread's
 * last assistant message, with no user message after it) and the user
 * message it answered.
 */
export function retryTarget(items: readonly ChatItem[]): { replyKey: string; text: string } | undefined {
  let replyKey: string | undefined;
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i]!;
    if (it.kind === "user") return replyKey ? { replyKey, text: it.text } : undefined;
    if (it.kind === "assistant" && replyKey === undefined && it.text.trim() !== "") replyKey = it.key;
  }
  return undefined;
}

interface ChatProps {
  chat: ChatState;
  /** The open agent: a new thread shows it, with example prompts. */
  agent?: Agent | undefined;
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

export const Chat = forwardRef(function Chat(
  { chat, agent, loading, running, disabled, placeholder, onSend, onStop, onCancel, onContinue, onDecide, onError }: ChatProps,
  ref: Ref<ChatHandle>,
) {
  const list = useRef<MessageListHandle>(null);
  const section = useRef<HTMLElement>(null);
  const composer = useRef<ComposerHandle>(null);
  const [editing, setEditing] = useState<string | undefined>();

  // Another thread opens with no editor open.
  useLayoutEffect(() => setEditing(undefined), [chat.threadId]);

  const scrollToBottom = useCallback(() => list.current?.scrollToBottom() ?? false, []);
  useImperativeHandle(ref, () => ({ focusComposer: () => composer.current?.focus(), scrollToBottom }), [scrollToBottom]);

  const retry = useMemo(() => retryTarget(chat.items), [chat.items]);
  const retryText = retry?.text;
  const busy = running || disabled;
  const onRetry = useCallback(() => {
    if (retryText !== undefined) composer.current?.submit(retryText);
  }, [retryText]);
  const onEditSend = useCallback((text: string) => {
    setEditing(undefined);
    composer.current?.submit(text);
  }, []);

  // A run's sources go under its last message: the reply that cites them.
  const lastReplyOfRun = useMemo(() => {
    const keys = new Map<string, string>();
    for (const it of chat.items) if (it.kind === "assistant" && it.runId !== "") keys.set(it.runId, it.key);
    return new Set(keys.values());
  }, [chat.items]);

  const empty = chat.items.length === 0;
  const header = useMemo(
    () => (
      <>
        {empty && !loading && (agent && !disabled ? (
          <EmptyState agent={agent} onPick={(p) => composer.current?.fill(p)} />
        ) : (
          <div className="empty muted">{placeholder}</div>
        ))}
        {loading && <div className="empty muted">Loading the thread…</div>}
      </>
    ),
    [empty, loading, agent, disabled, placeholder],
  );

  const renderItem = (it: ChatItem) => (
    <Item
      item={it}
      run={it.kind === "runEnd" ? chat.runs[it.runId] : undefined}
      knowledge={it.kind === "assistant" && lastReplyOfRun.has(it.key) ? chat.runs[it.runId]?.knowledge : undefined}
      busy={busy}
      editing={editing === it.key}
      onRetry={retry?.replyKey === it.key ? onRetry : undefined}
      onEdit={setEditing}
      onEditSend={onEditSend}
      onDecide={onDecide}
      onError={onError}
    />
  );

  return (
    // Its own tooltip provider: the chat renders alone too (a nested one is allowed).
    <Tooltip.Provider delayDuration={TIP_DELAY_MS}>
    <section className="chat" aria-label="Chat" ref={section}>
      <SharedTooltip root={section} />
      <MessageList
        ref={list}
        threadId={chat.threadId}
        items={chat.items}
        keep={editing}
        renderItem={renderItem}
        header={header}
      />
      <Composer
        ref={composer}
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
    </Tooltip.Provider>
  );
});

const Item = memo(function Item({
  item,
  run,
  knowledge,
  busy,
  editing,
  onRetry,
  onEdit,
  onEditSend,
  onDecide,
  onError,
}: {
  item: ChatItem;
  run: ChatState["runs"][string] | undefined;
  knowledge: Retrieval | undefined;
  busy: boolean;
  editing: boolean;
  onRetry: (() => void) | undefined;
  onEdit(key: string | undefined): void;
  onEditSend(text: string): void;
  onDecide: ChatProps["onDecide"];
  onError: ChatProps["onError"];
}) {
  switch (item.kind) {
    case "user":
      if (editing) return <MessageEditor text={item.text} busy={busy} onSend={onEditSend} onCancel={() => onEdit(undefined)} />;
      return (
        <div className="msg-with-actions msg-with-actions-user">
          <UserMessage item={item} />
          <MessageActions text={item.text} busy={busy} onEdit={() => onEdit(item.key)} onError={onError} />
        </div>
      );
    case "assistant":
      if (item.streaming || item.text.trim() === "") return <AssistantMessage item={item} knowledge={knowledge} />;
      return (
        <div className="msg-with-actions">
          <AssistantMessage item={item} knowledge={knowledge} />
          <MessageActions text={item.text} busy={busy} onRetry={onRetry} onError={onError} />
        </div>
      );
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
