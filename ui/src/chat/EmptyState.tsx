// A new thread's first screen: who the agent is and prompts to start with.
// A prompt fills the message box (to be edited or sent as it is).
import type { Agent } from "../sidebar/Agents";
import { agentDescription, examplePrompts } from "./starters";

export function EmptyState({ agent, onPick }: { agent: Agent; onPick(prompt: string): void }) {
  const name = agent.name || agent.agent_id || "";
  return (
    <section className="empty-state" data-testid="empty-state" aria-labelledby="empty-state-title">
      <h2 id="empty-state-title" className="empty-state-title">
        {name}
      </h2>
      <p className="muted" data-testid="empty-state-description">
        {agentDescription(agent)}
      </p>
      <ul className="example-prompts" aria-label="Example prompts">
        {examplePrompts(agent).map((p) => (
          <li key={p}>
            <button type="button" className="example-prompt" data-testid="example-prompt" onClick={() => onPick(p)}>
              {p}
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
