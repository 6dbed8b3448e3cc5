// The Todos panel: the agent's plan as of the latest on_todos event.
import type { Todo } from "@wick-agent/sdk";

const LABELS: Record<string, string> = { pending: "Pending", in_progress: "In progress", done: "Done" };
const MARKS: Record<string, string> = { pending: "○", in_progress: "◐", done: "●" };

/** The status a todo is shown with: one of the three, unknown or absent ones as pending. */
export function todoStatus(status: string | undefined): "pending" | "in_progress" | "done" {
  // "completed" is what other agent frameworks call done.
  if (status === "done" || status === "completed") return "done";
  if (status === "in_progress") return "in_progress";
  return "pending";
}

export function TodosPanel({ todos }: { todos: readonly Todo[] }) {
  if (todos.length === 0) {
    return <p className="wp-empty">No plan yet. When the agent makes a todo list, it shows here as it works.</p>;
  }
  const done = todos.filter((t) => todoStatus(t.status) === "done").length;
  return (
    <div className="wp-todos">
      <p className="wp-muted">
        {done} of {todos.length} done
      </p>
      <ol className="wp-todo-list">
        {todos.map((t, i) => {
          const status = todoStatus(t.status);
          return (
            <li key={t.id || i} className="wp-todo" data-testid="todo-item" data-status={status}>
              <span className="wp-todo-mark" aria-hidden="true">
                {MARKS[status]}
              </span>
              <span className="wp-todo-title">{t.title}</span>
              <span className="wp-todo-status">{LABELS[status]}</span>
            </li>
          );
        })}
      </ol>
    </div>
  );
}
