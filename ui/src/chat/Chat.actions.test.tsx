// The chat's empty state, message actions and their run rules, rendered in jsdom.
import * as Tooltip from "@radix-ui/react-tooltip";
import { act, cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { emptyChat, type ChatItem, type ChatState } from "../state/chat";
import { Chat, retryTarget } from "./Chat";
import { COPIED_MS } from "./MessageActions";

afterEach(cleanup);

const items: ChatItem[] = [
  { kind: "user", key: "u1", text: "first question" },
  { kind: "assistant", key: "a1", runId: "r1", text: "first answer", streaming: false },
  { kind: "user", key: "u2", text: "second question" },
  { kind: "assistant", key: "a2", runId: "r2", text: "partial", streaming: false },
  { kind: "tool", key: "t1", runId: "r2", id: "c1", name: "calculate", args: {}, state: "done" } as unknown as ChatItem,
  { kind: "assistant", key: "a3", runId: "r2", text: "second answer", streaming: false },
];

function renderChat(chat: ChatState, props: { running?: boolean; onSend?: (t: string) => Promise<void> } = {}) {
  const onSend = props.onSend ?? vi.fn(() => Promise.resolve());
  const onError = vi.fn();
  const agent = { agent_id: "helper", name: "Helper", system_prompt: "You help with chores. Always." };
  render(
    <Tooltip.Provider>
      <Chat
        chat={chat}
        agent={agent}
        loading={false}
        running={props.running ?? false}
        disabled={false}
        placeholder="Ask"
        onSend={onSend}
        onStop={vi.fn()}
        onCancel={vi.fn()}
        onContinue={vi.fn()}
        onDecide={vi.fn()}
        onError={onError}
      />
    </Tooltip.Provider>,
  );
  return { onSend, onError };
}

describe("retryTarget", () => {
  it("is the last reply and the user message it answers", () => {
    expect(retryTarget(items)).toEqual({ replyKey: "a3", text: "second question" });
  });
  it("is nothing once a user message follows the last reply, or before any reply", () => {
    expect(retryTarget([...items, { kind: "user", key: "u3", text: "more" }])).toBeUndefined();
    expect(retryTarget([{ kind: "user", key: "u1", text: "q" }])).toBeUndefined();
  });
});

describe("Chat", () => {
  it("shows a new thread the agent and example prompts; a prompt fills the box", () => {
    renderChat(emptyChat);
    expect(screen.getByRole("heading", { name: "Helper" })).toBeTruthy();
    expect(screen.getByTestId("empty-state-description").textContent).toBe("You help with chores.");
    const prompts = screen.getAllByTestId("example-prompt");
    expect(prompts.length).toBe(4);
    fireEvent.click(prompts[1]!);
    const box = screen.getByTestId("chat-input") as HTMLTextAreaElement;
    expect(box.value).toBe(prompts[1]!.textContent);
    expect(document.activeElement).toBe(box);
  });

  it("offers retry on the last reply only; retry sends the question it answered", () => {
    const { onSend } = renderChat({ ...emptyChat, threadId: "th", items });
    const retries = screen.getAllByTestId("message-retry");
    expect(retries).toHaveLength(1);
    expect(retries[0]!.closest(".msg-with-actions")?.textContent).toContain("second answer");
    fireEvent.click(retries[0]!);
    expect(onSend).toHaveBeenCalledWith("second question");
  });

  it("edits a user message and sends it as a new message; Esc closes the editor unchanged", () => {
    const { onSend } = renderChat({ ...emptyChat, threadId: "th", items });
    const box = screen.getByTestId("chat-input") as HTMLTextAreaElement;
    fireEvent.change(box, { target: { value: "a draft" } });
    fireEvent.click(screen.getAllByTestId("message-edit")[0]!);
    let editor = screen.getByTestId("message-editor-input") as HTMLTextAreaElement;
    expect(editor.value).toBe("first question");
    fireEvent.keyDown(editor, { key: "Escape" });
    expect(screen.queryByTestId("message-editor")).toBeNull();
    expect(onSend).not.toHaveBeenCalled();

    fireEvent.click(screen.getAllByTestId("message-edit")[0]!);
    editor = screen.getByTestId("message-editor-input") as HTMLTextAreaElement;
    fireEvent.change(editor, { target: { value: "first question, better put" } });
    fireEvent.click(screen.getByTestId("message-editor-send"));
    expect(onSend).toHaveBeenCalledWith("first question, better put");
    expect(screen.queryByTestId("message-editor")).toBeNull();
    // What was being written in the box stays there.
    expect(box.value).toBe("a draft");
  });

  it("disables retry and edit while a run goes; copy still works", () => {
    renderChat({ ...emptyChat, threadId: "th", items }, { running: true });
    for (const b of [...screen.getAllByTestId("message-retry"), ...screen.getAllByTestId("message-edit")]) expect((b as HTMLButtonElement).disabled).toBe(true);
    for (const b of screen.getAllByTestId("message-copy")) expect((b as HTMLButtonElement).disabled).toBe(false);
  });

  it("a refused retry comes back into the box with the reason", async () => {
    const onSend = vi.fn(() => Promise.reject(new Error("thread is busy")));
    renderChat({ ...emptyChat, threadId: "th", items }, { onSend });
    fireEvent.click(screen.getByTestId("message-retry"));
    await waitFor(() => expect(screen.getByTestId("composer-error")).toBeTruthy());
    expect((screen.getByTestId("chat-input") as HTMLTextAreaElement).value).toBe("second question");
  });
});

describe("copy", () => {
  let writeText: ReturnType<typeof vi.fn>;
  beforeEach(() => {
    writeText = vi.fn(() => Promise.resolve());
    Object.defineProperty(navigator, "clipboard", { value: { writeText }, configurable: true });
    vi.useFakeTimers({ shouldAdvanceTime: true });
  });
  afterEach(() => vi.useRealTimers());

  it("copies the message's text and says Copied for a while", async () => {
    renderChat({ ...emptyChat, threadId: "th", items });
    const copy = screen.getAllByTestId("message-copy")[1]!;
    await act(async () => {
      fireEvent.click(copy);
    });
    expect(writeText).toHaveBeenCalledWith("first answer");
    expect(copy.getAttribute("aria-label")).toBe("Copied");
    expect(screen.getAllByRole("status").some((s) => s.textContent === "Copied")).toBe(true);
    await act(async () => {
      vi.advanceTimersByTime(COPIED_MS + 10);
    });
    expect(copy.getAttribute("aria-label")).toBe("Copy message");
  });
});
