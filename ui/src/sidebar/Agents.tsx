// The agents: the list, the form that creates one, and the open agent's
// sandbox (container state, backend), hooks and skills, which the settings
// dialog (shell/SettingsDialog) shows.
import type { Wick, components } from "@wick-agent/sdk";
import { useEffect, useState, type FormEvent } from "react";

import { SideHead } from "./SideHead";

export type Agent = components["schemas"]["wick.agent.v1.Agent"];
type Skill = components["schemas"]["wick.agent.v1.Skill"];
type SkillProblem = components["schemas"]["wick.agent.v1.SkillProblem"];


interface ListProps {
  agents: Agent[];
  selected: string | undefined;
  onSelect(agentId: string): void;
  onNew(): void;
}

export function AgentList({ agents, selected, onSelect, onNew }: ListProps) {
  return (
    <div className="side-section">
      <SideHead title="Agents" newTestId="agent-new" newTitle="Create an agent" onNew={onNew} />
      <ul className="list" data-testid="agent-list">
        {agents.map((a) => (
          <li key={a.agent_id}>
            <button
              type="button"
              className={`list-item${a.agent_id === selected ? " selected" : ""}`}
              data-testid="agent-item"
              data-agent-id={a.agent_id}
              aria-current={a.agent_id === selected || undefined}
              onClick={() => onSelect(a.agent_id ?? "")}
            >
              <span className="grow ellipsis">{a.name || a.agent_id}</span>
              {a.approval === "interactive" && (
                <span className="badge" title="each tool call waits for approval">
                  asks
                </span>
              )}
            </button>
          </li>
        ))}
        {agents.length === 0 && <li className="muted small">No agents yet.</li>}
      </ul>
    </div>
  );
}

/** lines splits a textarea's text into its non-empty lines or comma-separated items. */
export function lines(text: string): string[] {
  return text
    .split(/[\n,]/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

interface FormProps {
  /** client, when given, lists the LLM gateway's models as suggestions. */
  client?: Wick;
  onCreate(agent: Agent): Promise<void>;
  onCancel(): void;
}

/** SCRIPTED_MODELS are the scripted models every Wick serves without a key. */
export const SCRIPTED_MODELS = ["script:demo", "script:showcase"];

/** DEFAULT_SKILLS_PATH is where every sandbox has Wick's skills library. */
export const DEFAULT_SKILLS_PATH = "/workspace/skills";

/** AgentForm creates an agent (POST /agents). */
export function AgentForm({ client, onCreate, onCancel }: FormProps) {
  const [busy, setBusy] = useState(false);
  const [models, setModels] = useState<string[]>(SCRIPTED_MODELS);
  const [f, setF] = useState({
    agent_id: "",
    name: "",
    model: "",
    system_prompt: "",
    tools: "",
    skills: DEFAULT_SKILLS_PATH,
    memory: "",
    collections: "",
    approval: "autonomous",
    backend: "local",
  });
  const set = (k: keyof typeof f) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });

  // Suggestions only: a failed listing leaves the scripted models.
  useEffect(() => {
    if (!client) return;
    const ctrl = new AbortController();
    client.api
      .GET("/v1/models", { signal: ctrl.signal })
      .then(({ data }) => {
        const ids = (data?.data ?? []).map((m) => m.id).filter((id) => id && !SCRIPTED_MODELS.includes(id));
        setModels([...SCRIPTED_MODELS, ...ids]);
      })
      .catch(() => {});
    return () => ctrl.abort();
  }, [client]);
  const idOK = /^[A-Za-z0-9_-]+$/.test(f.agent_id);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!idOK) return;
    const agent: Agent = { agent_id: f.agent_id, approval: f.approval };
    if (f.name.trim()) agent.name = f.name.trim();
    if (f.model.trim()) agent.model = f.model.trim();
    if (f.system_prompt.trim()) agent.system_prompt = f.system_prompt;
    if (lines(f.tools).length) agent.tools = lines(f.tools);
    if (lines(f.skills).length) agent.skills = { paths: lines(f.skills) };
    if (lines(f.memory).length) agent.memory = { paths: lines(f.memory) };
    if (lines(f.collections).length) agent.collections = lines(f.collections);
    if (f.backend !== "none") agent.backend = { type: f.backend };
    setBusy(true);
    try {
      await onCreate(agent);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="card agent-form" data-testid="agent-form" onSubmit={submit}>
      <h3>New agent</h3>
      <label>
        Id <span className="muted small">(letters, digits, - and _)</span>
        <input data-testid="agent-form-id" value={f.agent_id} onChange={set("agent_id")} required pattern="[A-Za-z0-9_\-]+" autoFocus />
      </label>
      <label>
        Name
        <input data-testid="agent-form-name" value={f.name} onChange={set("name")} />
      </label>
      <label>
        Model <span className="muted small">(e.g. ollama:llama3.1:8b; empty: the default)</span>
        <input data-testid="agent-form-model" value={f.model} onChange={set("model")} list="agent-form-models" />
        <datalist id="agent-form-models" data-testid="agent-form-models">
          {models.map((m) => (
            <option key={m} value={m} />
          ))}
        </datalist>
      </label>
      <label>
        System prompt
        <textarea data-testid="agent-form-system-prompt" rows={3} value={f.system_prompt} onChange={set("system_prompt")} />
      </label>
      <label>
        Tools <span className="muted small">(one per line or comma-separated)</span>
        <textarea data-testid="agent-form-tools" rows={2} value={f.tools} onChange={set("tools")} />
      </label>
      <label>
        Skills paths
        <textarea data-testid="agent-form-skills" rows={2} value={f.skills} onChange={set("skills")} placeholder={DEFAULT_SKILLS_PATH} />
      </label>
      <label>
        Memory paths
        <textarea data-testid="agent-form-memory" rows={2} value={f.memory} onChange={set("memory")} placeholder="/workspace/AGENTS.md" />
      </label>
      <label>
        Knowledge collections <span className="muted small">(searched before each model call)</span>
        <input data-testid="agent-form-collections" value={f.collections} onChange={set("collections")} placeholder="handbook, acme.policies" />
      </label>
      <label>
        Tool calls
        <select data-testid="agent-form-approval" value={f.approval} onChange={set("approval")}>
          <option value="autonomous">Autonomous: run without asking</option>
          <option value="interactive">Interactive: each waits for approval</option>
        </select>
      </label>
      <label>
        Sandbox
        <select data-testid="agent-form-backend" value={f.backend} onChange={set("backend")}>
          <option value="local">Local</option>
          <option value="docker">Docker</option>
          <option value="none">None (no file tools)</option>
        </select>
      </label>
      <div className="row">
        <button type="submit" className="primary" data-testid="agent-form-submit" disabled={busy || !idOK}>
          Create
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/**
 * The three sandbox choices the page offers; switchBody maps them onto the
 * API's two backend modes (docker is mode "remote" without a sandbox_url).
 */
export type BackendChoice = "local" | "docker" | "remote";

export function backendChoice(agent: Agent): BackendChoice | "" {
  const b = agent.backend;
  if (!b?.type) return "";
  if (b.type === "local") return "local";
  return b.sandbox_url ? "remote" : "docker";
}

/** switchBody is the PATCH /agents/{id}/backend body of a choice. */
export function switchBody(choice: BackendChoice, url: string): { mode: string; sandbox_url?: string } {
  if (choice === "local") return { mode: "local" };
  if (choice === "docker") return { mode: "remote" };
  return { mode: "remote", sandbox_url: url.trim() };
}

/**
 * The hooks of every agent in registration order (services/agent/internal/hooks).
 * The API lists them only in the answer to a change, and a change makes the
 * user a copy of a template agent: the page reads them from the agent.
 */
export const HOOKS = ["tracing", "todolist", "filesystem", "skills", "memory", "summarization"] as const;

/**
 * hookStates says of each hook whether it is switched on (Agent.hooks; on
 * unless set off) and, when on, why it may still not run: the service's
 * hooks.active.
 */
export function hookStates(agent: Agent): { name: string; on: boolean; idle?: string }[] {
  const backend = !!agent.backend?.type;
  return HOOKS.map((name) => {
    const on = agent.hooks?.[name] !== false;
    let idle: string | undefined;
    if ((name === "filesystem" || name === "skills" || name === "memory") && !backend) idle = "no sandbox";
    else if (name === "skills" && !agent.skills?.paths?.length) idle = "no skills paths";
    else if (name === "memory" && !agent.memory?.paths?.length) idle = "no memory paths";
    return { name, on, ...(idle ? { idle } : {}) };
  });
}

/** How a sandbox state reads: the API's "none" is a sandbox not made yet. */
const STATE_LABEL: Record<string, string> = { none: "not started", "": "no sandbox" };

interface SettingsProps {
  client: Wick;
  agent: Agent;
  /** A run of the open thread is going: when it ends, the sandbox it used is read again. */
  running?: boolean;
  onChanged(agent: Agent): void;
  onError(err: unknown): void;
}

/** AgentSettings controls the open agent's sandbox and hooks and lists its skills (in the settings dialog). */
export function AgentSettings({ client, agent, running = false, onChanged, onError }: SettingsProps) {
  const id = agent.agent_id ?? "";
  const current = backendChoice(agent);
  const [choice, setChoice] = useState<BackendChoice | "">(current);
  const [url, setUrl] = useState(agent.backend?.sandbox_url ?? "");
  const [busy, setBusy] = useState(false);
  const [skills, setSkills] = useState<Skill[] | undefined>();
  const [skillProblems, setSkillProblems] = useState<SkillProblem[]>([]);
  const [notRunning, setNotRunning] = useState(false);
  const [sandboxState, setSandboxState] = useState<string | undefined>();
  const hooks = hookStates(agent);
  const state = agent.backend?.type ? sandboxState || agent.sandbox_state || "unknown" : "";
  // Nothing to stop or restart: no sandbox, or one not made yet.
  const noContainer = !agent.backend?.type || state === "none";

  // The list leaves out the sandbox's state: GET /agents/{id} has it. The
  // agent changes with every config event, so this follows them.
  useEffect(() => {
    const ctrl = new AbortController();
    client.api
      .GET("/agents/{agent_id}", { params: { path: { agent_id: id } }, signal: ctrl.signal })
      .then(({ data }) => setSandboxState(data?.agent?.sandbox_state))
      .catch((err: unknown) => {
        if (!ctrl.signal.aborted) onError(err);
      });
    return () => ctrl.abort();
    // running: a run may start the sandbox (the local backend says nothing when it does).
  }, [client, id, agent, running, onError]);


  useEffect(() => {
    setChoice(backendChoice(agent));
    setUrl(agent.backend?.sandbox_url ?? "");
  }, [agent]);

  // Skills change with the sandbox and the agent. The state read above, not
  // the agent's: a run starts the sandbox without changing the agent, and a
  // list read before it started would say so for good.
  useEffect(() => {
    const ctrl = new AbortController();
    client.api
      .GET("/agents/skills/available", { params: { query: { agent_id: id } }, signal: ctrl.signal })
      .then(({ data }) => {
        setSkills(data?.skills ?? []);
        setSkillProblems(data?.problems ?? []);
        setNotRunning((data?.not_running_agent_ids ?? []).includes(id));
      })
      .catch((err: unknown) => {
        if (!ctrl.signal.aborted) onError(err);
      });
    return () => ctrl.abort();
  }, [client, id, state, onError]);

  const act = async (f: () => Promise<void>) => {
    setBusy(true);
    try {
      await f();
    } catch (err) {
      onError(err);
    } finally {
      setBusy(false);
    }
  };

  const control = (action: "stop" | "restart") =>
    act(async () => {
      const { data } = await client.api.POST("/agents/{agent_id}/container", { params: { path: { agent_id: id } }, body: { action } });
      setSandboxState(data?.status);
      onChanged({ ...agent, sandbox_state: data?.status ?? "" });
    });

  const switchTo = (c: BackendChoice) =>
    act(async () => {
      const { data } = await client.api.PATCH("/agents/{agent_id}/backend", { params: { path: { agent_id: id } }, body: switchBody(c, url) });
      if (data?.agent) onChanged(data.agent);
    });

  const toggleHook = (name: string, enabled: boolean) =>
    act(async () => {
      await client.api.PATCH("/agents/{agent_id}/hooks", { params: { path: { agent_id: id } }, body: { hooks: { [name]: enabled } } });
      onChanged({ ...agent, hooks: { ...agent.hooks, [name]: enabled } });
    });


  return (
    <div className="agent-settings">
      <div className="side-head">
        <h2>Sandbox</h2>
        <span className={`state state-${state || "none"}`} data-testid="container-state" data-state={state}>
          {STATE_LABEL[state] ?? state}
        </span>
      </div>
      <div className="row wrap">
        <button type="button" data-testid="container-stop" disabled={busy || noContainer} onClick={() => control("stop")}>
          Stop
        </button>
        <button type="button" data-testid="container-restart" disabled={busy || noContainer} onClick={() => control("restart")}>
          Restart
        </button>
      </div>
      <label className="small">
        Backend
        <select
          data-testid="backend-select"
          value={choice}
          disabled={busy}
          onChange={(e) => {
            const c = e.target.value as BackendChoice;
            setChoice(c);
            if (c !== "remote") void switchTo(c);
          }}
        >
          {current === "" && <option value="">None</option>}
          <option value="local">Local</option>
          <option value="docker">Local Docker</option>
          <option value="remote">Remote Docker…</option>
        </select>
      </label>
      {choice === "remote" && (
        <form
          className="row"
          onSubmit={(e) => {
            e.preventDefault();
            void switchTo("remote");
          }}
        >
          <input data-testid="backend-url" className="grow" placeholder="tcp://host:2376" value={url} onChange={(e) => setUrl(e.target.value)} required />
          <button type="submit" data-testid="backend-apply" disabled={busy || url.trim() === ""}>
            Switch
          </button>
        </form>
      )}

      <h2>Hooks</h2>
      {agent.acp ? (
        <p className="muted small" data-testid="hooks-acp">
          Backed by an ACP agent (<code>{agent.acp.command}</code>), which runs its own loop: Wick&apos;s hooks do not apply.
        </p>
      ) : (
        <ul className="list hooks">
          {hooks.map((h) => (
            <li key={h.name}>
              <label className="check">
                <input type="checkbox" data-testid="hook-toggle" data-hook={h.name} checked={h.on} disabled={busy} onChange={(e) => toggleHook(h.name, e.target.checked)} />
                {h.name}
                {h.on && h.idle && <span className="muted small">({h.idle})</span>}
              </label>
            </li>
          ))}
          {hooks.length === 0 && <li className="muted small">No hooks.</li>}
        </ul>
      )}

      <h2>Skills</h2>
      <ul className="list skills" data-testid="skills-list">
        {skills?.map((s) => (
          <li key={s.path} title={s.path}>
            <strong>{s.name}</strong> <span className="muted small">{s.description}</span>
          </li>
        ))}
        {skills?.length === 0 && <li className="muted small">{notRunning ? "The sandbox is not running: its skills show once it starts." : "No skills found."}</li>}
        {skillProblems.map((p) => (
          <li key={p.path} className="skill-problem" data-testid="skill-problem" title={p.path}>
            <strong>⚠ {p.path}</strong> <span className="small">{p.warning}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}
