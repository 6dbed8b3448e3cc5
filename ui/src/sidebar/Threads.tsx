// The open agent's threads, newest first, each with its status and a title
// from its first message.
import type { components } from "@wick-agent/sdk";

import { SideHead } from "./SideHead";

export type ThreadSummary = components["schemas"]["wick.agent.v1.ThreadSummary"];
export type ThreadStatus = "idle" | "running" | "interrupted" | "error";

const STATUS_LABEL: Record<ThreadStatus, string> = {
  idle: "",
  running: "running",
  interrupted: "waiting",
  error: "error",
};

/** The status in full, for the badge's tooltip: the label is short so that the title keeps its room. */
const STATUS_TITLE: Record<ThreadStatus, string> = {
  idle: "",
  running: "a run is going",
  interrupted: "waiting for approval",
  error: "the last run failed",
};

interface Props {
  threads: ThreadSummary[];
  selected: string | undefined;
  titles: Record<string, string>;
  statuses: Record<string, ThreadStatus>;
  onSelect(threadId: string): void;
  onNew(): void;
  onDelete(threadId: string): void;
}

export function ThreadList({ threads, selected, titles, statuses, onSelect, onNew, onDelete }: Props) {
  return (
    <div className="side-section">
      <SideHead title="Threads" newTestId="thread-new" newTitle="Start a new thread" onNew={onNew} />
      <ul className="list" data-testid="thread-list">
        {threads.map((t) => {
          const id = t.thread_id ?? "";
          const status = statuses[id] ?? "idle";
          return (
            <li key={id} className="thread-row">
              <button
                type="button"
                className={`list-item${id === selected ? " selected" : ""}`}
                data-testid="thread-item"
                data-thread-id={id}
                data-status={status}
                aria-current={id === selected || undefined}
                onClick={() => onSelect(id)}
              >
                <span className={`dot dot-${status}`} aria-hidden="true" />
                <span className="grow ellipsis">{titles[id] || `Thread ${id.slice(0, 8)}`}</span>
                {STATUS_LABEL[status] && (
                  <span className="badge" title={STATUS_TITLE[status]}>
                    {STATUS_LABEL[status]}
                  </span>
                )}
              </button>
              <button type="button" className="icon" data-testid="thread-delete" aria-label="Delete thread" title="Delete thread" onClick={() => onDelete(id)}>
                ×
              </button>
            </li>
          );
        })}
        {threads.length === 0 && <li className="muted small">No threads yet: send a message.</li>}
      </ul>
    </div>
  );
}
