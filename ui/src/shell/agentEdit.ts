// What the settings dialog edits of an agent (model, system prompt, tools),
// how the edited fields become the whole configuration UpdateAgent takes,
// and which field a refusal of the server names.
import { WickError } from "@wick-agent/sdk";

import type { Agent } from "../sidebar/Agents";
import { lines } from "../sidebar/Agents";

/** The edited fields, as the form holds them. */
export interface AgentFields {
  /** A model spec: a name, or the JSON of an object or a fallback list; empty for the default. */
  model: string;
  systemPrompt: string;
  /** Tool names, one a line (commas also split). */
  tools: string;
}

export type FieldName = keyof AgentFields;

/** fieldsOf reads the form's fields from the agent. */
export function fieldsOf(agent: Agent): AgentFields {
  const m = agent.model as unknown;
  const model = m === undefined || m === null ? "" : typeof m === "string" ? m : JSON.stringify(m);
  return { model, systemPrompt: agent.system_prompt ?? "", tools: (agent.tools ?? []).join("\n") };
}

/** sameFields compares fields as they would be saved (tool lists by their names). */
export function sameFields(a: AgentFields, b: AgentFields): boolean {
  return a.model.trim() === b.model.trim() && a.systemPrompt === b.systemPrompt && lines(a.tools).join("\n") === lines(b.tools).join("\n");
}

/** A field the page refuses before asking the server. */
export class FieldError extends Error {
  constructor(
    readonly field: FieldName,
    message: string,
  ) {
    super(message);
  }
}

/**
 * updatedAgent is the whole configuration UpdateAgent replaces the agent's
 * with: the agent as read, without its output-only fields, with the edited
 * fields. Masked secrets go back as read, which keeps them stored.
 */
export function updatedAgent(agent: Agent, f: AgentFields): Agent {
  const { sandbox_state: _state, template: _template, ...rest } = agent;
  const out: Agent = { ...rest };
  const model = f.model.trim();
  if (model === "") delete out.model;
  else if (model.startsWith("{") || model.startsWith("[")) {
    try {
      out.model = JSON.parse(model) as Agent["model"];
    } catch {
      throw new FieldError("model", "Not valid JSON: a model is a name (provider:model), or a JSON object or list of them.");
    }
  } else out.model = model;
  if (f.systemPrompt.trim() === "") delete out.system_prompt;
  else out.system_prompt = f.systemPrompt;
  const tools = lines(f.tools);
  if (tools.length === 0) delete out.tools;
  else out.tools = tools;
  return out;
}

/**
 * fieldRefusalText is what a refusal says of its field, without the
 * agent's name the field already stands under: `tools[1] "x" must be …`.
 */
export function fieldRefusalText(err: WickError): string {
  const m = /agent "[^"]*": (.*)$/s.exec(err.message);
  return `${m ? m[1] : err.message} (${err.status} ${err.code})`;
}

/**
 * refusedField says which edited field a refusal names: the service answers
 * InvalidArgument with `agent "<id>": <field>…: <why>`. Undefined when the
 * refusal is not about one of them.
 */
export function refusedField(err: unknown): FieldName | undefined {
  if (!(err instanceof WickError) || err.code !== "INVALID_ARGUMENT") return undefined;
  const m = /agent "[^"]*": (model|system_prompt|tools)\b/.exec(err.message);
  if (!m) return undefined;
  return m[1] === "system_prompt" ? "systemPrompt" : (m[1] as FieldName);
}
