// What a new thread offers before its first message: a line that says what
// the agent is, and example prompts that fit what it can do. The API's Agent
// has no description of its own, so the line is read from its prompt and
// settings.
import type { Agent } from "../sidebar/Agents";

/** The longest description shown; a longer first sentence is cut at a word. */
export const DESCRIPTION_CHARS = 160;

/**
 * agentDescription is the first sentence of the agent's system prompt, else
 * what its settings say (interactive approval, a workspace).
 */
export function agentDescription(agent: Agent): string {
  const prompt = (agent.system_prompt ?? "").trim().replace(/\s+/g, " ");
  if (prompt !== "") {
    const sentence = /^.*?[.!?](?=\s|$)/.exec(prompt)?.[0] ?? prompt;
    if (sentence.length <= DESCRIPTION_CHARS) return sentence;
    const cut = sentence.slice(0, DESCRIPTION_CHARS);
    const space = cut.lastIndexOf(" ");
    return (space > DESCRIPTION_CHARS / 2 ? cut.slice(0, space) : cut) + "…";
  }
  const parts = [hasWorkspace(agent) ? "Works with files and commands in its own workspace." : "Answers in the chat; it has no workspace."];
  if (agent.approval === "interactive") parts.push("Asks you before each tool call.");
  return parts.join(" ");
}

function hasWorkspace(agent: Agent): boolean {
  return !!agent.backend?.type;
}

/** examplePrompts are four prompts to start with: file and command work for an agent with a workspace. */
export function examplePrompts(agent: Agent): string[] {
  if (hasWorkspace(agent)) {
    return [
      "What can you do in your workspace?",
      "Write a Python script that prints the first 20 prime numbers, then run it.",
      "List the files in the workspace and summarise what each one is for.",
      "Make a plan for a small static website, then write its index.html.",
    ];
  }
  return [
    "What can you help me with?",
    "Explain the difference between a process and a thread, with an example.",
    "Draft a short, friendly email asking to move a meeting to Friday.",
    "Give me three ideas for a weekend project, with a first step for each.",
  ];
}
