// Launches Debian's Chromium through playwright-core, which never downloads
// a browser: CHROMIUM_PATH, else /usr/bin/chromium (scripts/test-deps.sh
// installs it).
import { access } from "node:fs/promises";

import { chromium } from "playwright-core";

export const chromiumPath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";

/**
 * Starts a headless Chromium. Playwright gives every launch a fresh profile
 * (its own temporary --user-data-dir), so nothing carries over between runs.
 */
export async function launchChromium() {
  try {
    await access(chromiumPath);
  } catch {
    throw new Error(`no Chromium at ${chromiumPath}: run scripts/test-deps.sh (Debian: apt-get install chromium) or set CHROMIUM_PATH`);
  }
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      "--disable-dev-shm-usage",
    ],
  });
}
