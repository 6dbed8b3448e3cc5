// The chat of one thread as a pure reducer of run events: what the chat
// view renders and what the side panels read (todos, written files). Events
// are applied in batches (one per animation frame while streaming), each
// event at most once: a re-join that overlaps, a duplicate or a stale event
// is dropped by its id, the event's position in its run's log.
import { EVENT_KINDS } from "@wick-agent/sdk";
import type {
  KnowledgeRetrievalEvent,
  SubagentEndEvent,
  SubagentEventEvent,
  SubagentInnerEvent,
  SubagentStartEvent,
  SubagentTags,
  Todo,
  ToolCall,
  WickEvent,
  components,
} from "@wick-agent/sdk";

import type { WrittenFile } from "../panels/types";
import { compareEventIds } from "./eventId";

type AgentState = components["schemas"]["wick.agent.v1.AgentState"];

/**
 * How a tool call stands: "waiting" for the user's approval before it runs,
 * "running", or ended: "done", "error" (it failed), "cancelled" (the run
 * ended before it finished, or the call was not needed) or "rejected" (the
 * user said no).
 */
export type ToolCardState = "running" | "waiting" | "done" | "error" | "cancelled" | "rejected";
/** "stopped": stopped gracefully after a step (POST /runs/{id}/stop); a new run may continue it. */
export type RunStatus = "running" | "interrupted" | "done" | "stopped" | "error" | "cancelled";

export interface UserItem {
  kind: "user";
  key: string;
  text: string;
}

export interface AssistantItem {
  kind: "assistant";
  key: string;
  runId: string;
  text: string;
  /** More text may follow; a finished message's Markdown never changes. */
  streaming: boolean;
}

/**
 * The agent's reasoning (on_thought_stream), shown apart from its answer:
 * one item per uninterrupted run of thought chunks.
 */
export interface ThoughtItem {
  kind: "thought";
  key: string;
  runId: string;
  text: string;
  /** More of this thought may follow. */
  streaming: boolean;
}

export interface ToolItem {
  kind: "tool";
  key: string;
  runId: string;
  toolCallId: string;
  name: string;
  /** The call's display text, when the tool gives one (an ACP agent's title). */
  title?: string;
  args: unknown;
  state: ToolCardState;
  output?: string;
  error?: string;
  /** Client clock (ms) when the start and the end were applied: the duration shown. */
  startedAt?: number;
  endedAt?: number;
  /** The sub-agents this call (the task tool) started, shown nested in its card. */
  subagents?: SubagentView[];
  /** The latest progress an MCP tool reported while it runs. */
  progress?: { progress: number; total?: number; message?: string };
}

/** "running" until on_subagent_end, then its status: completed, failed, timeout, stopped or cancelled. */
export type SubagentStatus = "running" | "completed" | "failed" | "timeout" | "stopped" | "cancelled";

/**
 * A sub-agent started by a task call: its own chat (messages and tool cards,
 * which may hold sub-agents of their own), built from its wrapped events.
 */
export interface SubagentView {
  runId: string;
  threadId: string;
  name: string;
  depth: number;
  /** The task it was handed. */
  description: string;
  status: SubagentStatus;
  error?: string;
  chat: ChatState;
}

/** The model's question to the user (ask_user), answered through resume. */
export interface Question {
  toolCallId: string;
  text: string;
  /** Answers offered; any text is accepted. */
  choices: string[];
}

/**
 * A tool call an approval card waits on: an interrupt's ToolCall with the
 * id and name the API may leave out filled in with "".
 */
export interface PendingCall extends ToolCall {
  id: string;
  name: string;
}

export interface InterruptItem {
  kind: "interrupt";
  key: string;
  runId: string;
  toolCalls: PendingCall[];
  /** Set when the run waits for an answer rather than for approval. */
  question?: Question;
  /** The server takes an "always" decision: remembered on the thread for the call's tool (or kind). */
  always?: boolean;
  /** Decided, or the run went on or ended: the card no longer asks. */
  resolved: boolean;
}

/** An event of a kind the UI has no card for, shown as it came. */
export interface GenericItem {
  kind: "event";
  key: string;
  runId: string;
  eventKind: string;
  eventId: string;
  data: unknown;
}

/** The end of a run: its usage, and its error or cancellation. */
export interface RunEndItem {
  kind: "runEnd";
  key: string;
  runId: string;
}

export type ChatItem = UserItem | AssistantItem | ThoughtItem | ToolItem | InterruptItem | GenericItem | RunEndItem;

export interface Usage {
  input: number;
  output: number;
}

/** What the knowledge hook searched for and put into a run's prompt: the sources its reply cites as [n]. */
export type Retrieval = KnowledgeRetrievalEvent["data"];

export interface RunInfo {
  runId: string;
  status: RunStatus;
  /** The last event applied: where a re-join continues. */
  lastEventId: string;
  usage: Usage;
  /** The run's error in words (status "error"). */
  error?: string;
  stopReason?: string;
  /** The run's knowledge retrieval (on_knowledge_retrieval), shown as the reply's Sources. */
  knowledge?: Retrieval;
  /** A graceful stop was asked for: the run ends after its step. */
  stopping?: boolean;
  /** Known from this tab's storage, not from its events: no usage to show. */
  restored?: boolean;
}

export interface ChatState {
  threadId?: string;
  items: ChatItem[];
  runs: Record<string, RunInfo>;
  /** The run whose events arrive now, if any. */
  activeRunId?: string;
  todos: Todo[];
  /** Newest first. */
  writtenFiles: WrittenFile[];
}

export const emptyChat: ChatState = { items: [], runs: {}, todos: [], writtenFiles: [] };

/** The tools whose success writes the file named by their "path" argument. */
const WRITING_TOOLS = new Set(["write_file", "edit_file"]);
/** The agent-facing workspace a relative path is under (BackendConfig.workdir's default). */
const WORKDIR = "/workspace";

let userSeq = 0;

/** addUserMessage shows the message the user sent, before its run's first event. */
export function addUserMessage(state: ChatState, text: string): ChatState {
  userSeq++;
  return { ...state, items: [...state.items, { kind: "user", key: `user-${Date.now()}-${userSeq}`, text }] };
}

/** removeItem takes the item keyed key out of the chat (a message the server refused). */
export function removeItem(state: ChatState, key: string): ChatState {
  const items = state.items.filter((it) => it.key !== key);
  return items.length === state.items.length ? state : { ...state, items };
}

/** applyEvents applies a batch of events; now is the client clock (ms) for tool durations. */
export function applyEvents(state: ChatState, events: readonly WickEvent[], now: number): ChatState {
  let s = state;
  for (const ev of events) s = applyEvent(s, ev, now);
  return s;
}

/** applyEvent applies one event of runId's log (ev.run_id when it has one). */
export function applyEvent(state: ChatState, ev: WickEvent, now: number, runIdHint?: string): ChatState {
  const runId = ev.run_id ?? (ev.event === "on_run_start" ? ev.data.run_id : undefined) ?? runIdHint ?? state.activeRunId;
  if (!runId) return state;
  const known = state.runs[runId];
  if (known && ev.id !== "" && compareEventIds(ev.id, known.lastEventId) <= 0) {
    // Already applied, or older than what was: the log is ordered, so an
    // event at or before the last one applied is a repeat.
    return state;
  }
  const run: RunInfo = known
    ? { ...known, lastEventId: ev.id || known.lastEventId }
    : { runId, status: "running", lastEventId: ev.id, usage: { input: 0, output: 0 } };
  let s: ChatState = {
    ...state,
    runs: { ...state.runs, [runId]: run },
    threadId: state.threadId ?? ev.thread_id,
  };
  if (run.status === "running" || run.status === "interrupted") s.activeRunId = runId;
  if (run.status === "interrupted" && ev.event !== "on_interrupt" && ev.event !== "on_usage" && !announcesWaitingCall(state, runId, ev)) {
    // The run went on: it was resumed.
    s = resolveInterrupts(s, runId);
    s = setRun(s, runId, { status: "running" });
  }

  switch (ev.event) {
    case "on_run_start":
      return s;
    case "on_chat_model_stream": {
      const delta = ev.data.delta ?? "";
      if (delta === "") return s;
      const last = s.items[s.items.length - 1];
      if (last?.kind === "assistant" && last.runId === runId && last.streaming) {
        return replaceItem(s, s.items.length - 1, { ...last, text: last.text + delta });
      }
      s = endStreaming(s, runId);
      return pushItem(s, { kind: "assistant", key: `a-${runId}-${ev.id}`, runId, text: delta, streaming: true });
    }
    case "on_thought_stream": {
      const delta = ev.data.delta ?? "";
      if (delta === "") return s;
      const last = s.items[s.items.length - 1];
      if (last?.kind === "thought" && last.runId === runId && last.streaming) {
        return replaceItem(s, s.items.length - 1, { ...last, text: last.text + delta });
      }
      s = endStreaming(s, runId);
      return pushItem(s, { kind: "thought", key: `th-${runId}-${ev.id}`, runId, text: delta, streaming: true });
    }
    case "on_tool_start": {
      s = endStreaming(s, runId);
      const id = ev.data.tool_call_id;
      const i = findTool(s, id);
      const waiting = announcesWaitingCall(state, runId, ev);
      const item: ToolItem = {
        kind: "tool",
        key: `t-${runId}-${id}`,
        runId,
        toolCallId: id,
        name: ev.name ?? "tool",
        ...(ev.data.title ? { title: ev.data.title } : {}),
        args: ev.data.args ?? {},
        state: waiting ? "waiting" : "running",
        startedAt: now,
      };
      return i >= 0 ? replaceItem(s, i, { ...(s.items[i] as ToolItem), ...item }) : pushItem(s, item);
    }
    case "on_tool_end": {
      s = endStreaming(s, runId);
      const id = ev.data.tool_call_id;
      const failed = !!ev.data.error;
      const state = endedToolState(ev.data.error);
      let i = findTool(s, id);
      if (i < 0) {
        // The start came before the events this page has (a join that
        // began later): show the end alone.
        s = pushItem(s, { kind: "tool", key: `t-${runId}-${id}`, runId, toolCallId: id, name: ev.name ?? "tool", args: {}, state: "running" });
        i = s.items.length - 1;
      }
      const tool = s.items[i] as ToolItem;
      const ended: ToolItem = {
        ...tool,
        state,
        endedAt: now,
        ...(ev.data.output !== undefined ? { output: ev.data.output } : {}),
        ...(failed ? { error: ev.data.error } : {}),
      };
      s = replaceItem(s, i, ended);
      if (!failed && WRITING_TOOLS.has(ended.name)) s = recordWrite(s, ended.args, runId, ev.id);
      return s;
    }
    case "on_todos":
      return { ...s, todos: ev.data.todos ?? [] };
    case "on_interrupt": {
      s = endStreaming(s, runId);
      s = setRun(s, runId, { status: "interrupted" });
      const d = ev.data;
      const question: Question | undefined =
        d.kind === "question" ? { toolCallId: d.tool_call_id ?? d.tool_calls?.[0]?.id ?? "", text: d.question ?? "", choices: d.choices ?? [] } : undefined;
      const toolCalls = (d.tool_calls ?? []).map((tc) => ({ ...tc, id: tc.id ?? "", name: tc.name ?? "" }));
      return pushItem(s, { kind: "interrupt", key: `i-${runId}-${ev.id}`, runId, toolCalls, resolved: false, ...(question ? { question } : {}), ...(d.always && !question ? { always: true } : {}) });
    }
    case "on_usage": {
      const u = s.runs[runId]!.usage;
      return setRun(s, runId, {
        usage: { input: u.input + Number(ev.data.input_tokens ?? 0), output: u.output + Number(ev.data.output_tokens ?? 0) },
      });
    }
    case "on_knowledge_retrieval": {
      // The sources put into the run's prompt, which its reply cites as [n].
      const { query = "", sources = [], error } = ev.data;
      return setRun(s, runId, { knowledge: { query, sources, ...(error ? { error } : {}) } });
    }
    case "on_subagent_start":
    case "on_subagent_event":
    case "on_subagent_end":
      return applySubagent(s, ev, now);
    case "done":
      return endRun(s, runId, { status: ev.data.stop_reason === "stopped" ? "stopped" : "done", stopReason: ev.data.stop_reason }, now);
    case "error": {
      // A run's own error names what ended it in code (an end made from the
      // run's record has no stop_reason); a sub-agent's wrapped error carries
      // only its loop's stop_reason.
      const cancelled = ev.data.code === "cancelled" || ev.data.stop_reason === "cancelled";
      return endRun(s, runId, {
        status: cancelled ? "cancelled" : "error",
        ...(ev.data.stop_reason ? { stopReason: ev.data.stop_reason } : {}),
        ...(cancelled ? {} : { error: ev.data.message || "the run failed" }),
      }, now);
    }
    case "on_tool_progress": {
      const { tool_call_id: id, progress = 0, total, message } = ev.data;
      return updateTool(s, runId, id ?? "", (t) => ({
        ...t,
        progress: { progress: Number(progress), ...(total !== undefined ? { total: Number(total) } : {}), ...(message ? { message } : {}) },
      }));
    }
    case "on_mcp_server_error":
      // An MCP server the agent names could not start or list its tools:
      // the card names it and shows its stderr.
      return pushItem(s, { kind: "event", key: `e-${runId}-${ev.id}`, runId, eventKind: ev.event, eventId: ev.id, data: ev.data });
    case "on_task_start":
    case "on_task_update":
    case "on_task_end":
      // Background tasks outlive their run: the Tasks panel reads them
      // through the API, and the tool call's card already says one started.
      return s;
    case "unknown":
      return pushItem(s, { kind: "event", key: `e-${runId}-${ev.id}`, runId, eventKind: ev.kind, eventId: ev.id, data: ev.data });
  }
}

/**
 * endRunLocally ends a run the page can no longer follow (the stream
 * failed for good): its open cards stop spinning, the error says why.
 */
export function endRunLocally(state: ChatState, runId: string, error: string, now: number): ChatState {
  if (!state.runs[runId]) return state;
  return endRun(state, runId, { status: "error", error }, now);
}

/** markStopping shows that a graceful stop of the run was asked for. */
export function markStopping(state: ChatState, runId: string): ChatState {
  return state.runs[runId] ? setRun(state, runId, { stopping: true }) : state;
}

/**
 * stoppedRunId is the run a Continue would continue: the thread's last run,
 * when it was stopped gracefully and nothing runs since.
 */
export function stoppedRunId(state: ChatState): string | undefined {
  if (state.activeRunId) return undefined;
  for (let i = state.items.length - 1; i >= 0; i--) {
    const it = state.items[i]!;
    if (it.kind === "user") return undefined;
    if (it.kind === "runEnd") return state.runs[it.runId]?.status === "stopped" ? it.runId : undefined;
  }
  return undefined;
}

/**
 * withStoppedRun shows a loaded thread's last run as stopped (remembered
 * across a reload), so that Continue picks it up.
 */
export function withStoppedRun(state: ChatState, runId: string): ChatState {
  if (state.runs[runId]) return state;
  const run: RunInfo = { runId, status: "stopped", lastEventId: "", usage: { input: 0, output: 0 }, stopReason: "stopped", restored: true };
  return pushItem({ ...state, runs: { ...state.runs, [runId]: run } }, { kind: "runEnd", key: `end-${runId}`, runId });
}

/**
 * announcesWaitingCall reports whether ev starts a tool call the run's open
 * approval card waits on. An ACP agent may ask permission for a call before
 * its announcement of the call is out (docs/acp.md, Permissions), so that
 * start can follow the interrupt while the run still waits: it is not the
 * run going on. A resumed run's next events (the call's end, text) are.
 */
function announcesWaitingCall(state: ChatState, runId: string, ev: WickEvent): boolean {
  if (ev.event !== "on_tool_start") return false;
  const id = ev.data.tool_call_id;
  return state.items.some((it) => it.kind === "interrupt" && it.runId === runId && !it.resolved && it.toolCalls.some((tc) => tc.id === id));
}

/** resolveInterrupts marks the run's approval cards decided: the calls they held run now. */
export function resolveInterrupts(state: ChatState, runId: string): ChatState {
  const open = (it: ChatItem) => (it.kind === "interrupt" && !it.resolved) || (it.kind === "tool" && it.state === "waiting");
  if (!state.items.some((it) => it.kind !== "user" && it.runId === runId && open(it))) return state;
  return {
    ...state,
    items: state.items.map((it) => {
      if (it.kind === "interrupt" && it.runId === runId && !it.resolved) return { ...it, resolved: true };
      if (it.kind === "tool" && it.runId === runId && it.state === "waiting") return { ...it, state: "running" };
      return it;
    }),
  };
}

// The beginnings of the results the agent gives a call that did not end by
// running to completion (its loop's CancelledToolResult,
// InterruptedToolResult, NotNeededToolResult, RejectedToolResult and
// FailedToolResult), and of a failed call's result in a stored thread,
// where an error is spelled out for the model.
const CANCELLED_PREFIX = "cancelled: ";
const REJECTED_PREFIX = "rejected by the user";
const STORED_ERROR_PREFIXES = ["Error: ", "not executed: "];

/** endedToolState is the state of a call whose on_tool_end reported error ("" or absent: it succeeded). */
export function endedToolState(error: string | undefined): ToolCardState {
  if (!error) return "done";
  if (error.startsWith(CANCELLED_PREFIX)) return "cancelled";
  if (error.startsWith(REJECTED_PREFIX)) return "rejected";
  return "error";
}

/** storedToolState is the state of a call of a stored thread, from its tool message's content. */
export function storedToolState(content: string): ToolCardState {
  // An ACP agent's call keeps the reason it ended with as its error.
  const reason = content.startsWith("Error: ") ? content.slice("Error: ".length) : content;
  if (reason.startsWith(CANCELLED_PREFIX)) return "cancelled";
  if (reason.startsWith(REJECTED_PREFIX)) return "rejected";
  if (STORED_ERROR_PREFIXES.some((p) => content.startsWith(p))) return "error";
  return "done";
}

/** isRunning reports whether the thread has a run going (or waiting for approval). */
export function isRunning(state: ChatState): boolean {
  const r = state.activeRunId ? state.runs[state.activeRunId] : undefined;
  return r !== undefined && (r.status === "running" || r.status === "interrupted");
}

/** threadStatus is the thread list's status of a thread shown in this state. */
export function threadStatus(state: ChatState): "idle" | "running" | "interrupted" | "error" {
  const r = state.activeRunId ? state.runs[state.activeRunId] : undefined;
  if (!r) return "idle";
  if (r.status === "running") return "running";
  if (r.status === "interrupted") return "interrupted";
  if (r.status === "error") return "error";
  return "idle";
}

/**
 * fromThreadState renders a stored thread (GET /threads/{id}): its messages,
 * tool calls with their results, todos and the files it wrote.
 */
export function fromThreadState(thread: AgentState): ChatState {
  const items: ChatItem[] = [];
  const tools = new Map<string, number>();
  const msgs = thread.messages ?? [];
  msgs.forEach((m, n) => {
    const key = `h-${n}`;
    switch (m.role) {
      case "user":
        items.push({ kind: "user", key, text: m.content ?? "" });
        break;
      case "assistant":
        if (m.content) items.push({ kind: "assistant", key, runId: "", text: m.content, streaming: false });
        for (const tc of m.tool_calls ?? []) {
          const id = tc.id ?? "";
          tools.set(id, items.length);
          items.push({ kind: "tool", key: `${key}-${id}`, runId: "", toolCallId: id, name: tc.name ?? "tool", args: tc.args ?? {}, state: "cancelled" });
        }
        break;
      case "tool": {
        const i = tools.get(m.tool_call_id ?? "");
        const t = i !== undefined ? items[i] : undefined;
        if (t?.kind !== "tool") break;
        const content = m.content ?? "";
        const state = storedToolState(content);
        items[i!] = state === "done" ? { ...t, state, output: content } : { ...t, state, error: content.replace(/^Error: /, "") };
        break;
      }
    }
  });
  const writtenFiles: WrittenFile[] = Object.keys(thread.files ?? {}).map((path) => ({ path, runId: "", eventId: "", version: 1 }));
  const todos = (thread.todos ?? []).map((t) => ({ id: t.id ?? "", title: t.title ?? "", status: t.status ?? "pending" }));
  return { ...emptyChat, ...(thread.thread_id ? { threadId: thread.thread_id } : {}), items, todos, writtenFiles };
}

/** The longest title, "…" included: the server's threads.MaxTitleRunes. */
export const MAX_TITLE_CHARS = 80;

/**
 * titleOf is the title the server gives a thread whose first user message is
 * text (ThreadSummary.title), for a thread shown before its first save:
 * whitespace collapsed, cut on a code point to MAX_TITLE_CHARS.
 */
export function titleOf(text: string): string {
  const line = text.trim().replace(/\s+/g, " ");
  const chars = Array.from(line);
  return chars.length > MAX_TITLE_CHARS ? chars.slice(0, MAX_TITLE_CHARS - 1).join("").trimEnd() + "…" : line;
}

const knownKinds = new Set<string>(EVENT_KINDS);

/**
 * applySubagent puts a sub-agent's event into the tool card of the task
 * call that started it (tool_call_id of the run parent_run_id), which may
 * sit in another sub-agent's chat when sub-agents nest.
 */
function applySubagent(s: ChatState, ev: SubagentStartEvent | SubagentEventEvent | SubagentEndEvent, now: number): ChatState {
  const d = ev.data;
  return updateTool(s, d.parent_run_id, d.tool_call_id, (tool) => {
    const subs = tool.subagents ?? [];
    const i = subs.findIndex((v) => v.runId === d.run_id);
    const view: SubagentView =
      i >= 0
        ? subs[i]!
        : { runId: d.run_id, threadId: d.thread_id, name: d.name, depth: d.depth, description: "", status: "running", chat: emptyChat };
    let next: SubagentView = view;
    if (ev.event === "on_subagent_start") {
      next = { ...view, description: ev.data.description ?? "" };
    } else if (ev.event === "on_subagent_event") {
      next = { ...view, chat: applyEvent(view.chat, innerEvent(ev.data.event, ev.id, d), now, d.run_id) };
    } else if (ev.event === "on_subagent_end") {
      next = { ...view, status: ev.data.status as SubagentStatus, ...(ev.data.error ? { error: ev.data.error } : {}) };
    }
    const out = subs.slice();
    if (i >= 0) out[i] = next;
    else out.push(next);
    return { ...tool, subagents: out };
  });
}

/** innerEvent is a sub-agent's wrapped event as an event of the child's run. */
function innerEvent(inner: SubagentInnerEvent, id: string, tags: SubagentTags): WickEvent {
  const base = { id, run_id: tags.run_id, thread_id: tags.thread_id, ...(inner.name ? { name: inner.name } : {}) };
  const data = inner.data ?? {};
  if (knownKinds.has(inner.event)) return { ...base, event: inner.event, data } as WickEvent;
  return { ...base, event: "unknown", kind: inner.event, data };
}

/** updateTool changes the tool card of call toolCallId of run runId, wherever it is nested. */
function updateTool(s: ChatState, runId: string, toolCallId: string, fn: (t: ToolItem) => ToolItem): ChatState {
  let changed = false;
  const items = s.items.map((it) => {
    if (changed || it.kind !== "tool") return it;
    if (it.runId === runId && it.toolCallId === toolCallId) {
      changed = true;
      return fn(it);
    }
    if (!it.subagents) return it;
    let subChanged = false;
    const subagents = it.subagents.map((v) => {
      if (subChanged) return v;
      const chat = updateTool(v.chat, runId, toolCallId, fn);
      if (chat === v.chat) return v;
      subChanged = true;
      return { ...v, chat };
    });
    if (!subChanged) return it;
    changed = true;
    return { ...it, subagents };
  });
  return changed ? { ...s, items } : s;
}

function pushItem(s: ChatState, item: ChatItem): ChatState {
  return { ...s, items: [...s.items, item] };
}

function replaceItem(s: ChatState, i: number, item: ChatItem): ChatState {
  const items = s.items.slice();
  items[i] = item;
  return { ...s, items };
}

function setRun(s: ChatState, runId: string, patch: Partial<RunInfo>): ChatState {
  return { ...s, runs: { ...s.runs, [runId]: { ...s.runs[runId]!, ...patch } } };
}

function findTool(s: ChatState, toolCallId: string): number {
  for (let i = s.items.length - 1; i >= 0; i--) {
    const it = s.items[i]!;
    if (it.kind === "tool" && it.toolCallId === toolCallId) return i;
  }
  return -1;
}

// endStreaming freezes the run's message being streamed: what follows a
// tool card is a new message.
function endStreaming(s: ChatState, runId: string): ChatState {
  const i = s.items.length - 1;
  const last = s.items[i];
  if ((last?.kind === "assistant" || last?.kind === "thought") && last.runId === runId && last.streaming) {
    return replaceItem(s, i, { ...last, streaming: false });
  }
  return s;
}

function endRun(s: ChatState, runId: string, patch: Partial<RunInfo>, now: number): ChatState {
  // Every message of the run still streamed ends with it, not only the last
  // item: an event that adds an item of its own mid-stream (an unknown one,
  // an MCP server's error) leaves the reply before it marked as streaming.
  const streamed = (it: ChatItem) => (it.kind === "assistant" || it.kind === "thought") && it.runId === runId && it.streaming;
  if (s.items.some(streamed)) {
    s = { ...s, items: s.items.map((it) => (streamed(it) ? { ...(it as AssistantItem | ThoughtItem), streaming: false } : it)) };
  }
  s = resolveInterrupts(s, runId);
  const open = (it: ChatItem) => it.kind === "tool" && it.runId === runId && (it.state === "running" || it.state === "waiting");
  if (s.items.some(open)) {
    // A run that ends with a call still open never finished it.
    s = { ...s, items: s.items.map((it) => (open(it) ? { ...(it as ToolItem), state: "cancelled", endedAt: now } : it)) };
  }
  s = setRun(s, runId, patch);
  if (!s.items.some((it) => it.kind === "runEnd" && it.runId === runId)) s = pushItem(s, { kind: "runEnd", key: `end-${runId}`, runId });
  if (s.activeRunId === runId) {
    const { activeRunId: _, ...rest } = s;
    s = rest;
  }
  return s;
}

function recordWrite(s: ChatState, args: unknown, runId: string, eventId: string): ChatState {
  const raw = typeof args === "object" && args !== null ? (args as Record<string, unknown>).path : undefined;
  if (typeof raw !== "string" || raw === "") return s;
  const path = raw.startsWith("/") ? raw : `${WORKDIR}/${raw.replace(/^\.\//, "")}`;
  const old = s.writtenFiles.find((f) => f.path === path);
  const file: WrittenFile = { path, runId, eventId, version: (old?.version ?? 0) + 1 };
  return { ...s, writtenFiles: [file, ...s.writtenFiles.filter((f) => f.path !== path)] };
}

/** The tool whose commands write files no event names. */
const COMMAND_TOOL = "execute";

/** ranCommands is true when the run made an execute call. */
export function ranCommands(s: ChatState, runId: string): boolean {
  return s.items.some((it) => it.kind === "tool" && it.runId === runId && it.name === COMMAND_TOOL);
}

/**
 * addFoundFiles records files a run's commands made or changed, found by
 * comparing the workspace before and after it. Files the run wrote through
 * a tool are already recorded and keep their version.
 */
export function addFoundFiles(s: ChatState, runId: string, paths: readonly string[]): ChatState {
  const fresh: WrittenFile[] = [];
  for (const path of paths) {
    const old = s.writtenFiles.find((f) => f.path === path);
    if (old && old.runId === runId) continue;
    fresh.push({ path, runId, eventId: "", version: (old?.version ?? 0) + 1, found: true });
  }
  if (fresh.length === 0) return s;
  const added = new Set(fresh.map((f) => f.path));
  return { ...s, writtenFiles: [...fresh, ...s.writtenFiles.filter((f) => !added.has(f.path))] };
}
