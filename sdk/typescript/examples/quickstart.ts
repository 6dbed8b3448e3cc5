import { Wick } from "@wick-agent/sdk";

const wick = new Wick({ baseUrl: process.env.WICK_URL ?? "http://localhost:8000", token: process.env.WICK_TOKEN });
const run = wick.stream("default", { messages: [{ role: "user", content: "What is 6 * 7?" }] });
for await (const ev of run) {
  if (ev.event === "on_chat_model_stream") process.stdout.write(ev.data.delta);
  if (ev.event === "on_tool_start") console.log(`\n[${ev.name}]`, ev.data.args);
  if (ev.event === "error") throw new Error(ev.data.message);
}
console.log(`\nrun ${run.runId} on thread ${run.threadId}`);
