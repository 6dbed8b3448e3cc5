#!/usr/bin/env node
// The UI's numbers (docs/ui.md, `make bench-ui`), printed as rows of the
// README's performance table:
//  1. initial-route JavaScript: the scripts dist/index.html loads eagerly
//     (its module script and modulepreload links), each gzipped with zlib;
//     lazy chunks (terminal, editors) are listed apart. Target ≤ 250 KB.
//  2. long tasks: Chromium renders a 60 s stream at 50 tokens/s (3,000
//     tokens, 20 ms apart, from the scripted model of the real suite) while
//     a PerformanceObserver collects every main-thread task over 50 ms.
//     Target: none.
//  3. token paint latency: an init script timestamps each SSE event as its
//     chunk reaches the page (fetch's body, read by the app) and, after each
//     DOM change of the message, the next animation frame (the paint it goes
//     out with); a token's latency is from its event to the first frame that
//     shows it. Target for the first token ≤ 50 ms; p50 and max of all.
// Usage: node scripts/perf.mjs [--seconds 60] [--size-only]
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";

import { launchChromium } from "../e2e/harness/browser.mjs";
import { buildBinaries, distDir, requireDist, startSuite } from "../e2e/harness/suite.mjs";

const TARGET_INITIAL_KB = 250;
const TARGET_LONG_TASK_MS = 50;
const TARGET_FIRST_TOKEN_MS = 50;
const TOKENS_PER_SECOND = 50;
/** How long the app may take to show what the script waits for. */
const UI_TIMEOUT_MS = 30_000;

const { values: opts } = parseArgs({
  options: { seconds: { type: "string", default: "60" }, "size-only": { type: "boolean", default: false } },
});
const seconds = Number(opts.seconds);
if (!(seconds > 0)) throw new Error(`--seconds ${opts.seconds}: want a positive number`);

await requireDist();
const size = await initialJavaScript();
// Rows as the README's performance table has them: what, measured, target, verdict.
const verdict = (ok) => (ok ? "met" : "not met");
const rows = [
  [
    "UI: initial-route JavaScript, gzipped (`make bench-ui`)",
    `${kb(size.initial)} KB (${size.files.length} file${size.files.length === 1 ? "" : "s"}; lazy chunks ${kb(size.lazy)} KB more)`,
    `≤ ${TARGET_INITIAL_KB} KB`,
    verdict(size.initial <= TARGET_INITIAL_KB * 1024),
  ],
];
let failed = size.initial > TARGET_INITIAL_KB * 1024;
if (!opts["size-only"]) {
  try {
    const m = await streamMeasures(seconds);
    const p50 = quantile(m.latencies, 0.5);
    const max = Math.max(...m.latencies);
    const first = m.latencies[0];
    rows.push(
      [
        `UI: longest main-thread task while a ${seconds} s stream renders at ${TOKENS_PER_SECOND} tokens/s, Chromium`,
        m.longTasks.length ? `${Math.round(Math.max(...m.longTasks))} ms (${m.longTasks.length} tasks ≥ ${TARGET_LONG_TASK_MS} ms)` : `none ≥ ${TARGET_LONG_TASK_MS} ms`,
        `< ${TARGET_LONG_TASK_MS} ms`,
        verdict(m.longTasks.length === 0),
      ],
      [
        "UI: first token painted after its SSE event reaches the page",
        `${Math.round(first)} ms (every token: p50 ${Math.round(p50)} ms, max ${Math.round(max)} ms, ${m.latencies.length} tokens)`,
        `≤ ${TARGET_FIRST_TOKEN_MS} ms`,
        verdict(first <= TARGET_FIRST_TOKEN_MS),
      ],
    );
    failed ||= m.longTasks.length > 0 || first > TARGET_FIRST_TOKEN_MS;
  } catch (err) {
    rows.push(["UI: stream measures", `not measured: ${String(err?.message ?? err).split("\n")[0]}`, "", ""]);
    failed = true;
  }
}
console.log("\n| what | measured | target | |\n|---|---|---|---|");
for (const r of rows) console.log(`| ${r.join(" | ")} |`);
console.log("\nInitial-route files (gzipped):");
for (const f of size.files) console.log(`  ${f.name}  ${kb(f.gz)} KB`);
process.exitCode = failed ? 1 : 0;

function kb(bytes) {
  return (bytes / 1024).toFixed(1);
}

function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

// initialJavaScript sums the gzipped scripts index.html loads before the app
// runs; every other script in assets/ is a lazy chunk.
async function initialJavaScript() {
  const html = await readFile(path.join(distDir, "index.html"), "utf8");
  const eager = new Set();
  for (const m of html.matchAll(/<script\b[^>]*\bsrc="([^"]+\.js)"[^>]*>/g)) eager.add(m[1]);
  for (const m of html.matchAll(/<link\b[^>]*\brel="modulepreload"[^>]*>/g)) {
    const href = /\bhref="([^"]+)"/.exec(m[0])?.[1];
    if (href) eager.add(href);
  }
  const gz = async (rel) => gzipSync(await readFile(path.join(distDir, rel.replace(/^\//, "")))).length;
  const files = [];
  for (const name of eager) files.push({ name, gz: await gz(name) });
  let lazy = 0;
  for (const f of await readdir(path.join(distDir, "assets"))) {
    if (f.endsWith(".js") && !eager.has(`/assets/${f}`)) lazy += await gz(`assets/${f}`);
  }
  return { files, initial: files.reduce((s, f) => s + f.gz, 0), lazy };
}

// streamMeasures runs the real suite with a scripted model that streams
// `seconds` of tokens and renders it in Chromium.
async function streamMeasures(seconds) {
  const words = Array.from({ length: seconds * TOKENS_PER_SECOND }, (_, i) => `w${i}`);
  const token = "ui-perf-token-0123456789";
  const binDir = await buildBinaries({ docker: false });
  const suite = await startSuite({
    binDir,
    backend: "local",
    users: { perf: token },
    scripts: { stream: { delay: `${1000 / TOKENS_PER_SECOND}ms`, turns: [{ text: words.join(" ") }] } },
    agents: { stream: { name: "Streams for the numbers", model: "script:stream", backend: { type: "local" } } },
    model: "script:stream",
    logLevel: "error",
  });
  const browser = await launchChromium();
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(UI_TIMEOUT_MS);
    await context.addInitScript(instrument);
    const page = await context.newPage();
    await page.goto(suite.url + "/");
    await page.getByTestId("token-dialog").waitFor();
    await page.getByTestId("token-input").fill(token);
    await page.getByTestId("token-submit").click();
    await page.locator('[data-testid="agent-item"][data-agent-id="stream"]').click();
    await page.getByTestId("thread-new").click();
    await page.getByTestId("chat-input").fill("Stream for the numbers.");
    // Only the stream counts, not loading and signing in.
    await page.evaluate(() => window.__perf.reset());
    await page.getByTestId("chat-send").click();
    await page.waitForFunction((n) => window.__perf.shown() >= n, words.length, { timeout: (seconds + 60) * 1000, polling: 500 });
    const { arrivals, frames, longTasks } = await page.evaluate(() => window.__perf.result());
    // Token i is shown by the first frame whose message has more than i words.
    const latencies = [];
    let f = 0;
    for (let i = 0; i < arrivals.length; i++) {
      while (f < frames.length && frames[f].words <= i) f++;
      if (f === frames.length) break;
      latencies.push(frames[f].t - arrivals[i]);
    }
    if (latencies.length === 0) throw new Error("no token was seen both arriving and painted");
    return { latencies, longTasks };
  } finally {
    await browser.close();
    await suite.stop();
    const { rm } = await import("node:fs/promises");
    await rm(binDir, { recursive: true, force: true });
  }
}

// instrument runs in the page before the app: it notes when SSE events reach
// the page, the frames that show the newest assistant message's words, and
// the long tasks.
function instrument() {
  const state = { arrivals: [], frames: [], longTasks: [], words: 0, pending: false };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) state.longTasks.push(e.duration);
  }).observe({ type: "longtask", buffered: true });

  const origFetch = window.fetch.bind(window);
  window.fetch = async (...args) => {
    const res = await origFetch(...args);
    if (!(res.headers.get("content-type") ?? "").startsWith("text/event-stream") || !res.body) return res;
    const decoder = new TextDecoder();
    let buf = "";
    const tap = new TransformStream({
      transform(chunk, ctl) {
        const t = performance.now();
        buf += decoder.decode(chunk, { stream: true });
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (/^event: ?on_chat_model_stream$/m.test(frame)) state.arrivals.push(t);
        }
        ctl.enqueue(chunk);
      },
    });
    return new Response(res.body.pipeThrough(tap), { status: res.status, statusText: res.statusText, headers: res.headers });
  };

  const count = () => {
    const msgs = document.querySelectorAll('[data-testid="message"][data-role="assistant"]');
    const text = msgs[msgs.length - 1]?.querySelector('[data-testid="message-text"]')?.textContent ?? "";
    return text.split(/\s+/).filter(Boolean).length;
  };
  const onChange = () => {
    if (state.pending) return;
    state.pending = true;
    // The frame after a change is the one that paints it.
    requestAnimationFrame(() => {
      state.pending = false;
      const n = count();
      if (n > state.words) {
        state.words = n;
        state.frames.push({ t: performance.now(), words: n });
      }
    });
  };
  const start = () => new MutationObserver(onChange).observe(document.body, { subtree: true, childList: true, characterData: true });
  if (document.body) start();
  else document.addEventListener("DOMContentLoaded", start);

  window.__perf = {
    reset() {
      state.arrivals = [];
      state.frames = [];
      state.longTasks = [];
      state.words = 0;
    },
    shown: () => state.words,
    result: () => ({ arrivals: state.arrivals, frames: state.frames, longTasks: state.longTasks }),
  };
}
