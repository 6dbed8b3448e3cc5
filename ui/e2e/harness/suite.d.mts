// Types of suite.mjs.

/** A started suite. */
export interface StartedSuite {
  backend: "local" | "docker";
  /** The REST API and the UI, e.g. "http://127.0.0.1:41234". */
  url: string;
  /** Stops it (SIGTERM), removes its users' containers and its files. */
  stop(): Promise<void>;
}

export interface SuiteOptions {
  /** From buildBinaries. */
  binDir: string;
  backend: "local" | "docker";
  /** User name → bearer token. */
  users: Record<string, string>;
  /** User name → the organisations whose knowledge collections they share (-knowledge-orgs). */
  orgs?: Record<string, string[]>;
  /** Script files (llmgw's script format) by name, for script:<name> models. */
  scripts: Record<string, unknown>;
  /** agents.yaml's agents by id. */
  agents: Record<string, unknown>;
  /** The default agent's model, e.g. "script:tools". */
  model: string;
  logLevel?: string;
}

export const uiDir: string;
export const repoRoot: string;
export const distDir: string;
export function requireDist(): Promise<void>;
/** The ACP test agent's file name in buildBinaries' directory. */
export const ACP_AGENT_BIN: string;
export function buildBinaries(opts: { docker: boolean; acpAgent?: boolean }): Promise<string>;
export function dockerAnswers(): Promise<boolean>;
export function startSuite(opts: SuiteOptions): Promise<StartedSuite>;
