// What the suite under test is started with (setup/wick.ts) and what the
// tests expect of it.

/** Bearer tokens of the two users. */
export const TOKENS = {
  alice: "sdk-alice-token-0123456789",
  bob: "sdk-bob-token-0123456789",
} as const;

/** The organisation both users belong to (-knowledge-orgs): its knowledge collections are theirs. */
export const ORG = "acme";

/** The script of agents made to answer from a knowledge collection. */
export const KB_SCRIPT = "kb";
/** The reply of the "kb" script: it cites the first source the knowledge hook gave it. */
export const KB_ANSWER = "Replicas share their state through Redis [1].";

/** The reply of the "tools" script's last turn. */
export const TOOLS_ANSWER = "The note is written and the plan is done.";
/** The text of the "approve" script's turn after the approval. */
export const APPROVED_TEXT = "Thank you for the approval: the file is written and this reply is long enough to span many events.";

/** A slow reply: a run of it lasts about 6 s unless it is cancelled. */
const SLOW_WORDS = 300;
const SLOW_DELAY = "20ms";

/** Script files of the scripted model (`script:<name>`), in llmgw's script format. */
export const SCRIPTS = {
  // A plan, a file, an answer: every kind of event but on_interrupt.
  tools: {
    delay: "2ms",
    turns: [
      {
        text: "I will plan, then write a note.",
        tool_calls: [
          { name: "write_todos", arguments: { todos: [{ title: "write the note", status: "in_progress" }] } },
          { name: "write_file", arguments: { path: "/workspace/sdk/note.txt", content: "note from the sdk test\n" } },
        ],
      },
      { text: TOOLS_ANSWER },
    ],
    end_text: "The tools script has finished.",
  },
  // One short answer, for tests that need many threads.
  hello: { turns: [{ text: "Hello." }] },
  slow: {
    delay: SLOW_DELAY,
    turns: [{ text: Array.from({ length: SLOW_WORDS }, (_, i) => `word${i}`).join(" ") }],
    end_text: "The slow script has finished.",
  },
  // A tool call that waits for approval: the run cannot end before it is
  // resumed, so a connection cut before then is always mid-run.
  approve: {
    delay: "2ms",
    turns: [
      {
        text: "I will write a file once you approve.",
        tool_calls: [{ name: "write_file", arguments: { path: "/workspace/sdk/approved.txt", content: "approved\n" } }],
      },
      { text: APPROVED_TEXT },
    ],
    end_text: "The approve script has finished.",
  },
  [KB_SCRIPT]: { delay: "2ms", turns: [{ text: KB_ANSWER }], end_text: "The kb script has finished." },
  // A question to the user (ask_user), then the answer's echo.
  ask: {
    turns: [
      { tool_calls: [{ id: "q1", name: "ask_user", arguments: { question: "Which colour?", choices: ["red", "blue"] } }] },
      { text: "Thanks for answering." },
    ],
  },
  // A slow first step (text, then a calculation) to stop in, then an answer.
  step: {
    delay: SLOW_DELAY,
    turns: [
      { text: Array.from({ length: 50 }, (_, i) => `word${i}`).join(" "), tool_calls: [{ name: "calculate", arguments: { expr: "6*7" } }] },
      { text: "The answer is 42." },
    ],
  },
};

/** The agents (agents.yaml): templates every user can run. */
export const AGENTS = {
  default: { name: "Default agent of the SDK tests", backend: { type: "local" } },
  slow: { name: "Slow agent", model: "script:slow" },
  approve: { name: "Agent that asks for approval", model: "script:approve", backend: { type: "local" }, approval: "interactive" },
  ask: { name: "Agent that asks the user", model: "script:ask", tools: ["ask_user"] },
  step: { name: "Agent with a slow step", model: "script:step", tools: ["calculate"] },
};
