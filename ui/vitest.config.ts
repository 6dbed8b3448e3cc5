import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// Unit and component tests (jsdom). The browser tests against the real suite
// are vitest.e2e.config.ts.
export default defineConfig({
  plugins: [react()],
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.{ts,tsx}"],
  },
});
