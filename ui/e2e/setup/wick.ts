// Starts the suites every browser test file reaches: one on the local
// backend and, when a Docker engine answers (always under CI=true), one on
// Docker, both serving the built UI (ui/dist). Stopped when the run ends.
import { rm } from "node:fs/promises";
import path from "node:path";

import type { TestProject } from "vitest/node";

import { DEFAULT_MODEL, ORG, SCRIPTS, agentsFor, newUsers } from "../fixtures.js";
import { ACP_AGENT_BIN, buildBinaries, dockerAnswers, requireDist, startSuite, type StartedSuite } from "../harness/suite.mjs";

/** A suite as the tests see it. */
export interface SuiteInfo {
  backend: "local" | "docker";
  url: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    /** The suites under test, local first. */
    suites: SuiteInfo[];
    /** The users, with their names and tokens. */
    users: ReturnType<typeof newUsers>;
    /** The static ACP test agent, which the tests upload into an ACP agent's sandbox. */
    acpAgentBin: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await requireDist();
  const docker = await dockerAnswers();
  if (!docker && process.env.CI === "true") {
    throw new Error("no Docker engine answers, and under CI=true the browser tests must run on Docker too (scripts/test-deps.sh starts one)");
  }
  if (!docker) console.warn("e2e: no Docker engine answers: the browser tests run on the local backend only");
  const users = newUsers();
  const tokens = Object.fromEntries(Object.values(users).map((u) => [u.name, u.token]));
  const orgs = Object.fromEntries(Object.values(users).map((u) => [u.name, [ORG]]));
  const binDir = await buildBinaries({ docker, acpAgent: true });
  const started: StartedSuite[] = [];
  const teardown = async () => {
    await Promise.all(started.map((s) => s.stop()));
    await rm(binDir, { recursive: true, force: true });
  };
  try {
    const backends = docker ? (["local", "docker"] as const) : (["local"] as const);
    const results = await Promise.allSettled(
      backends.map((backend) => startSuite({ binDir, backend, users: tokens, orgs, scripts: SCRIPTS, agents: agentsFor(backend), model: DEFAULT_MODEL })),
    );
    for (const r of results) if (r.status === "fulfilled") started.push(r.value);
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
    project.provide("suites", started.map(({ backend, url }) => ({ backend, url })));
    project.provide("users", users);
    project.provide("acpAgentBin", path.join(binDir, ACP_AGENT_BIN));
  } catch (err) {
    await teardown();
    throw err;
  }
  return teardown;
}
