// The contract between the app shell (chat, threads, agents) and the side
// panels (Todos, Tasks, Files, Canvas, Knowledge, Usage, Terminal). The shell owns the client, the
// selected agent and thread and the run state; panels only read them and
// talk to the API through the client.
import type { Todo, Wick } from "@wick-agent/sdk";

/**
 * A file a run of the open thread wrote: by write_file / edit_file tool
 * calls that succeeded, or found in the workspace when a run that ran
 * commands was done (see snapshot.ts).
 */
export interface WrittenFile {
  /** Agent-facing path, e.g. "/workspace/report.md". */
  path: string;
  /** The run and event that wrote it. */
  runId: string;
  eventId: string;
  /** Bumped every time the path is written again, so panels reload it. */
  version: number;
  /** Found by comparing the workspace before and after the run, not named by a tool event (eventId is then ""). */
  found?: boolean;
}

/** What every side panel receives. */
export interface PanelContext {
  /** The authenticated client. */
  client: Wick;
  /** The agent whose workspace and sandbox the panels show. */
  agentId: string;
  /** The open thread, if any. */
  threadId?: string;
  /** Files the open thread's runs wrote, newest first. */
  writtenFiles: WrittenFile[];
  /** The todo list as of the latest todos event. */
  todos: Todo[];
  /** True while a run of the open thread is going. */
  running: boolean;
  /** Reports an error for the shell to show in words. */
  onError: (err: unknown) => void;
}

/** The side panel tabs, in order. */
export const PANEL_TABS = ["todos", "tasks", "files", "canvas", "knowledge", "usage", "terminal"] as const;
export type PanelTab = (typeof PANEL_TABS)[number];
