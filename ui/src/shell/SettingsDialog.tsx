// The open agent's settings in a dialog, opened from the top bar, in two
// tabs: General (the model, prompt and tools, edited and saved together,
// and the agent's deletion apart, as the one destructive action), and the
// sandbox, hooks and skills, which apply as they are changed.
import * as Dialog from "@radix-ui/react-dialog";
import * as Tabs from "@radix-ui/react-tabs";
import type { Wick } from "@wick-agent/sdk";
import { Settings, Trash2, X } from "lucide-react";
import { useEffect, useState } from "react";

import { AgentSettings, type Agent } from "../sidebar/Agents";
import { fieldsOf, sameFields, type AgentFields } from "./agentEdit";
import { AgentEditForm } from "./AgentEditForm";
import { IconButton } from "./IconButton";
import "./settings.css";

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
  const [tab, setTab] = useState("general");
  // Unsaved edits outlive the dialog's closing, not a switch to another agent.
  const [draft, setDraft] = useState<AgentFields | undefined>();
  useEffect(() => setDraft(undefined), [agent.agent_id]);
  const dirty = draft !== undefined && !sameFields(draft, fieldsOf(agent));
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
          <Tabs.Root value={tab} onValueChange={setTab} className="settings-tabs">
            <Tabs.List className="tab-list" aria-label="Settings sections">
              <Tabs.Trigger value="general" className="tab" data-testid="settings-tab-general">
                General
                {dirty && (
                  <>
                    <span aria-hidden="true"> •</span>
                    <span className="visually-hidden"> (unsaved changes)</span>
                  </>
                )}
              </Tabs.Trigger>
              <Tabs.Trigger value="sandbox" className="tab" data-testid="settings-tab-sandbox">
                Sandbox, hooks &amp; skills
              </Tabs.Trigger>
            </Tabs.List>
            <Tabs.Content value="general" className="tab-panel">
              <AgentOverview agent={agent} />
              <AgentEditForm client={client} agent={agent} draft={draft} onDraft={setDraft} onSaved={onChanged} />
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
            </Tabs.Content>
            <Tabs.Content value="sandbox" className="tab-panel">
              <AgentSettings client={client} agent={agent} running={running} onChanged={onChanged} onError={onError} />
            </Tabs.Content>
          </Tabs.Root>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

/** AgentOverview shows what the form does not edit: how tool calls run. */
function AgentOverview({ agent }: { agent: Agent }) {
  return (
    <dl className="facts" data-testid="agent-overview">
      <dt>Tool calls</dt>
      <dd>{agent.approval === "interactive" ? "each waits for approval" : "run without asking"}</dd>
    </dl>
  );
}
