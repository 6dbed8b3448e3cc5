// What the suites under test are started with (setup/wick.ts) and what the
// browser tests expect of them. The texts carry no Markdown syntax, so the
// rendered text of a message is the streamed text.

/** The answer of the "hello" script: 40 tokens, streamed one by one. */
export const HELLO_TEXT = Array.from({ length: 40 }, (_, i) => `token${i}`).join(" ");

/** What the "tools" script writes, and its answers. */
export const TOOLS_INTRO = "I will plan the work, then write the report.";
export const TOOLS_ANSWER = "The report is written and the plan is done.";
export const REPORT_PATH = "/workspace/report.md";
export const REPORT_HEADING = "Report of the browser test";
export const REPORT_CONTENT = `# ${REPORT_HEADING}\n\nThe canvas renders this file as a document.\n\n- one\n- two\n`;
export const TODO_TITLE = "write the report";
/** The todo's status as the API spells it (pending, in_progress, done). */
export const TODO_STATUS = "done";

/** The "slow" script: 300 tokens at 20 ms, about 6 s unless it is stopped. */
export const SLOW_WORDS = Array.from({ length: 300 }, (_, i) => `word${i}`);
export const SLOW_TEXT = SLOW_WORDS.join(" ");
export const SLOW_END = "The slow script has finished.";

/** The "ask" script: a question to the user, then thanks. */
export const ASK_QUESTION = "Which colour?";
export const ASK_CHOICES = ["red", "blue"];
export const ASK_ANSWER = "Thanks for answering.";
/** The "step" script's answer after its calculation. */
export const STEP_ANSWER = "The answer is 42.";

/** The "outlive" script: like "approve", for another file, so that its test and approval's run side by side. */
export const OUTLIVE_PATH = "/workspace/outlived.txt";
export const OUTLIVE_CONTENT = "outlived its page\n";
export const OUTLIVE_ANSWER = "The file is written after all.";

/** The "sleep" script's command: longer than any test, so the run is cancelled while it runs. */
export const SLEEP_COMMAND = "sleep 120";

/** The "approve" script: a write that waits for approval. */
export const APPROVE_PATH = "/workspace/approved.txt";
export const APPROVE_CONTENT = "approved\n";
export const EDITED_CONTENT = "edited in the browser\n";
export const APPROVE_ANSWER = "The file request is settled.";

/** The organisation every user belongs to (-knowledge-orgs): its knowledge collections are theirs. */
export const ORG = "acme";

/** The "kb" script: an answer that cites the first source the knowledge hook gave it. */
export const KB_ANSWER = "Replicas share their state through Redis [1].";

/** The "deck" script: a CSV of sales, then (a step later) a 3-slide deck whose first slide shows a chart the test uploads. */
export const DECK_PATH = "/workspace/sales.slides.md";
export const DECK_CHART_PATH = "/workspace/report/sales-chart.png";
export const DECK_CONTENT = [
  "---",
  "marp: true",
  "paginate: true",
  "---",
  "",
  "# Sales, first quarter",
  "",
  "![Sales by month](report/sales-chart.png)",
  "",
  "---",
  "",
  "# What changed",
  "",
  "- March doubled January",
  "- The north sold most",
  "",
  "---",
  "",
  "# Next steps",
  "",
  "1. Keep the north's stock up",
  "2. Ask the south why",
  "",
].join("\n");
export const SALES_PATH = "/workspace/report/sales.csv";
export const SALES_CONTENT = "month,region,sales,cost\nJan,north,120,80\nFeb,south,150,90\nMar,north,240,120\nApr,south,180,100\n";
export const DECK_ANSWER = "The sales table and the deck are written.";

/** What the embedded showcase script (services/llmgw/internal/script/showcase.json) does and writes. */
export const SHOWCASE_SKILL_MD = "/workspace/skills/csv-analyzer/SKILL.md";
export const SHOWCASE_DECK = "/workspace/sales.slides.md";
/** Written by the skill's analyze.py, which the script runs with execute: no tool event names it. */
export const SHOWCASE_CHART = "/workspace/report/sales-chart.png";
/** The start of the script's final answer. */
export const SHOWCASE_ANSWER_START = "Done. I read the csv-analyzer skill's SKILL.md";
/** The skills of Wick's library (skills/), in the order the sidebar lists them. */
export const SHIPPED_SKILLS = ["code-review", "csv-analyzer", "data-analysis", "research", "slides", "summarization"];

/** The "readup" script: reads the file a browser test attached, then says so. */
export const READUP_PATH = "/workspace/uploads/notes.txt";
export const READUP_ANSWER = "I have read the attached notes.";

export const SCRIPTS = {
  hello: { delay: "25ms", turns: [{ text: HELLO_TEXT }], end_text: "The hello script has finished." },
  tools: {
    delay: "2ms",
    turns: [
      {
        text: TOOLS_INTRO,
        tool_calls: [
          { name: "write_todos", arguments: { todos: [{ title: TODO_TITLE, status: "done" }] } },
          { name: "write_file", arguments: { path: REPORT_PATH, content: REPORT_CONTENT } },
        ],
      },
      { text: TOOLS_ANSWER },
    ],
    end_text: "The tools script has finished.",
  },
  slow: { delay: "20ms", turns: [{ text: SLOW_TEXT }], end_text: SLOW_END },
  approve: {
    delay: "2ms",
    turns: [
      {
        text: "I will write a file once you approve.",
        tool_calls: [{ name: "write_file", arguments: { path: APPROVE_PATH, content: APPROVE_CONTENT } }],
      },
      { text: APPROVE_ANSWER },
    ],
    end_text: "The approve script has finished.",
  },
  deck: {
    delay: "2ms",
    turns: [
      { tool_calls: [{ name: "write_file", arguments: { path: SALES_PATH, content: SALES_CONTENT } }] },
      { tool_calls: [{ name: "write_file", arguments: { path: DECK_PATH, content: DECK_CONTENT } }] },
      { text: DECK_ANSWER },
    ],
  },
  kb: { delay: "2ms", turns: [{ text: KB_ANSWER }], end_text: "The kb script has finished." },
  // A question to the user (ask_user), then thanks.
  ask: {
    turns: [
      { tool_calls: [{ id: "q1", name: "ask_user", arguments: { question: ASK_QUESTION, choices: ASK_CHOICES } }] },
      { text: ASK_ANSWER },
    ],
  },
  outlive: {
    delay: "2ms",
    turns: [
      { text: "I will write a file once you approve.", tool_calls: [{ name: "write_file", arguments: { path: OUTLIVE_PATH, content: OUTLIVE_CONTENT } }] },
      { text: OUTLIVE_ANSWER },
    ],
  },
  // A command that runs until the run is cancelled.
  sleep: {
    delay: "2ms",
    turns: [{ text: "I will wait.", tool_calls: [{ name: "execute", arguments: { command: SLEEP_COMMAND } }] }, { text: "Waited." }],
  },
  // Reads an attached file (the test's agent has the suite's backend).
  readup: {
    delay: "2ms",
    turns: [{ tool_calls: [{ name: "read_file", arguments: { path: READUP_PATH } }] }, { text: READUP_ANSWER }],
  },
  // A slow first step (text, then a calculation) to stop in, then an answer.
  step: {
    delay: "20ms",
    turns: [
      { text: SLOW_TEXT, tool_calls: [{ name: "calculate", arguments: { expr: "6*7" } }] },
      { text: STEP_ANSWER },
    ],
  },
};

/**
 * The agents (agents.yaml) of a suite: templates every user can run. Each
 * names the suite's backend: an agent without one has no sandbox, so no
 * file tools, files or terminal.
 */
export function agentsFor(backend: "local" | "docker") {
  const b = { backend: { type: backend } };
  return {
    // The agent a fresh page opens (the id Wick gives its default agent), on the suite's default model.
    default: { name: "Default agent", ...b },
    hello: { name: "Hello agent", model: "script:hello", ...b },
    writer: { name: "Agent that writes a report", model: "script:tools", ...b },
    deck: { name: "Agent that writes a deck", model: "script:deck", ...b },
    slow: { name: "Slow agent", model: "script:slow", ...b },
    approve: { name: "Agent that asks for approval", model: "script:approve", approval: "interactive", ...b },
    asker: { name: "Agent that asks the user", model: "script:ask", tools: ["ask_user"], ...b },
    outliver: { name: "Agent whose approval outlives its page", model: "script:outlive", approval: "interactive", ...b },
    sleeper: { name: "Agent that runs a long command", model: "script:sleep", ...b },
    stepper: { name: "Agent with a slow step", model: "script:step", tools: ["calculate"], ...b },
    // The embedded script (no file in the suite's script directory) with the built-in skills library.
    showcase: { name: "Showcase agent", model: "script:showcase", skills: { paths: ["/workspace/skills"] }, ...b },
  };
}

/** The default agent's model. */
export const DEFAULT_MODEL = "script:tools";

/**
 * The users of a run: bob checks that he sees none of alice's threads; carol
 * poses for the screenshots; dave drives the shell (layout, theme, axe). Names and tokens are new every run, so that
 * Docker containers of another run are never adopted and cleaning up
 * removes only this run's.
 */
export function newUsers(): Record<"alice" | "bob" | "carol" | "dave", { name: string; token: string }> {
  const id = Math.random().toString(16).slice(2, 10);
  const user = (n: string) => ({ name: `${n}-${id}`, token: `ui-e2e-${n}-${id}-0123456789` });
  return { alice: user("alice"), bob: user("bob"), carol: user("carol"), dave: user("dave") };
}
