// In the chat's place when the URL names an agent or a thread that does not
// exist: says so, and offers a way on, instead of a list entry or a loading
// line for something that will never load.
interface Props {
  what: "agent" | "thread";
  id: string;
  action: string;
  onAction(): void;
}

export function NotFound({ what, id, action, onAction }: Props) {
  return (
    <section className="chat" aria-label="Chat">
      <div className="not-found" role="alert" data-testid={`${what}-not-found`}>
        <h2>{what === "agent" ? "Agent not found" : "Thread not found"}</h2>
        <p className="muted">
          There is no {what} <code>{id}</code>
          {what === "agent" ? " among your agents" : " for this agent"}: the link is wrong, or it was deleted
          {what === "thread" ? " (threads unused for a while expire)" : ""}.
        </p>
        <button type="button" data-testid="not-found-action" onClick={onAction}>
          {action}
        </button>
      </div>
    </section>
  );
}
