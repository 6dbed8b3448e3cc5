// The events of a run as the gateway sends them: one SSE frame per event,
// `id:` the event's position in the run's log, `event:` its kind, `data:` the
// StreamEvent as JSON with proto field names. The OpenAPI document describes
// each kind as a component RunEvent.<kind>; every type here is taken from
// those generated components (src/gen, `npm run gen`), so a field the server
// adds, drops or renames changes these types with the document.
import { RUN_EVENT_KINDS } from "./gen/events.js";
import type { components } from "./gen/wick.js";

type Schemas = components["schemas"];

/** The kinds of event this SDK knows: those of the OpenAPI document's RunEvent union. */
export type EventKind = Schemas["RunEvent"]["event"];

/**
 * EventData is the data of an event of kind K: the data of the generated
 * RunEvent.<K> schema. The SDK gives an event sent without data an empty
 * object, so it is never undefined.
 */
export type EventData<K extends EventKind> = NonNullable<Schemas[`RunEvent.${K}`]["data"]>;

/** The fields every event has. */
export type EventBase = Omit<Schemas["wick.agent.v1.StreamEvent"], "event" | "data" | "id"> & {
  /** The event's position in the run's log (its SSE id); re-joining after it resumes the stream. */
  id: string;
};

/** RunEventOf is an event of kind K: the envelope's fields and K's data. */
export type RunEventOf<K extends EventKind> = EventBase & { event: K; data: EventData<K> };

/** The first event of every run. */
export type RunStartEvent = RunEventOf<"on_run_start">;

/** A piece of the model's text. */
export type ChatModelStreamEvent = RunEventOf<"on_chat_model_stream">;

/**
 * A piece of the agent's reasoning, shown apart from its answer (agents
 * backed by an external ACP agent send its thought chunks as these). It is
 * not part of the answer.
 */
export type ThoughtStreamEvent = RunEventOf<"on_thought_stream">;

/** A tool call starts; name is the tool. */
export type ToolStartEvent = RunEventOf<"on_tool_start">;

/** A tool call ended; error is non-empty when the tool failed. */
export type ToolEndEvent = RunEventOf<"on_tool_end">;

/** The agent's todo list changed. */
export type TodosEvent = RunEventOf<"on_todos">;

/** A todo of the agent's list. */
export type Todo = EventData<"on_todos">["todos"][number];

/**
 * The run waits for the user (POST /runs/{run_id}/resume): for approval of
 * tool_calls, or, when kind is "question", for the answer to the model's
 * ask_user question (answer tool_call_id with action "answer").
 */
export type InterruptEvent = RunEventOf<"on_interrupt">;

/** A tool call the model asked for, as an interrupt lists it. */
export type ToolCall = EventData<"on_interrupt">["tool_calls"][number];

/** Tokens one model call used. */
export type UsageEvent = RunEventOf<"on_usage">;

/**
 * The agent's collections were searched before a model call and the sources
 * put into its prompt; error says why the search failed (the run goes on
 * without knowledge). Sent once per user message: the model calls after it
 * see the same sources.
 */
export type KnowledgeRetrievalEvent = RunEventOf<"on_knowledge_retrieval">;

/**
 * A chunk the knowledge hook put into the prompt: a search hit (its text cut
 * to a snippet, without metadata) and n, its number as the prompt cites it
 * ("[1]").
 */
export type KnowledgeSource = EventData<"on_knowledge_retrieval">["sources"][number];

/** The kinds of a background task's events. */
export type TaskEventKind = "on_task_start" | "on_task_update" | "on_task_end";

/**
 * A background task started (on_task_start), reported progress
 * (on_task_update) or finished (on_task_end). They reach the run that
 * started the task while that run lasts; read the task with getTask or
 * listTasks afterwards.
 */
export type TaskEvent = { [K in TaskEventKind]: RunEventOf<K> }[TaskEventKind];

/** A background task as its events carry it (see Wick.getTask for the whole task). */
export type TaskEventData = EventData<TaskEventKind>;

/** A task call started a sub-agent; description is its task. */
export type SubagentStartEvent = RunEventOf<"on_subagent_start">;

/**
 * One event of a sub-agent, wrapped so that a child's done is never taken
 * for the run's own. Deeper sub-agents' events come as their own
 * on_subagent_* events.
 */
export type SubagentEventEvent = RunEventOf<"on_subagent_event">;

/**
 * A sub-agent ended: status is completed, failed, timeout, stopped (its
 * parent is stopping) or cancelled; error says why it did not complete.
 * Its answer is the output of the parent's task call (on_tool_end).
 */
export type SubagentEndEvent = RunEventOf<"on_subagent_end">;

/** One event of a sub-agent as the child's run has it (never the run's own). */
export type SubagentInnerEvent = EventData<"on_subagent_event">["event"];

/**
 * Where a sub-agent sits in the tree of runs: the fields every
 * on_subagent_* event's data has (name, run_id, thread_id, parent_run_id,
 * tool_call_id, depth). A client nests a child's events under the task call
 * tool_call_id of the run parent_run_id (the streamed run, or a sub-agent
 * of it when nested).
 */
export type SubagentTags = Pick<
  EventData<"on_subagent_start">,
  keyof EventData<"on_subagent_start"> & keyof EventData<"on_subagent_event"> & keyof EventData<"on_subagent_end">
>;

/**
 * The run ended normally; the stream ends after it. stop_reason is
 * "completed", or "stopped" after stopRun (continueRun goes on from there).
 */
export type DoneEvent = RunEventOf<"done">;

/**
 * The run ended with an error or was cancelled (code "cancelled"); the
 * stream ends after it. A failure of the stream itself (not of the run) is
 * thrown as a WickError instead.
 */
export type RunErrorEvent = RunEventOf<"error">;

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

/** The events of the kinds this SDK knows: a switch on `event` narrows `data`. */
export type KnownEvent = { [K in EventKind]: RunEventOf<K> }[EventKind];

/** An event of a run, as stream() and join() yield it. */
export type WickEvent = KnownEvent | UnknownEvent;

/** The known kinds, to tell them from kinds a newer server sends. */
export const EVENT_KINDS: readonly EventKind[] = RUN_EVENT_KINDS;

const known = new Set<string>(EVENT_KINDS);

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
