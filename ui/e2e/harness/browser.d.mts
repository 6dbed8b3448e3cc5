// Types of browser.mjs.
import type { Browser } from "playwright-core";

export const chromiumPath: string;
export function launchChromium(): Promise<Browser>;
