// The composer's run controls and the question card, rendered alone.
import { WickError } from "@wick-agent/sdk";
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import type { InterruptItem } from "../state/chat";
import type { Uploader } from "./attachments";
import { AttachContext } from "./attachmentsUploader";
import { Composer } from "./Composer";
import { QuestionCard } from "./Items";

afterEach(cleanup);

function composer(props: Partial<Parameters<typeof Composer>[0]> = {}) {
  const calls = { onSend: vi.fn(), onStop: vi.fn(), onCancel: vi.fn(), onContinue: vi.fn() };
  render(<Composer running={false} disabled={false} {...calls} {...props} />);
  return calls;
}

describe("Composer", () => {
  it("gives a refused message back with the reason, and clears it once sent", async () => {
    const refusal = new WickError(413, { code: 8, status: "RESOURCE_EXHAUSTED", message: "request body is larger than the limit of 4194304 bytes" });
    const onSend = vi.fn().mockRejectedValueOnce(refusal).mockResolvedValueOnce(undefined);
    composer({ onSend });
    const box = screen.getByTestId("chat-input") as HTMLTextAreaElement;
    fireEvent.change(box, { target: { value: "a long text" } });
    fireEvent.click(screen.getByTestId("chat-send"));
    expect(onSend).toHaveBeenCalledWith("a long text");
    await waitFor(() => expect(screen.getByTestId("composer-error").textContent).toContain("4 MiB"));
    expect(box.value).toBe("a long text");
    expect(box.getAttribute("aria-invalid")).toBe("true");
    fireEvent.click(screen.getByTestId("chat-send"));
    await waitFor(() => expect(screen.queryByTestId("composer-error")).toBeNull());
    expect(box.value).toBe("");
  });

  it("offers Stop (after the step) and Cancel (at once, also Esc) while a run goes", () => {
    const c = composer({ running: true });
    fireEvent.click(screen.getByTestId("chat-stop-step"));
    expect(c.onStop).toHaveBeenCalledTimes(1);
    fireEvent.click(screen.getByTestId("chat-stop"));
    fireEvent.keyDown(window, { key: "Escape" });
    expect(c.onCancel).toHaveBeenCalledTimes(2);
    expect(screen.queryByTestId("chat-send")).toBeNull();
  });

  it("says Stopping… once asked, and cannot stop a run that waits for the user", () => {
    composer({ running: true, stopping: true });
    expect(screen.getByTestId("chat-stop-step").textContent).toBe("Stopping…");
    expect((screen.getByTestId("chat-stop-step") as HTMLButtonElement).disabled).toBe(true);
    cleanup();
    composer({ running: true, waiting: true });
    expect((screen.getByTestId("chat-stop-step") as HTMLButtonElement).disabled).toBe(true);
    expect((screen.getByTestId("chat-stop") as HTMLButtonElement).disabled).toBe(false);
  });

  it("offers Continue only after a stopped run", () => {
    composer();
    expect(screen.queryByTestId("chat-continue")).toBeNull();
    cleanup();
    const c = composer({ canContinue: true });
    fireEvent.click(screen.getByTestId("chat-continue"));
    expect(c.onContinue).toHaveBeenCalledTimes(1);
  });
});

describe("Composer attachments", () => {
  /** Renders the composer of an agent whose uploads the test settles. */
  function attaching(backend: string | null = "local") {
    const uploads: { path: string; done(): void; fail(e: unknown): void }[] = [];
    const uploader: Uploader = {
      list: async () => [],
      upload: (path, file) => new Promise((resolve, reject) => uploads.push({ path, done: () => resolve({ path, bytes: file.size }), fail: reject })),
    };
    const onSend = vi.fn().mockResolvedValue(undefined);
    const agent = { agent_id: "a1", ...(backend ? { backend: { type: backend } } : {}) };
    render(
      <AttachContext.Provider value={{ agent, uploader }}>
        <Composer running={false} disabled={false} onSend={onSend} onStop={vi.fn()} onCancel={vi.fn()} />
      </AttachContext.Provider>,
    );
    const attach = (...names: string[]) =>
      fireEvent.change(screen.getByTestId("attach-input"), { target: { files: names.map((n) => new File(["data"], n)) } });
    return { uploads, onSend, attach };
  }

  it("sends once the uploads are done, naming their paths, and clears the chips", async () => {
    const { uploads, onSend, attach } = attaching();
    attach("notes.txt");
    await waitFor(() => expect(uploads).toHaveLength(1));
    expect(screen.getByTestId("attachment").textContent).toContain("notes.txt");
    fireEvent.change(screen.getByTestId("chat-input"), { target: { value: "Read it" } });
    fireEvent.click(screen.getByTestId("chat-send"));
    await waitFor(() => expect(screen.getByTestId("chat-send").textContent).toBe("Uploading…"));
    expect(onSend).not.toHaveBeenCalled();
    uploads[0]!.done();
    await waitFor(() => expect(onSend).toHaveBeenCalledWith("Read it\n\nAttached files (in the workspace): /workspace/uploads/notes.txt"));
    await waitFor(() => expect(screen.queryByTestId("attachment")).toBeNull());
    expect((screen.getByTestId("chat-input") as HTMLTextAreaElement).value).toBe("");
  });

  it("shows a refused upload on its chip and sends nothing, keeping the text", async () => {
    const { uploads, onSend, attach } = attaching();
    attach("big.bin");
    await waitFor(() => expect(uploads).toHaveLength(1));
    fireEvent.change(screen.getByTestId("chat-input"), { target: { value: "Keep me" } });
    uploads[0]!.fail(new WickError(413, { code: 8, status: "RESOURCE_EXHAUSTED", message: "upload is larger than the limit of 1048576 bytes" }));
    await waitFor(() => expect(screen.getByTestId("attachment-error").textContent).toBe("Too large: the upload limit is 1 MiB"));
    fireEvent.click(screen.getByTestId("chat-send"));
    await waitFor(() => expect(screen.getByTestId("composer-error").textContent).toContain("a file did not upload"));
    expect(onSend).not.toHaveBeenCalled();
    expect((screen.getByTestId("chat-input") as HTMLTextAreaElement).value).toBe("Keep me");
    fireEvent.click(screen.getByTestId("attachment-remove"));
    fireEvent.click(screen.getByTestId("chat-send"));
    await waitFor(() => expect(onSend).toHaveBeenCalledWith("Keep me"));
  });

  it("attaches pasted files", async () => {
    const { uploads } = attaching();
    fireEvent.paste(screen.getByTestId("chat-input"), { clipboardData: { files: [new File(["png"], "image.png")] } });
    await waitFor(() => expect(uploads.map((u) => u.path)).toEqual(["/workspace/uploads/image.png"]));
  });

  it("says why an agent without a backend takes no files", async () => {
    const { uploads, attach } = attaching(null);
    const button = screen.getByTestId("attach-button");
    expect(button.getAttribute("aria-disabled")).toBe("true");
    fireEvent.click(button);
    expect(screen.getByTestId("attach-notice").textContent).toContain("no workspace (no backend)");
    attach("a.txt");
    expect(uploads).toHaveLength(0);
  });
});

describe("QuestionCard", () => {
  const item: InterruptItem = {
    kind: "interrupt",
    key: "i1",
    runId: "r1",
    toolCalls: [{ id: "q1", name: "ask_user" }],
    question: { toolCallId: "q1", text: "Which colour?", choices: ["red", "blue"] },
    resolved: false,
  };

  it("answers with a choice", async () => {
    const onDecide = vi.fn(async () => {});
    render(<QuestionCard item={item} onDecide={onDecide} onError={vi.fn()} />);
    expect(screen.getByTestId("question-card").textContent).toContain("Which colour?");
    fireEvent.click(screen.getAllByTestId("question-choice")[1]!);
    expect(onDecide).toHaveBeenCalledWith("r1", [{ tool_call_id: "q1", action: "answer", message: "blue" }]);
  });

  it("answers in the user's words, and only with some", () => {
    const onDecide = vi.fn(async () => {});
    render(<QuestionCard item={item} onDecide={onDecide} onError={vi.fn()} />);
    const answer = screen.getByTestId("question-answer") as HTMLButtonElement;
    expect(answer.disabled).toBe(true);
    fireEvent.change(screen.getByTestId("question-input"), { target: { value: "green" } });
    fireEvent.click(answer);
    expect(onDecide).toHaveBeenCalledWith("r1", [{ tool_call_id: "q1", action: "answer", message: "green" }]);
  });
});
