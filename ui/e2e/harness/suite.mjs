// Starts the real suite for the browser tests and the performance script:
// builds cmd/wick from this repository and runs it on free loopback ports
// with scripted models, the given users' tokens and organisations, agents
// and the built UI.
// Plain JavaScript (typed by suite.d.mts) so that scripts/perf.mjs runs it
// with Node alone.
import { execFile, spawn } from "node:child_process";
import { access, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

export const uiDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const repoRoot = path.resolve(uiDir, "..");
/** The UI build the suites serve: ui/dist, or WICK_UI_DIST (another build). */
export const distDir = process.env.WICK_UI_DIST ? path.resolve(process.env.WICK_UI_DIST) : path.join(uiDir, "dist");

/** How long a suite may take to print its addresses. */
const START_TIMEOUT_MS = 90_000;
/** How long it may take to stop on SIGTERM before it is killed. */
const STOP_TIMEOUT_MS = 15_000;
/** How long `docker version` may take to say whether an engine answers. */
const DOCKER_PROBE_TIMEOUT_MS = 10_000;
/** Docker's label for the user a sandbox container belongs to. */
const USER_LABEL = "wick.user";

/** Fails with what to do when the UI is not built. */
export async function requireDist() {
  try {
    await access(path.join(distDir, "index.html"));
  } catch {
    throw new Error(`no UI build at ${distDir}: run \`make ui\` (or \`npm run build\` in ui/) first`);
  }
}

/** The ACP test agent's package (docs/acp.md), built by buildBinaries({acpAgent: true}). */
const ACP_AGENT_PKG = "./services/agent/internal/acp/acptest/acp-test-agent";
/** The name buildBinaries gives the ACP test agent in its directory. */
export const ACP_AGENT_BIN = "acp-test-agent";

/**
 * Builds wick (and, for Docker, the static wick-daemon and wickfs; with
 * acpAgent, the static ACP test agent, which is uploaded into sandboxes of
 * either backend) into a new temporary directory.
 */
export async function buildBinaries({ docker, acpAgent = false }) {
  // Short: the sandbox service puts unix sockets under its state directory.
  const dir = await mkdtemp(path.join(tmpdir(), "wui-"));
  const builds = [run("go", ["build", "-o", path.join(dir, "wick"), "./cmd/wick"], { cwd: repoRoot })];
  const statics = [
    ...(docker ? ["./daemon/cmd/wick-daemon", "./wickfs/cmd/wickfs"] : []),
    ...(acpAgent ? [ACP_AGENT_PKG] : []),
  ];
  if (statics.length > 0) {
    // Static: they run inside containers, whatever libc the image has.
    const env = { ...process.env, CGO_ENABLED: "0" };
    builds.push(run("go", ["build", "-trimpath", "-o", dir + "/", ...statics], { cwd: repoRoot, env }));
  }
  try {
    await Promise.all(builds);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return dir;
}

/** Whether a Docker engine answers (the docker CLI talks to it). */
export async function dockerAnswers() {
  try {
    await run("docker", ["version", "--format", "{{.Server.APIVersion}}"], { timeout: DOCKER_PROBE_TIMEOUT_MS });
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts one suite. backend "local" confines sandboxes to this host;
 * "docker" runs them in containers (the suite picks Docker in auto mode and
 * builds its busybox image when no other image is there).
 */
export async function startSuite({ binDir, backend, users, orgs = {}, scripts, agents, model, logLevel = "warn" }) {
  const dir = await mkdtemp(path.join(tmpdir(), `wui-${backend}-`));
  const scriptDir = path.join(dir, "scripts");
  await mkdir(scriptDir);
  for (const [name, script] of Object.entries(scripts)) {
    await writeFile(path.join(scriptDir, name), JSON.stringify(script));
  }
  // agents.yaml is YAML; JSON is YAML.
  const agentsFile = path.join(dir, "agents.yaml");
  await writeFile(agentsFile, JSON.stringify({ agents }));
  const stateDir = path.join(dir, "state");
  await mkdir(stateDir);

  const addr = "127.0.0.1:0";
  const args = [
    ...["-http-addr", addr, "-gateway-grpc-addr", addr, "-agent-addr", addr, "-sandbox-addr", addr, "-llm-addr", addr],
    ...["-sandbox-state-dir", stateDir, "-ui-dir", distDir],
    ...["-tokens", Object.entries(users).map(([user, token]) => `${token}:${user}`).join(",")],
    ...["-knowledge-orgs", Object.entries(orgs).map(([user, names]) => `${user}=${names.join("+")}`).join(",")],
    ...["-script-dir", scriptDir, "-model", model, "-agents-file", agentsFile],
    ...["-log-level", logLevel],
    ...(backend === "local" ? ["-sandbox", "local", "-allow-local"] : ["-sandbox", "auto"]),
  ];
  // Only what a process needs: WICK_* variables (and provider keys) of the
  // developer's shell would change the suite under test.
  const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? dir, TMPDIR: tmpdir() };
  if (process.env.DOCKER_HOST) env.DOCKER_HOST = process.env.DOCKER_HOST;
  if (backend === "docker") {
    env.WICK_DAEMON_BIN = path.join(binDir, "wick-daemon");
    env.WICK_WICKFS_BIN = path.join(binDir, "wickfs");
  }
  const child = spawn(path.join(binDir, "wick"), args, { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
  const stop = async () => {
    await stopChild(child);
    if (backend === "docker") await removeContainers(Object.keys(users));
    await unmountUnder(dir);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const out = await banner(child);
    const url = /REST API\s+(http:\/\/\S+)/.exec(out)?.[1];
    const got = /^\s+sandbox\s+(\S+)\s*$/m.exec(out)?.[1];
    if (!url) throw new Error(`wick printed no REST API address:\n${out}`);
    if (got !== backend) throw new Error(`wick chose the ${got} sandbox backend, not ${backend}:\n${out}`);
    return { backend, url, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

// banner waits for wick's summary, whose last line starts with "Try:".
function banner(child) {
  return new Promise((resolve, reject) => {
    let out = "";
    let errOut = "";
    const timer = setTimeout(() => fail(new Error(`wick printed no addresses within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    const fail = (err) => {
      clearTimeout(timer);
      reject(new Error(`${err.message}\nstdout:\n${out}\nstderr:\n${errOut.slice(-4000)}`));
    };
    child.stderr.on("data", (b) => {
      errOut += b.toString();
    });
    child.stdout.on("data", (b) => {
      out += b.toString();
      if (/\nTry: .*\n/.test(out)) {
        clearTimeout(timer);
        resolve(out);
      }
    });
    child.once("error", fail);
    child.once("exit", (code, signal) => fail(new Error(`wick exited (${code ?? signal}) before it printed its addresses`)));
  });
}

async function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

// unmountUnder detaches what the suite mounted below dir: the service keeps
// a workspace's filesystem image mounted while its container exists, and
// the containers went only now, after the service stopped.
async function unmountUnder(dir) {
  let info;
  try {
    info = await readFile("/proc/self/mountinfo", "utf8");
  } catch {
    return; // not Linux: nothing was mounted
  }
  // Field 5 is the mount point, with space, tab, newline and backslash
  // escaped as octal.
  const points = info
    .split("\n")
    .map((line) => line.split(" ")[4]?.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8))))
    .filter((p) => p && (p === dir || p.startsWith(dir + "/")))
    .sort((a, b) => b.length - a.length);
  for (const p of points) {
    try {
      await run("umount", ["-l", p]);
    } catch (err) {
      console.warn(`e2e: could not unmount ${p}: ${err}`);
    }
  }
}

// removeContainers removes the containers and volumes of the run's users:
// their names are unique to the run, so nothing else is touched.
async function removeContainers(users) {
  for (const user of users) {
    const filter = ["--filter", `label=${USER_LABEL}=${user}`];
    try {
      const { stdout: cs } = await run("docker", ["ps", "-aq", ...filter]);
      const ids = cs.split(/\s+/).filter(Boolean);
      if (ids.length) await run("docker", ["rm", "-f", ...ids]);
      const { stdout: vs } = await run("docker", ["volume", "ls", "-q", ...filter]);
      const vols = vs.split(/\s+/).filter(Boolean);
      if (vols.length) await run("docker", ["volume", "rm", "-f", ...vols]);
    } catch (err) {
      console.warn(`e2e: could not remove ${user}'s containers: ${err}`);
    }
  }
}
