import { inject } from "vitest";

import { TOKENS } from "./fixtures.js";

/** The suite's REST API, e.g. "http://127.0.0.1:41234". */
export const url = inject("wickUrl");

/** token is the bearer token of a user of the suite. */
export function token(user: keyof typeof TOKENS): string {
  return TOKENS[user];
}

/** headers are a user's request headers. */
export function headers(user: keyof typeof TOKENS): Record<string, string> {
  return { Authorization: `Bearer ${TOKENS[user]}` };
}
