// Builds cmd/wick from this repository and starts the whole suite on free
// loopback ports for every test file to reach over HTTP: scripted models
// from test/scripts/<name>.json (the model "script:<name>"), agent
// templates from test/agents/<id>.json ("{{clients_dir}}" in them reads as
// this package's directory, where node_modules holds the MCP reference
// servers), and the users of fixtures.ts.
// Stopped (SIGTERM) when the run ends.
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { copyFile, mkdtemp, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import type { TestProject } from "vitest/node";

import { ORG, TOKENS } from "../fixtures.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const clientsDir = path.resolve(here, "../..");
const repoRoot = path.resolve(clientsDir, "../..");
/** How long the suite may take to print its address. */
const START_TIMEOUT_MS = 60_000;
/** How long it may take to stop on SIGTERM before it is killed. */
const STOP_TIMEOUT_MS = 15_000;

declare module "vitest" {
  export interface ProvidedContext {
    /** The suite's REST API, e.g. "http://127.0.0.1:41234". */
    wickUrl: string;
    /**
     * The origin a test serves its browser pages from, e.g.
     * "http://127.0.0.1:41235": the suite allows it (-cors-origins), and
     * its port was free when the suite started.
     */
    pageOrigin: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Short: the sandbox service puts unix sockets under its state directory.
  const dir = await mkdtemp(path.join(tmpdir(), "wcli-"));
  let child: ChildProcess | undefined;
  const teardown = async () => {
    if (child) await stop(child);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const bin = path.join(dir, "wick");
    await promisify(execFile)("go", ["build", "-o", bin, "./cmd/wick"], { cwd: repoRoot });

    const scriptDir = path.join(dir, "scripts");
    await mkdir(scriptDir);
    for (const f of await jsonFiles(path.join(here, "../scripts"))) {
      await copyFile(path.join(here, "../scripts", f), path.join(scriptDir, f.replace(/\.json$/, "")));
    }
    const agents: Record<string, unknown> = {};
    for (const f of await jsonFiles(path.join(here, "../agents"))) {
      const text = (await readFile(path.join(here, "../agents", f), "utf8")).replaceAll("{{clients_dir}}", clientsDir);
      agents[f.replace(/\.json$/, "")] = JSON.parse(text);
    }
    // agents.yaml is YAML; JSON is YAML.
    const agentsFile = path.join(dir, "agents.yaml");
    await writeFile(agentsFile, JSON.stringify({ agents }));
    const stateDir = path.join(dir, "state");
    await mkdir(stateDir);

    const addr = "127.0.0.1:0";
    const pageOrigin = `http://127.0.0.1:${await freePort()}`;
    const args = [
      ...["-http-addr", addr, "-gateway-grpc-addr", addr, "-agent-addr", addr, "-sandbox-addr", addr, "-llm-addr", addr],
      ...["-sandbox", "local", "-allow-local", "-sandbox-state-dir", stateDir],
      ...["-tokens", Object.entries(TOKENS).map(([user, token]) => `${token}:${user}`).join(",")],
      ...["-knowledge-orgs", Object.keys(TOKENS).map((user) => `${user}=${ORG}`).join(",")],
      ...["-script-dir", scriptDir, "-model", "script:echo", "-agents-file", agentsFile],
      ...["-operator-users", "operator"],
      // Pages a test renders in a browser call the API cross-origin.
      ...["-cors-origins", pageOrigin],
      // MCP servers over streamable HTTP that a test starts on loopback;
      // stdio MCP servers run by local sandboxes from this package's
      // node_modules, which Landlock lets them read only when listed.
      ...["-tool-allow-nets", "127.0.0.0/8", "-local-read-only", path.join(clientsDir, "node_modules")],
      ...["-log-level", "warn"],
    ];
    // Only what a process needs: WICK_* variables (and provider keys) of
    // the developer's shell would change the suite under test.
    const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? dir, TMPDIR: tmpdir() };
    child = spawn(bin, args, { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
    project.provide("wickUrl", await restURL(child));
    project.provide("pageOrigin", pageOrigin);
  } catch (err) {
    await teardown();
    throw err;
  }
  return teardown;
}

// freePort is a loopback port nothing listens on now; the suite starts
// before any test file, so the page server's origin is fixed here.
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (addr && typeof addr === "object" ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

async function jsonFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f.endsWith(".json")).sort();
}

// restURL waits for the line "REST API   http://…" that wick prints once
// every service listens.
function restURL(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    let errOut = "";
    const timer = setTimeout(() => fail(new Error(`wick printed no REST API address within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    const fail = (err: Error) => {
      clearTimeout(timer);
      reject(new Error(`${err.message}\nstdout:\n${out}\nstderr:\n${errOut.slice(-4000)}`));
    };
    child.stderr?.on("data", (b: Buffer) => {
      errOut += b.toString();
    });
    child.stdout?.on("data", (b: Buffer) => {
      out += b.toString();
      const m = /REST API\s+(http:\/\/\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once("error", fail);
    child.once("exit", (code, signal) => fail(new Error(`wick exited (${code ?? signal}) before it printed its address`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}
