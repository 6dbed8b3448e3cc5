import { inject } from "vitest";

import { Wick, type WickOptions } from "../src/index.js";
import { TOKENS } from "./fixtures.js";

/** The suite's REST API. */
export const url = inject("wickUrl");

/** client is a Wick client of the suite acting as user. */
export function client(user: keyof typeof TOKENS, options: Partial<WickOptions> = {}): Wick {
  return new Wick({ baseUrl: url, token: TOKENS[user], ...options });
}

/** userMessage is the input of a run. */
export function userMessage(content: string) {
  return { messages: [{ role: "user", content }] };
}
