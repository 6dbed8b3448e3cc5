import { describe, expect, it } from "vitest";

import { agentDescription, DESCRIPTION_CHARS, examplePrompts } from "./starters";

describe("agentDescription", () => {
  it("is the first sentence of the system prompt", () => {
    expect(agentDescription({ agent_id: "a", system_prompt: "You review Go code.  Be terse. Cite lines." })).toBe("You review Go code.");
  });
  it("cuts a long first sentence at a word", () => {
    const long = "word ".repeat(100).trim();
    const d = agentDescription({ agent_id: "a", system_prompt: long });
    expect(d.length).toBeLessThanOrEqual(DESCRIPTION_CHARS + 1);
    expect(d.endsWith("word…")).toBe(true);
  });
  it("says what the settings say when there is no prompt", () => {
    expect(agentDescription({ agent_id: "a", backend: { type: "docker" }, approval: "interactive" })).toBe(
      "Works with files and commands in its own workspace. Asks you before each tool call.",
    );
    expect(agentDescription({ agent_id: "a" })).toBe("Answers in the chat; it has no workspace.");
  });
});

describe("examplePrompts", () => {
  it("offers four distinct prompts, workspace ones to an agent with a workspace", () => {
    const withFiles = examplePrompts({ agent_id: "a", backend: { type: "local" } });
    const without = examplePrompts({ agent_id: "a" });
    for (const ps of [withFiles, without]) {
      expect(ps).toHaveLength(4);
      expect(new Set(ps).size).toBe(4);
    }
    expect(withFiles.join(" ")).toMatch(/workspace/);
    expect(without.join(" ")).not.toMatch(/workspace/);
  });
});
