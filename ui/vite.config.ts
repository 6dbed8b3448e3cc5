import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// `npm run dev` serves the UI with hot reload and sends the API to a running
// suite (make run): WICK_URL, default http://127.0.0.1:8000.
const target = process.env.WICK_URL ?? "http://127.0.0.1:8000";
const api = ["/agents", "/runs", "/threads", "/health", "/openapi.json", "/v1", "/metrics"];

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "dist",
    // The gateway serves assets/ with a year-long immutable cache: names carry a hash.
    assetsDir: "assets",
    sourcemap: false,
    chunkSizeWarningLimit: 1024,
  },
  server: {
    proxy: Object.fromEntries(api.map((p) => [p, { target, changeOrigin: true, ws: p === "/agents" }])),
  },
});
