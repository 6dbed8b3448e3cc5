import { expect, test } from "vitest";
import WebSocket from "ws";

import { Wick, WickError } from "../src/index.js";
import { client, url } from "./helpers.js";

const alice = client("alice", { WebSocket });

test("terminal echo and exit code", async () => {
  let out = "";
  let echoed!: () => void;
  const sawEcho = new Promise<void>((resolve) => (echoed = resolve));
  const decoder = new TextDecoder();
  const term = await alice.terminal("default", {
    rows: 30,
    cols: 100,
    onData: (chunk) => {
      out += decoder.decode(chunk, { stream: true });
      if (out.includes("sdk-42")) echoed();
    },
  });
  term.resize(40, 120);
  // The shell computes 42, so the echo of the typed line does not match.
  term.write("echo sdk-$((40+2))\n");
  await sawEcho;
  term.write(new TextEncoder().encode("exit 7\n"));
  await expect(term.closed).resolves.toMatchObject({ exitCode: 7, closeCode: 1000 });
});

test("terminal errors", async () => {
  await expect(alice.terminal("no-such-agent")).rejects.toMatchObject({ status: 404, code: "NOT_FOUND" });
  const stranger = new Wick({ baseUrl: url, token: "not-a-token", WebSocket });
  await expect(stranger.terminal("default")).rejects.toBeInstanceOf(WickError);
  await expect(alice.terminal("default", { rows: 0 })).rejects.toThrow(RangeError);
});

test("closing the terminal ends the session normally", async () => {
  const term = await alice.terminal("default");
  term.close();
  await expect(term.closed).resolves.toMatchObject({ closeCode: 1000, exitCode: undefined });
});
