import { expect, inject } from "vitest";

import { Wick, WickError, type WickOptions } from "../src/index.js";
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

/** failure awaits p and returns the WickError it fails with. */
export async function failure(p: Promise<unknown>): Promise<WickError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WickError);
  return err as WickError;
}
