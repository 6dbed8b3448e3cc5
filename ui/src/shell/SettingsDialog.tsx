// The open agent's settings in a dialog, opened from the top bar: what the
// agent is (model, prompt, tools), its sandbox, hooks and skills, and its
// deletion apart, as the one destructive action.
import * as Dialog from "@radix-ui/react-dialog";
import type { Wick } from "@wick-agent/sdk";
import { Settings, Trash2, X } from "lucide-react";
import { useState } from "react";

import { AgentSettings, type Agent } from "../sidebar/Agents";
import { IconButton } from "./IconButton";

interface Props {
  client: Wick;
  agent: Agent;
  running: boolean;
  onChanged(agent: Agent): void;
  /** Asks, then deletes the agent; resolves true when it is gone. */
  onDelete(): Promise<boolean>;
  onError(err: unknown): void;
}

export function SettingsDialog({ client, agent, running, onChanged, onDelete, onError }: Props) {
  const [open, setOpen] = useState(false);
  const name = agent.name || agent.agent_id || "";
  return (
    <Dialog.Root open={open} onOpenChange={setOpen}>
      <Dialog.Trigger asChild>
        <IconButton label={`Settings of ${name}`} data-testid="agent-settings-open">
          <Settings size={18} aria-hidden="true" />
        </IconButton>
      </Dialog.Trigger>
      <Dialog.Portal>
        <Dialog.Overlay className="overlay" />
        {/* Focus goes to the dialog itself, not its first button: a tooltip
            opened by that focus would take the first Escape. */}
        <Dialog.Content
          className="card dialog settings-dialog"
          data-testid="agent-settings"
          onOpenAutoFocus={(e) => {
            e.preventDefault();
            (e.currentTarget as HTMLElement | null)?.focus();
          }}
        >
          <div className="dialog-head">
            <Dialog.Title>{name}</Dialog.Title>
            <Dialog.Close asChild>
              <IconButton label="Close" data-testid="agent-settings-close">
                <X size={18} aria-hidden="true" />
              </IconButton>
            </Dialog.Close>
          </div>
          <Dialog.Description className="muted small">
            {agent.template ? "A shared agent: your changes apply to your copy." : "Your agent."} Id <code>{agent.agent_id}</code>
          </Dialog.Description>
          <AgentOverview agent={agent} />
          <AgentSettings client={client} agent={agent} running={running} onChanged={onChanged} onError={onError} />
          {!agent.template && (
            <section className="danger-zone" aria-labelledby="danger-zone-title">
              <h2 id="danger-zone-title">Danger zone</h2>
              <div className="row">
                <span className="grow small muted">Deletes the agent; its threads go with it.</span>
                <button
                  type="button"
                  className="danger"
                  data-testid="agent-delete"
                  onClick={() => {
                    void onDelete().then((gone) => gone && setOpen(false));
                  }}
                >
                  <Trash2 size={16} aria-hidden="true" /> Delete agent
                </button>
              </div>
            </section>
          )}
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

/** AgentOverview shows what the agent was created with. */
function AgentOverview({ agent }: { agent: Agent }) {
  const tools = agent.tools ?? [];
  return (
    <section aria-labelledby="agent-overview-title">
      <h2 id="agent-overview-title">Agent</h2>
      <dl className="facts" data-testid="agent-overview">
        <dt>Model</dt>
        <dd>
          <code>{modelText(agent.model)}</code>
        </dd>
        <dt>Tool calls</dt>
        <dd>{agent.approval === "interactive" ? "each waits for approval" : "run without asking"}</dd>
        <dt>Tools</dt>
        <dd>{tools.length > 0 ? tools.join(", ") : "the built-in ones"}</dd>
        {agent.system_prompt && (
          <>
            <dt>System prompt</dt>
            <dd className="prompt">{agent.system_prompt}</dd>
          </>
        )}
      </dl>
    </section>
  );
}

/** modelText reads the model spec: a name, or a fallback chain as the API gives it. */
function modelText(m: unknown): string {
  if (m === undefined || m === null || m === "") return "the default";
  return typeof m === "string" ? m : JSON.stringify(m);
}
