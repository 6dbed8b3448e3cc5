// The settings dialog's General form: the agent's model, system prompt and
// tools, saved together through UpdateAgent (PUT /agents/{id}). Nothing is
// saved until Save; a refusal of the server shows next to the field it
// names. The draft belongs to the dialog, so closing it (Escape) loses no
// edit and asks nothing: it is there again on the next open.
import { WickError, type Wick } from "@wick-agent/sdk";
import { useEffect, useId, useState, type FormEvent } from "react";

import { errorText } from "../api/client";
import { SCRIPTED_MODELS, type Agent } from "../sidebar/Agents";
import { fieldRefusalText, fieldsOf, FieldError, refusedField, sameFields, updatedAgent, type AgentFields, type FieldName } from "./agentEdit";

interface Props {
  client: Wick;
  agent: Agent;
  /** The unsaved edits (undefined: none), kept by the dialog across closing. */
  draft: AgentFields | undefined;
  onDraft(draft: AgentFields | undefined): void;
  onSaved(agent: Agent): void;
}

export function AgentEditForm({ client, agent, draft, onDraft, onSaved }: Props) {
  const saved = fieldsOf(agent);
  const f = draft ?? saved;
  const dirty = draft !== undefined && !sameFields(draft, saved);
  const [busy, setBusy] = useState(false);
  const [errors, setErrors] = useState<Partial<Record<FieldName | "form", string>>>({});
  const [savedNote, setSavedNote] = useState(false);
  const [models, setModels] = useState<string[]>(SCRIPTED_MODELS);
  const ids = useId();
  const acp = !!agent.acp;

  // Suggestions only: a failed listing leaves the scripted models.
  useEffect(() => {
    const ctrl = new AbortController();
    client.api
      .GET("/v1/models", { signal: ctrl.signal })
      .then(({ data }) => {
        const found = (data?.data ?? []).map((m) => m.id).filter((id) => id && !SCRIPTED_MODELS.includes(id));
        setModels([...SCRIPTED_MODELS, ...found]);
      })
      .catch(() => {});
    return () => ctrl.abort();
  }, [client]);

  const set = (k: FieldName) => (e: { target: { value: string } }) => {
    onDraft({ ...f, [k]: e.target.value });
    setErrors(({ [k]: _gone, form: _form, ...rest }) => rest);
    setSavedNote(false);
  };

  const save = async (e: FormEvent) => {
    e.preventDefault();
    if (!dirty || busy) return;
    let body: Agent;
    try {
      body = updatedAgent(agent, f);
    } catch (err) {
      if (err instanceof FieldError) setErrors({ [err.field]: err.message });
      return;
    }
    setBusy(true);
    setErrors({});
    try {
      const { data } = await client.api.PUT("/agents/{agent_id}", { params: { path: { agent_id: agent.agent_id ?? "" } }, body });
      onDraft(undefined);
      setSavedNote(true);
      if (data?.agent) onSaved(data.agent);
    } catch (err) {
      const field = refusedField(err);
      setErrors(field && err instanceof WickError ? { [field]: fieldRefusalText(err) } : { form: `Not saved: ${errorText(err)}` });
    } finally {
      setBusy(false);
    }
  };

  const cancel = () => {
    onDraft(undefined);
    setErrors({});
  };

  const field = (k: FieldName) => ({
    id: `${ids}-${k}`,
    "aria-invalid": errors[k] ? true : undefined,
    "aria-describedby": errors[k] ? `${ids}-${k}-error` : `${ids}-${k}-hint`,
  });
  const fieldError = (k: FieldName) =>
    errors[k] && (
      <p className="field-error" id={`${ids}-${k}-error`} role="alert" data-testid={`agent-edit-${k}-error`}>
        {errors[k]}
      </p>
    );

  return (
    <form className="agent-edit" data-testid="agent-edit" onSubmit={save} aria-busy={busy || undefined}>
      {acp && <p className="muted small">This agent is backed by an external coding agent: its own model and tools run, not these.</p>}
      <div className="field">
        <label htmlFor={`${ids}-model`}>Model</label>
        <input {...field("model")} data-testid="agent-edit-model" value={f.model} onChange={set("model")} list={`${ids}-models`} placeholder="the default model" spellCheck={false} />
        <datalist id={`${ids}-models`}>
          {models.map((m) => (
            <option key={m} value={m} />
          ))}
        </datalist>
        <p className="field-hint" id={`${ids}-model-hint`}>
          A name such as <code>openai:gpt-4o</code>, or a JSON list of them (a fallback chain); empty uses the default.
        </p>
        {fieldError("model")}
      </div>
      <div className="field">
        <label htmlFor={`${ids}-systemPrompt`}>System prompt</label>
        <textarea {...field("systemPrompt")} data-testid="agent-edit-prompt" value={f.systemPrompt} onChange={set("systemPrompt")} rows={5} />
        <p className="field-hint" id={`${ids}-systemPrompt-hint`}>
          Sent before every conversation; empty uses none.
        </p>
        {fieldError("systemPrompt")}
      </div>
      <div className="field">
        <label htmlFor={`${ids}-tools`}>Tools</label>
        <textarea {...field("tools")} data-testid="agent-edit-tools" value={f.tools} onChange={set("tools")} rows={3} spellCheck={false} />
        <p className="field-hint" id={`${ids}-tools-hint`}>
          One name a line (letters, digits, - and _); empty gives the built-in tools.
        </p>
        {fieldError("tools")}
      </div>
      {errors.form && (
        <p className="field-error" role="alert" data-testid="agent-edit-error">
          {errors.form}
        </p>
      )}
      <div className="row agent-edit-actions">
        <span className="grow small muted" aria-live="polite" data-testid="agent-edit-state">
          {busy ? "Saving…" : dirty ? "Unsaved changes" : savedNote ? "Saved: the next run uses these settings." : ""}
        </span>
        <button type="button" data-testid="agent-edit-cancel" disabled={!dirty || busy} onClick={cancel}>
          Cancel
        </button>
        <button type="submit" className="primary" data-testid="agent-edit-save" disabled={!dirty || busy}>
          Save
        </button>
      </div>
    </form>
  );
}
