// The cards of the chat: messages, tool calls, approvals, questions, run ends and
// events of kinds without a card. Each is memoised on its item: while a run
// streams only the last message re-renders.
import { memo, useState } from "react";

import type { AssistantItem, GenericItem, InterruptItem, Retrieval, RunInfo, SubagentView, ThoughtItem, ToolCardState, ToolItem, UserItem } from "../state/chat";
import { Collapsible, MESSAGE_PREVIEW_CHARS } from "./Collapsible";
import { Markdown } from "./Markdown";
import type { Decision } from "./useThreadChat";

/** The most characters of a tool's output shown before "show all". */
const OUTPUT_PREVIEW_CHARS = 4000;

export const UserMessage = memo(function UserMessage({ item }: { item: UserItem }) {
  return (
    <div className="msg msg-user" data-testid="message" data-role="user">
      <div className="msg-body">
        <Collapsible text={item.text} limit={MESSAGE_PREVIEW_CHARS} render={(shown, cut) => (cut ? shown + "…" : shown)} />
      </div>
    </div>
  );
});

/** knowledge: the retrieval of the reply's run, shown under its last message. */
export const AssistantMessage = memo(function AssistantMessage({ item, knowledge }: { item: AssistantItem; knowledge?: Retrieval | undefined }) {
  return (
    <div className="msg msg-assistant" data-testid="message" data-role="assistant" data-streaming={item.streaming || undefined}>
      <div className="msg-body" data-testid="message-text">
        <Collapsible text={item.text} limit={MESSAGE_PREVIEW_CHARS} render={(shown) => <Markdown text={shown} />} />
        {item.streaming && <span className="cursor" aria-hidden="true" />}
      </div>
      {knowledge && <Sources knowledge={knowledge} />}
    </div>
  );
});

/**
 * ThoughtBlock shows the agent's reasoning apart from its answer: open while
 * it streams, folded once the agent moved on (the user can open it again).
 */
export const ThoughtBlock = memo(function ThoughtBlock({ item }: { item: ThoughtItem }) {
  return (
    <details className="thought" data-testid="thought" data-streaming={item.streaming || undefined} open={item.streaming}>
      <summary className="label muted">{item.streaming ? "Thinking…" : "Thought"}</summary>
      <div className="thought-text muted small" data-testid="thought-text">
        {item.text}
      </div>
    </details>
  );
});

/** Sources lists the knowledge a reply was given, numbered as it cites them ([n]). */
export function Sources({ knowledge }: { knowledge: Retrieval }) {
  if (knowledge.error) {
    return (
      <div className="sources muted small" data-testid="sources-error">
        The knowledge base was not searched: {knowledge.error}
      </div>
    );
  }
  if (knowledge.sources.length === 0) return null;
  return (
    <details className="sources" data-testid="sources" open>
      <summary className="label">Sources</summary>
      <ol className="sources-list">
        {knowledge.sources.map((s) => (
          <li key={s.n} value={s.n} data-testid="source" data-document={s.document} title={s.text}>
            <span className="grow">
              <strong>{s.title || s.document}</strong>
              {s.heading && <span className="muted"> — {s.heading}</span>}
              <span className="muted small">
                {" "}
                · <code>{s.collection}/{s.document}</code>
              </span>
            </span>
            <span className="badge" data-testid="source-score" title="cosine similarity of the query and the chunk">
              {s.score.toFixed(2)}
            </span>
          </li>
        ))}
      </ol>
    </details>
  );
}

function json(v: unknown): string {
  try {
    return JSON.stringify(v, null, 2) ?? "";
  } catch {
    return String(v);
  }
}

function duration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** What a tool card says of its call's state; only "done" is a success. */
export const TOOL_STATE_LABEL: Record<ToolCardState, string> = {
  running: "running…",
  waiting: "waiting for approval",
  done: "done",
  error: "failed",
  cancelled: "cancelled",
  rejected: "rejected",
};

/** The heading of an ended call's error: why it did not give an output. */
const ENDED_LABEL: Partial<Record<ToolCardState, string>> = { cancelled: "Cancelled", rejected: "Rejected" };

function Clipped({ text, className }: { text: string; className: string }) {
  return <Collapsible text={text} limit={OUTPUT_PREVIEW_CHARS} render={(shown, cut) => <pre className={className}>{cut ? shown + "…" : shown}</pre>} />;
}

export const ToolCard = memo(function ToolCard({ item }: { item: ToolItem }) {
  const took = item.startedAt !== undefined && item.endedAt !== undefined ? duration(item.endedAt - item.startedAt) : undefined;
  return (
    <details
      className={`card tool tool-${item.state}`}
      data-testid="tool-card"
      data-tool-name={item.name}
      data-tool-title={item.title}
      data-state={item.state}
    >
      <summary>
        <span className={`dot dot-${item.state}`} aria-hidden="true" />
        {item.title ? (
          <>
            <span className="tool-title">{item.title}</span>
            <code className="tool-name muted">{item.name}</code>
          </>
        ) : (
          <code className="tool-name">{item.name}</code>
        )}
        <span className={`tool-state tool-state-${item.state}`} data-testid="tool-state">
          {TOOL_STATE_LABEL[item.state]}
        </span>
        {took && <span className="muted tool-duration">{took}</span>}
        {item.state === "running" && item.progress && (
          <span className="muted tool-progress" data-testid="tool-progress">
            {item.progress.message ? `${item.progress.message} ` : ""}
            {item.progress.total ? `${item.progress.progress}/${item.progress.total}` : `${item.progress.progress}`}
          </span>
        )}
      </summary>
      <div className="card-body">
        <div className="label">Arguments</div>
        <Clipped className="code" text={json(item.args)} />
        {item.error ? (
          <>
            <div className={item.state === "error" ? "label danger" : "label"}>{ENDED_LABEL[item.state] ?? "Error"}</div>
            <Clipped className={item.state === "error" ? "code danger" : "code"} text={item.error} />
          </>
        ) : item.output !== undefined ? (
          <>
            <div className="label">Output</div>
            <Clipped className="code" text={item.output} />
          </>
        ) : null}
        {item.subagents?.map((v) => <SubagentBlock key={v.runId} view={v} />)}
      </div>
    </details>
  );
});

const SUBAGENT_LABEL = {
  running: "running…",
  completed: "done",
  failed: "failed",
  timeout: "timed out",
  stopped: "stopped",
  cancelled: "cancelled",
} as const;

/**
 * SubagentBlock shows a sub-agent inside the task call's card: its task,
 * status, and its own messages and tool cards (which nest deeper sub-agents).
 */
function SubagentBlock({ view }: { view: SubagentView }) {
  const dot = view.status === "running" ? "running" : view.status === "completed" ? "done" : "error";
  return (
    <div className="subagent" data-testid="subagent" data-name={view.name} data-status={view.status} data-depth={view.depth}>
      <div className="label">
        <span className={`dot dot-${dot}`} aria-hidden="true" /> Sub-agent <code>{view.name}</code>{" "}
        <span className="muted">{SUBAGENT_LABEL[view.status] ?? view.status}</span>
      </div>
      {view.description && <div className="muted small subagent-task">{view.description}</div>}
      <div className="subagent-items">
        {view.chat.items.map((it) =>
          it.kind === "assistant" ? (
            <AssistantMessage key={it.key} item={it} />
          ) : it.kind === "thought" ? (
            <ThoughtBlock key={it.key} item={it} />
          ) : it.kind === "tool" ? (
            <ToolCard key={it.key} item={it} />
          ) : it.kind === "event" ? (
            <GenericEvent key={it.key} item={it} />
          ) : null,
        )}
      </div>
      {view.error && <div className="danger small" data-testid="subagent-error">{view.error}</div>}
    </div>
  );
}

export const GenericEvent = memo(function GenericEvent({ item }: { item: GenericItem }) {
  return (
    <details className="card generic" data-testid="event-generic" data-kind={item.eventKind}>
      <summary>
        <code>{item.eventKind}</code> <span className="muted">event</span>
      </summary>
      <pre className="code">{json(item.data)}</pre>
    </details>
  );
});

export const RunEnd = memo(function RunEnd({ run }: { run: RunInfo | undefined }) {
  if (!run) return null;
  return (
    <div className="run-end" data-testid="run-end">
      {run.error && (
        <div className="run-error" data-testid="run-error" role="alert">
          The run failed: {run.error}
        </div>
      )}
      {run.status === "cancelled" && <div className="muted">Cancelled.</div>}
      {run.status === "stopped" && (
        <div className="muted" data-testid="run-stopped">
          Stopped after its step; everything it did is saved. Continue goes on from here.
        </div>
      )}
      {/* Only what a model reported: an agent backed by an ACP agent reports none. */}
      {!run.restored && run.usage.input + run.usage.output > 0 && (
        <div className="muted run-usage" data-testid="run-usage" title="tokens the run's model calls used">
          {run.usage.input.toLocaleString()} tokens in · {run.usage.output.toLocaleString()} out
        </div>
      )}
    </div>
  );
});

/**
 * QuestionCard shows the model's question (ask_user) with its choices and
 * a box for any other answer; the answer becomes the tool's result.
 */
export const QuestionCard = memo(function QuestionCard({ item, onDecide, onError }: ApprovalProps) {
  const q = item.question!;
  const [text, setText] = useState("");
  const [sent, setSent] = useState<string | undefined>(undefined);
  const open = !item.resolved && sent === undefined;

  const answer = async (a: string) => {
    if (!open || a.trim() === "") return;
    setSent(a);
    try {
      await onDecide(item.runId, [{ tool_call_id: q.toolCallId, action: "answer", message: a }]);
    } catch (err) {
      onError(err);
      setSent(undefined);
    }
  };

  if (item.resolved) {
    return (
      <div className="approval-decided muted small" data-testid="question-answered">
        Asked: {q.text} {sent !== undefined && <>· answered “{sent}”</>}
      </div>
    );
  }
  return (
    <form
      className="card approval"
      data-testid="question-card"
      onSubmit={(e) => {
        e.preventDefault();
        void answer(text);
      }}
    >
      <div className="approval-head">
        <strong>The agent asks:</strong> {q.text}
      </div>
      {q.choices.length > 0 && (
        <div className="row wrap approval-actions">
          {q.choices.map((c) => (
            <button key={c} type="button" data-testid="question-choice" disabled={!open} onClick={() => void answer(c)}>
              {c}
            </button>
          ))}
        </div>
      )}
      <div className="row approval-actions">
        <input
          data-testid="question-input"
          className="grow"
          aria-label="Your answer"
          placeholder={q.choices.length > 0 ? "Or answer in your own words" : "Your answer"}
          value={text}
          disabled={!open}
          onChange={(e) => setText(e.target.value)}
        />
        <button type="submit" className="primary" data-testid="question-answer" disabled={!open || text.trim() === ""}>
          Answer
        </button>
      </div>
      {sent !== undefined && <div className="muted">Sending the answer…</div>}
    </form>
  );
});

/** parseArgs reads edited arguments: a JSON object, or why not. */
export function parseArgs(text: string): { args?: Record<string, unknown>; error?: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return { error: `not JSON: ${(err as Error).message}` };
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return { error: "the arguments must be a JSON object" };
  return { args: v as Record<string, unknown> };
}

interface ApprovalProps {
  item: InterruptItem;
  onDecide(runId: string, decisions: Decision[]): Promise<void>;
  onError(err: unknown): void;
}

/** ApprovalCard asks to approve, edit or reject each tool call a run waits on. */
export const ApprovalCard = memo(function ApprovalCard({ item, onDecide, onError }: ApprovalProps) {
  const [decided, setDecided] = useState<Record<string, Decision>>({});
  const [busy, setBusy] = useState(false);
  const open = !item.resolved && !busy;

  const decide = async (d: Decision) => {
    const all = { ...decided, [d.tool_call_id]: d };
    setDecided(all);
    if (!item.toolCalls.every((tc) => all[tc.id])) return;
    setBusy(true);
    try {
      await onDecide(item.runId, item.toolCalls.map((tc) => all[tc.id]!));
    } catch (err) {
      onError(err);
      setDecided({});
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="approvals" data-run-id={item.runId}>
      {item.toolCalls.map((tc) => (
        <ApprovalCall
          key={tc.id}
          id={tc.id}
          name={tc.name}
          args={tc.args ?? {}}
          decision={decided[tc.id]}
          open={open && !decided[tc.id]}
          resolved={item.resolved}
          offerAlways={!!item.always}
          onDecide={decide}
        />
      ))}
      {busy && <div className="muted">Sending the decision…</div>}
    </div>
  );
});

interface CallProps {
  id: string;
  name: string;
  args: Record<string, unknown>;
  decision: Decision | undefined;
  open: boolean;
  resolved: boolean;
  /** Offer "remember for this thread" (the interrupt says the server takes it). */
  offerAlways: boolean;
  onDecide(d: Decision): void;
}

const DECIDED_LABEL = { approve: "approved", edit: "approved with edited arguments", reject: "rejected", answer: "answered" } as const;

function ApprovalCall(props: CallProps) {
  // Decided: the question is gone; the call's tool card tells what came of it.
  if (props.resolved) {
    return (
      <div className="approval-decided muted small" data-testid="approval-decided">
        <code>{props.name}</code> {props.decision ? DECIDED_LABEL[props.decision.action] : "decided"}
        {props.decision?.always && " (remembered for this thread)"}
      </div>
    );
  }
  return <ApprovalQuestion {...props} />;
}

function ApprovalQuestion({ id, name, args, decision, open, offerAlways, onDecide }: CallProps) {
  const original = json(args);
  const [text, setText] = useState(original);
  const [reason, setReason] = useState("");
  const [always, setAlways] = useState(false);
  const remember = always ? { always: true } : {};
  const parsed = parseArgs(text);
  const edited = text !== original;
  return (
    <div className="card approval" data-testid="approval-card" data-state={decision ? decision.action : "pending"}>
      <div className="approval-head">
        <strong>Approve</strong> <code>{name}</code>?
        {decision && <span className="muted"> · {DECIDED_LABEL[decision.action]}</span>}
      </div>
      <label className="label" htmlFor={`args-${id}`}>
        Arguments (JSON)
      </label>
      <textarea
        id={`args-${id}`}
        data-testid="approval-args"
        className={`code${parsed.error ? " invalid" : ""}`}
        value={text}
        rows={Math.min(12, text.split("\n").length + 1)}
        disabled={!open}
        spellCheck={false}
        aria-invalid={!!parsed.error}
        onChange={(e) => setText(e.target.value)}
      />
      {parsed.error && <div className="danger small">{parsed.error}</div>}
      <div className="row wrap approval-actions">
        <button type="button" className="primary" data-testid="approval-approve" disabled={!open || edited} title={edited ? "the arguments were edited: send them with “Approve edited”" : undefined} onClick={() => onDecide({ tool_call_id: id, action: "approve", ...remember })}>
          Approve
        </button>
        <button
          type="button"
          data-testid="approval-edit"
          disabled={!open || !!parsed.error || !edited}
          onClick={() => parsed.args && onDecide({ tool_call_id: id, action: "edit", args: parsed.args, ...remember })}
        >
          Approve edited
        </button>
      </div>
      <div className="row approval-actions">
        <input
          data-testid="approval-reason"
          className="grow"
          placeholder="Reason to reject (told to the model)"
          value={reason}
          disabled={!open}
          onChange={(e) => setReason(e.target.value)}
        />
        <button type="button" className="danger" data-testid="approval-reject" disabled={!open} onClick={() => onDecide({ tool_call_id: id, action: "reject", message: reason.trim() || "Rejected by the user.", ...remember })}>
          Reject
        </button>
      </div>
      {offerAlways && (
        <label className="check small" title="later calls of this tool on this thread are decided the same, without asking">
          <input type="checkbox" data-testid="approval-always" checked={always} disabled={!open} onChange={(e) => setAlways(e.target.checked)} />
          Decide the same for <code>{name}</code> from now on in this thread
        </label>
      )}
    </div>
  );
}
