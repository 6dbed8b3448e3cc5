// The Tasks panel: the open thread's background tasks and their state. Task
// events reach only the run that started a task, and a task usually ends
// after it, so the panel reads the tasks through the API: when the thread
// changes, when a run starts or ends, and every few seconds while one runs.
import type { Wick } from "@wick-agent/sdk";
import { useCallback, useEffect, useState } from "react";

/** A background task as GET /threads/{thread_id}/tasks returns it. */
export type Task = Awaited<ReturnType<Wick["listTasks"]>>[number];

/** How often running tasks are read again. */
export const TASK_REFRESH_MS = 5000;

const LABELS: Record<string, string> = { running: "Running", done: "Done", failed: "Failed", cancelled: "Cancelled" };
const MARKS: Record<string, string> = { running: "◐", done: "●", failed: "✕", cancelled: "○" };

/** The first characters of a task's result, for the list. */
function preview(text: string | undefined): string {
  const t = (text ?? "").trim();
  return t.length > 200 ? `${t.slice(0, 200)}…` : t;
}

export interface TasksPanelProps {
  client: Wick;
  threadId?: string;
  running: boolean;
  onError: (err: unknown) => void;
}

export function TasksPanel({ client, threadId, running, onError }: TasksPanelProps) {
  const [tasks, setTasks] = useState<Task[]>([]);
  const load = useCallback(async () => {
    if (!threadId) {
      setTasks([]);
      return;
    }
    try {
      setTasks(await client.listTasks(threadId));
    } catch (err) {
      onError(err);
    }
  }, [client, threadId, onError]);

  useEffect(() => {
    void load();
  }, [load, running]);

  const anyRunning = tasks.some((t) => t.status === "running");
  useEffect(() => {
    if (!anyRunning) return;
    const timer = setInterval(() => void load(), TASK_REFRESH_MS);
    return () => clearInterval(timer);
  }, [anyRunning, load]);

  const cancel = async (id: string) => {
    try {
      await client.cancelTask(id);
    } catch (err) {
      onError(err);
    }
    await load();
  };

  if (tasks.length === 0) {
    return <p className="wp-empty">No background tasks. When the agent starts one, it shows here until it finishes.</p>;
  }
  return (
    <ol className="wp-todo-list">
      {tasks.map((t) => {
        const status = t.status ?? "running";
        return (
          <li key={t.task_id} className="wp-todo wp-task" data-testid="task-item" data-status={status}>
            <span className="wp-todo-mark" aria-hidden="true">
              {MARKS[status] ?? "○"}
            </span>
            <span className="wp-todo-title">
              <strong>{t.tool}</strong> <code className="wp-muted">{t.task_id}</code>
              {(t.attempts ?? 1) > 1 && <span className="wp-muted"> · attempt {t.attempts}</span>}
              {t.result && <span className="wp-task-result">{preview(t.result)}</span>}
            </span>
            <span className="wp-todo-status">{LABELS[status] ?? status}</span>
            {status === "running" && (
              <button type="button" className="wp-task-cancel" data-testid="task-cancel" onClick={() => void cancel(t.task_id ?? "")}>
                Cancel
              </button>
            )}
          </li>
        );
      })}
    </ol>
  );
}
