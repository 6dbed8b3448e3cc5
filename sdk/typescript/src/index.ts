// @wick-agent/sdk: a client of the Wick gateway's REST, SSE and WebSocket API.
export { API_VERSION } from "./gen/version.js";
export type { paths, components, operations } from "./gen/wick.js";
export {
  Wick,
  type WickOptions,
  type TokenSource,
  type StreamRequest,
  type InputMessage,
  type StreamOptions,
  type JoinOptions,
  type UploadBody,
  type UploadResult,
} from "./client.js";
export {
  Knowledge,
  type Collection,
  type NewCollection,
  type KnowledgeDocument,
  type NewDocument,
  type AddDocumentResult,
  type KnowledgeHit,
  type SearchOptions,
  type SearchResult,
  type CallOptions,
} from "./knowledge.js";
export { RunStream, DEFAULT_RECONNECT, DEFAULT_MAX_EVENT_CHARS, type ReconnectOptions } from "./stream.js";
export { ConnectionLost } from "./sse.js";
export { WickError, CODE_NAMES, type CodeName, type ErrorBody } from "./errors.js";
export {
  Terminal,
  type TerminalOptions,
  type TerminalExit,
  type WebSocketLike,
  type WebSocketConstructor,
} from "./terminal.js";
export {
  EVENT_KINDS,
  isTerminal,
  answer,
  type Decision,
  type WickEvent,
  type KnownEvent,
  type EventKind,
  type EventData,
  type RunEventOf,
  type EventBase,
  type RunStartEvent,
  type ChatModelStreamEvent,
  type ThoughtStreamEvent,
  type ToolStartEvent,
  type ToolEndEvent,
  type TodosEvent,
  type InterruptEvent,
  type UsageEvent,
  type KnowledgeRetrievalEvent,
  type KnowledgeSource,
  type SubagentTags,
  type SubagentStartEvent,
  type SubagentInnerEvent,
  type SubagentEventEvent,
  type SubagentEndEvent,
  type TaskEvent,
  type TaskEventKind,
  type TaskEventData,
  type DoneEvent,
  type RunErrorEvent,
  type UnknownEvent,
  type Todo,
  type ToolCall,
} from "./events.js";
