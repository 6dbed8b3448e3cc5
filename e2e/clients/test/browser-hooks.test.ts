// The React hooks front ends are built on, rendered in Debian's Chromium
// as a page would use them: LangGraph's useStream pointed at /langgraph and
// the AI SDK's useChat pointed at the chat endpoint. Each page
// (test/pages) is bundled with esbuild and served from the origin the
// suite allows (-cors-origins), so the calls are cross-origin as in a
// real deployment.
import { createServer, type Server } from "node:http";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";
import { chromium, type Browser, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";

import { headers, token, url } from "./helpers.js";

const pagesDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "pages");
const pageOrigin = inject("pageOrigin");
const PAGES = ["langgraph-use-stream", "aisdk-use-chat"] as const;
type PageName = (typeof PAGES)[number];
/** How long a page may take to show what the test waits for. */
const UI_TIMEOUT_MS = 20_000;

let dir: string;
let server: Server;
let browser: Browser;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "wick-browser-hooks-"));
  await build({
    entryPoints: PAGES.map((p) => path.join(pagesDir, `${p}.tsx`)),
    outdir: dir,
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    define: { "process.env.NODE_ENV": '"development"' },
    logLevel: "silent",
  });
  for (const p of PAGES) {
    await writeFile(
      path.join(dir, `${p}.html`),
      `<!doctype html><html><head><meta charset="utf-8"><title>${p}</title></head>` +
        `<body><div id="root"></div><script type="module" src="/${p}.js"></script></body></html>`,
    );
  }
  server = await serve(dir, new URL(pageOrigin));
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run"],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** serve answers GET /<file> from dir on the origin's port. */
function serve(root: string, origin: URL): Promise<Server> {
  const types: Record<string, string> = { ".html": "text/html", ".js": "text/javascript" };
  const srv = createServer((req, res) => {
    const name = path.basename(new URL(req.url ?? "/", origin).pathname);
    const type = types[path.extname(name)];
    if (!type) {
      res.writeHead(404).end();
      return;
    }
    readFile(path.join(root, name)).then(
      (body) => res.writeHead(200, { "content-type": type }).end(body),
      () => res.writeHead(404).end(),
    );
  });
  return new Promise((resolve, reject) => {
    srv.once("error", reject);
    srv.listen(Number(origin.port), origin.hostname, () => resolve(srv));
  });
}

/**
 * open loads a page for a user's agent, and collects what the page logs as
 * errors so that a failed wait says why.
 */
async function open(name: PageName, agent: string): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`);
  });
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
  const q = new URLSearchParams({ wick: url, token: token("alice"), agent });
  await page.goto(`${pageOrigin}/${name}.html?${q}`);
  return { page, problems };
}

/** send types a message into the page's form and sends it. */
async function send(page: Page, message: string): Promise<void> {
  await page.locator("#message").fill(message);
  await page.locator("#send").click();
}

/**
 * shows waits until the page shows what the locator finds; a failure says
 * what the page shows instead and what went wrong in it.
 */
async function shows(page: Page, problems: string[], what: Locator): Promise<void> {
  try {
    await what.waitFor({ timeout: UI_TIMEOUT_MS });
  } catch (err) {
    const shown = await page.locator("#root").innerText().catch(() => "");
    throw new Error(`${(err as Error).message}\npage shows:\n${shown}\n${problems.join("\n")}`);
  }
}

/** waitIdle waits until the page says the stream is over, then checks it shows no error. */
async function waitIdle(page: Page, problems: string[], idle: string): Promise<void> {
  await shows(page, problems, page.locator("#status", { hasText: new RegExp(`^${idle}$`) }));
  expect(await page.locator("#error").count(), problems.join("\n")).toBe(0);
}

/** Where the screenshots stay for a person to look at (ignored by git). */
const screenshotDir = fileURLToPath(new URL("../screenshots/", import.meta.url));

async function screenshot(page: Page, name: PageName): Promise<void> {
  await mkdir(screenshotDir, { recursive: true });
  const file = path.join(screenshotDir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`screenshot of ${name}: ${file}`);
}

type WickMessage = { role: string; content?: string; tool_calls?: { name: string; args?: unknown }[] };

/** invoke is Wick's own API's answer to a message on a new thread. */
async function invoke(agent: string, message: string): Promise<{ content: string; messages: WickMessage[] }> {
  const res = await fetch(`${url}/agents/${agent}/invoke`, {
    method: "POST",
    headers: { ...headers("alice"), "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: message }] }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { content: string; messages: WickMessage[] };
}

describe("React hooks in a browser", () => {
  it("useStream shows the human message and the streamed ai reply", async () => {
    const question = "Hello from the browser";
    const expected = (await invoke("default", question)).content;
    const { page, problems } = await open("langgraph-use-stream", "default");
    try {
      await send(page, question);
      await shows(page, problems, page.locator('li.message[data-type="ai"]', { hasText: expected }));
      await waitIdle(page, problems, "idle");
      const shown = await page.locator("li.message").evaluateAll((els) =>
        els.map((e) => [e.getAttribute("data-type"), e.querySelector(".content")?.textContent ?? ""]),
      );
      expect(shown).toEqual([
        ["human", question],
        ["ai", expected],
      ]);
      await screenshot(page, "langgraph-use-stream");
    } finally {
      await page.close();
    }
  });

  it("useChat shows the streamed reply and the tool part with its name and output", async () => {
    const question = "Write the note.";
    const own = await invoke("aisdk-tools", question);
    const call = own.messages.flatMap((m) => m.tool_calls ?? [])[0];
    const output = own.messages.find((m) => m.role === "tool")?.content;
    expect(call?.name).toBe("write_file");
    expect(output).toBeTruthy();
    const { page, problems } = await open("aisdk-use-chat", "aisdk-tools");
    try {
      await send(page, question);
      const reply = page.locator('li.message[data-role="assistant"]');
      await shows(page, problems, reply.locator(".text", { hasText: "The note is written." }));
      await waitIdle(page, problems, "ready");
      expect(await page.locator('li.message[data-role="user"]').innerText()).toContain(question);
      const tool = reply.locator(".tool");
      expect(await tool.count()).toBe(1);
      expect(await tool.getAttribute("data-state")).toBe("output-available");
      expect(await tool.locator(".tool-name").innerText()).toBe(call!.name);
      expect(JSON.parse(await tool.locator(".tool-input").innerText())).toEqual(call!.args);
      expect(await tool.locator(".tool-output").innerText()).toBe(output!.trim());
      const ownText = own.messages.filter((m) => m.role === "assistant").map((m) => m.content ?? "").join("");
      expect((await reply.locator(".text").allInnerTexts()).join("")).toBe(ownText);
      await screenshot(page, "aisdk-use-chat");
    } finally {
      await page.close();
    }
  });
});
