import { defineConfig } from "vitest/config";

// Browser tests: Chromium (playwright-core, never downloaded) drives the
// built UI served by the real suite, on the local backend and on Docker.
// e2e/setup/wick.ts builds cmd/wick and starts the suites once for every
// file; the files run in parallel, each with its own browser.
export default defineConfig({
  test: {
    environment: "node",
    include: ["e2e/**/*.test.ts"],
    globalSetup: ["e2e/setup/wick.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // A poll waits on the browser and the suite, whose answers take longer
    // than the default second on a busy machine.
    expect: { poll: { timeout: 15_000 } },
    // The tests mostly wait on the browser and the suite, not the CPU.
    pool: "forks",
    poolOptions: { forks: { maxForks: 4, minForks: 1 } },
  },
});
