import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Builds cmd/wick and starts the suite once for every test file.
    globalSetup: ["test/setup/wick.ts"],
    testTimeout: 30_000,
  },
});
