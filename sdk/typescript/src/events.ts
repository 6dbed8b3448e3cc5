// The events of a run as the gateway sends them: one SSE frame per event,
// `id:` the event's position in the run's log, `event:` its kind, `data:` the
// StreamEvent as JSON with proto field names. The OpenAPI document types
// `data` as any value, so the shape of each kind's data is written here.
import type { KnowledgeHit } from "./knowledge.js";

/** A todo of the agent's list. */
export interface Todo {
  id: string;
  title: string;
  /** "pending", "in_progress" or "done". */
  status: string;
}

/** A tool call the model asked for. */
export interface ToolCall {
  id: string;
  name: string;
  args?: Record<string, unknown>;
}

/** The fields every event has. */
export interface EventBase {
  /** The event's position in the run's log; re-joining after it resumes the stream. */
  id: string;
  /** The run the event belongs to. */
  run_id?: string;
  /** The run's thread. */
  thread_id?: string;
  /** The tool (tool events) or agent (on_run_start) the event concerns. */
  name?: string;
}

/** The first event of every run. */
export interface RunStartEvent extends EventBase {
  event: "on_run_start";
  data: { run_id: string; thread_id?: string; agent_id: string };
}

/** A piece of the model's text. */
export interface ChatModelStreamEvent extends EventBase {
  event: "on_chat_model_stream";
  data: { delta: string };
}

/**
 * A piece of the agent's reasoning, shown apart from its answer (agents
 * backed by an external ACP agent send its thought chunks as these). It is
 * not part of the answer.
 */
export interface ThoughtStreamEvent extends EventBase {
  event: "on_thought_stream";
  data: { delta: string };
}

/** A tool call starts; name is the tool. */
export interface ToolStartEvent extends EventBase {
  event: "on_tool_start";
  data: { args?: Record<string, unknown>; tool_call_id: string };
}

/** A tool call ended; error is non-empty when the tool failed. */
export interface ToolEndEvent extends EventBase {
  event: "on_tool_end";
  data: { output?: string; error?: string; tool_call_id: string };
}

/** The agent's todo list changed. */
export interface TodosEvent extends EventBase {
  event: "on_todos";
  data: { todos: Todo[] };
}

/**
 * The run waits for the user (POST /runs/{run_id}/resume): for approval of
 * tool_calls, or, when kind is "question", for the answer to the model's
 * ask_user question (answer tool_call_id with action "answer").
 */
export interface InterruptEvent extends EventBase {
  event: "on_interrupt";
  data: {
    tool_calls: ToolCall[];
    /** "approval" (also when absent) or "question". */
    kind?: string;
    question?: string;
    choices?: string[];
    tool_call_id?: string;
    /** true on an approval: a decision may set always (not on a question). */
    always?: boolean;
  };
}

/** One decision of POST /runs/{run_id}/resume. */
export interface Decision {
  tool_call_id: string;
  /** "approve", "reject", "edit", or "answer" for a question. */
  action: string;
  /** The new arguments, for "edit". */
  args?: Record<string, unknown>;
  /** Given to the model for "reject"; the answer itself for "answer". */
  message?: string;
  /**
   * Remember the decision on the run's thread: later calls of the same tool
   * (an ACP agent's: of the same kind) are approved or rejected without
   * asking; an "edit" is remembered as "approve". Not with "answer".
   */
  always?: boolean;
}

/** answer is the decision that answers the question of an ask_user call. */
export function answer(toolCallId: string, text: string): Decision {
  return { tool_call_id: toolCallId, action: "answer", message: text };
}

/** Tokens one model call used. */
export interface UsageEvent extends EventBase {
  event: "on_usage";
  data: { input_tokens: number; output_tokens: number };
}

/**
 * A chunk the knowledge hook put into the prompt: a search hit (its text cut
 * to a snippet, without metadata) and n, its number as the prompt cites it
 * ("[1]").
 */
export interface KnowledgeSource extends Omit<KnowledgeHit, "metadata"> {
  n: number;
}

/**
 * The agent's collections were searched before a model call and the sources
 * put into its prompt; error says why the search failed (the run goes on
 * without knowledge). Sent once per user message: the model calls after it
 * see the same sources.
 */
export interface KnowledgeRetrievalEvent extends EventBase {
  event: "on_knowledge_retrieval";
  data: { query: string; sources: KnowledgeSource[]; error?: string };
}

/** A background task as its events carry it (see Wick.getTask for the whole task). */
export interface TaskEventData {
  task_id: string;
  tool: string;
  /** "native" or "http". */
  kind: string;
  /** "running", "done", "failed" or "cancelled". */
  status: string;
  thread_id: string;
  run_id: string;
  tool_call_id: string;
  attempts: number;
  /** The output, or why it failed or was cancelled; once finished (on_task_update: the tool's progress). */
  result?: string;
}

/**
 * A background task started (on_task_start), reported progress
 * (on_task_update) or finished (on_task_end). They reach the run that
 * started the task while that run lasts; read the task with getTask or
 * listTasks afterwards.
 */
export interface TaskEvent extends EventBase {
  event: "on_task_start" | "on_task_update" | "on_task_end";
  data: TaskEventData;
}

/**
 * Where a sub-agent sits in the tree of runs: every on_subagent_* event
 * carries it. A client nests a child's events under the task call
 * tool_call_id of the run parent_run_id (the streamed run, or a sub-agent
 * of it when nested).
 */
export interface SubagentTags {
  /** "general-purpose" or a sub-agent the agent declares. */
  name: string;
  /** The child's run. */
  run_id: string;
  /** The child's thread (getThread reads it; thread lists leave it out). */
  thread_id: string;
  parent_run_id: string;
  tool_call_id: string;
  /** 1 for a child of the streamed run. */
  depth: number;
}

/** A task call started a sub-agent; description is its task. */
export interface SubagentStartEvent extends EventBase {
  event: "on_subagent_start";
  data: SubagentTags & { description: string };
}

/** One event of a sub-agent as the child's run has it (never the run's own). */
export interface SubagentInnerEvent {
  event: string;
  name?: string;
  data?: unknown;
}

/**
 * One event of a sub-agent, wrapped so that a child's done is never taken
 * for the run's own. Deeper sub-agents' events come as their own
 * on_subagent_* events.
 */
export interface SubagentEventEvent extends EventBase {
  event: "on_subagent_event";
  data: SubagentTags & { event: SubagentInnerEvent };
}

/**
 * A sub-agent ended: status is completed, failed, timeout, stopped (its
 * parent is stopping) or cancelled; error says why it did not complete.
 * Its answer is the output of the parent's task call (on_tool_end).
 */
export interface SubagentEndEvent extends EventBase {
  event: "on_subagent_end";
  data: SubagentTags & { status: string; error?: string };
}

/**
 * The run ended normally; the stream ends after it. stop_reason is
 * "completed", or "stopped" after stopRun (continueRun goes on from there).
 */
export interface DoneEvent extends EventBase {
  event: "done";
  data: { stop_reason: string };
}

/**
 * The run ended with an error or was cancelled (stop_reason "cancelled");
 * the stream ends after it. A failure of the stream itself (not of the run)
 * is thrown as a WickError instead.
 */
export interface RunErrorEvent extends EventBase {
  event: "error";
  /**
   * code says what ended the run: cancelled, aborted, failed, lost, max_turns,
   * error, resource_exhausted (a limit) or unavailable (a dependency did not
   * answer; worth a retry later).
   */
  data: { message: string; code?: string; stop_reason?: string };
}

/**
 * An event of a kind this SDK does not know (a newer server), passed
 * through as sent: kind is its SSE event name. Its `event` is "unknown" so
 * that a switch on `event` narrows the known kinds' data.
 */
export interface UnknownEvent extends EventBase {
  event: "unknown";
  kind: string;
  data: unknown;
}

/** The events of the kinds this SDK knows. */
export type KnownEvent =
  | RunStartEvent
  | ChatModelStreamEvent
  | ThoughtStreamEvent
  | ToolStartEvent
  | ToolEndEvent
  | TodosEvent
  | InterruptEvent
  | UsageEvent
  | KnowledgeRetrievalEvent
  | SubagentStartEvent
  | SubagentEventEvent
  | SubagentEndEvent
  | TaskEvent
  | DoneEvent
  | RunErrorEvent;

/** An event of a run, as stream() and join() yield it. */
export type WickEvent = KnownEvent | UnknownEvent;

/** The kinds of event this SDK knows. */
export type EventKind = KnownEvent["event"];

/** The known kinds, to tell them from kinds a newer server sends. */
export const EVENT_KINDS: readonly EventKind[] = [
  "on_run_start",
  "on_chat_model_stream",
  "on_thought_stream",
  "on_tool_start",
  "on_tool_end",
  "on_todos",
  "on_interrupt",
  "on_usage",
  "on_knowledge_retrieval",
  "on_subagent_start",
  "on_subagent_event",
  "on_subagent_end",
  "on_task_start",
  "on_task_update",
  "on_task_end",
  "done",
  "error",
];

const known = new Set<string>(EVENT_KINDS);

/** isTerminal reports whether ev ends its run: nothing follows it. */
export function isTerminal(ev: WickEvent): ev is DoneEvent | RunErrorEvent {
  return ev.event === "done" || ev.event === "error";
}

/**
 * toEvent turns the JSON of a StreamEvent into a WickEvent; kind is the
 * frame's SSE event name and id its SSE id, which the data repeats.
 */
export function toEvent(wire: Record<string, unknown>, kind: string, id: string): WickEvent {
  const base: EventBase = { id };
  if (typeof wire.run_id === "string") base.run_id = wire.run_id;
  if (typeof wire.thread_id === "string") base.thread_id = wire.thread_id;
  if (typeof wire.name === "string") base.name = wire.name;
  // protojson leaves out an empty data value.
  const data = wire.data ?? {};
  if (known.has(kind)) {
    return { ...base, event: kind, data } as KnownEvent;
  }
  return { ...base, event: "unknown", kind, data };
}
