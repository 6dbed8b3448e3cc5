// The General form's fields: read from an agent, written back whole, and
// the field a refusal names.
import { WickError } from "@wick-agent/sdk";
import { describe, expect, it } from "vitest";

import { fieldRefusalText, fieldsOf, FieldError, refusedField, sameFields, updatedAgent } from "./agentEdit";

const agent = {
  agent_id: "a1",
  name: "A",
  model: "script:hello",
  tools: ["calculate"],
  backend: { type: "local" },
  hooks: { memory: false },
  sandbox_state: "running",
  template: true,
};

describe("agent edits", () => {
  it("write back the whole configuration with the edited fields, without output-only ones", () => {
    const f = { ...fieldsOf(agent), model: " openai:gpt-4o ", systemPrompt: "Be brief.", tools: "calculate\nask_user, read_file" };
    expect(updatedAgent(agent, f)).toEqual({
      agent_id: "a1",
      name: "A",
      model: "openai:gpt-4o",
      system_prompt: "Be brief.",
      tools: ["calculate", "ask_user", "read_file"],
      backend: { type: "local" },
      hooks: { memory: false },
    });
  });

  it("drop emptied fields, so the defaults apply", () => {
    const out = updatedAgent({ ...agent, system_prompt: "x" }, { model: "", systemPrompt: "  ", tools: "" });
    expect(out).not.toHaveProperty("model");
    expect(out).not.toHaveProperty("system_prompt");
    expect(out).not.toHaveProperty("tools");
  });

  it("read and write a fallback chain as JSON, and refuse bad JSON on the model field", () => {
    const chain = [{ provider: "openai", model: "gpt-4o" }, "script:hello"];
    const f = fieldsOf({ ...agent, model: chain });
    expect(f.model).toBe(JSON.stringify(chain));
    expect(updatedAgent(agent, f).model).toEqual(chain);
    expect(() => updatedAgent(agent, { ...f, model: "[oops" })).toThrow(FieldError);
  });

  it("compare tool lists by their names", () => {
    expect(sameFields(fieldsOf(agent), { ...fieldsOf(agent), tools: "calculate\n" })).toBe(true);
    expect(sameFields(fieldsOf(agent), { ...fieldsOf(agent), tools: "ask_user" })).toBe(false);
  });

  it("find the field an InvalidArgument names", () => {
    const refusal = (message: string) => new WickError(400, { code: 3, status: "INVALID_ARGUMENT", message });
    expect(refusedField(refusal(`invalid agent: agent "a1": tools[0] "bad tool" must be 1-64 letters, digits, '-' or '_'`))).toBe("tools");
    expect(refusedField(refusal(`invalid agent: agent "a1": model: a model list has at most 8 entries`))).toBe("model");
    expect(refusedField(refusal(`invalid agent: agent "a1": max_turns must be between 0 and 200`))).toBeUndefined();
    expect(fieldRefusalText(refusal(`invalid agent configuration: agent "a1": tools[0] "bad tool" must be 1-64 letters`))).toBe(
      `tools[0] "bad tool" must be 1-64 letters (400 INVALID_ARGUMENT)`,
    );
    expect(refusedField(new WickError(404, { code: 5, status: "NOT_FOUND", message: `agent "a1": model` }))).toBeUndefined();
  });
});
