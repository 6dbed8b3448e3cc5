// The Terminal panel: xterm.js over the SDK's WebSocket terminal, fitted to
// the panel. Loaded lazily (React.lazy) when the tab is first shown, with
// xterm's code and CSS; it stays mounted afterwards so that switching tabs
// keeps the session.
import "@xterm/xterm/css/xterm.css";

import { FitAddon } from "@xterm/addon-fit";
import { Terminal as XTerm, type ITheme } from "@xterm/xterm";
import type { Terminal as WickTerminal, Wick } from "@wick-agent/sdk";
import { useEffect, useRef, useState } from "react";


/** The most input held while the terminal connects (a paste, not a file). */
const MAX_PENDING_INPUT = 64 << 10;
export interface TerminalPanelProps {
  client: Wick;
  agentId: string;
  onError: (err: unknown) => void;
}

/** Where the session is: connecting, open, or over (with how it ended). */
export type TerminalStatus =
  | { state: "connecting" }
  | { state: "open" }
  | { state: "closed"; message: string };

// The terminal's colours from the theme's variables, read when it opens
// and when the colour scheme changes.
function themeOf(): ITheme {
  const css = getComputedStyle(document.documentElement);
  const v = (name: string) => css.getPropertyValue(name).trim();
  return {
    background: v("--code-bg"),
    foreground: v("--fg"),
    cursor: v("--fg"),
    cursorAccent: v("--code-bg"),
    selectionBackground: v("--border"),
  };
}

/** closedMessage says in words how a session ended. */
export function closedMessage(exit: { exitCode: number | undefined; reason: string }): string {
  if (exit.exitCode !== undefined) return `The shell exited with code ${exit.exitCode}.`;
  return exit.reason ? `The terminal closed: ${exit.reason}.` : "The terminal closed.";
}

export default function TerminalPanel({ client, agentId, onError }: TerminalPanelProps) {
  const host = useRef<HTMLDivElement>(null);
  const xterm = useRef<XTerm | null>(null);
  const fit = useRef<FitAddon | null>(null);
  const session = useRef<WickTerminal | null>(null);
  // Keys typed while the socket opens, sent once it is open; null when
  // nothing is opening (typing into a closed terminal goes nowhere).
  const pending = useRef<{ data: (string | Uint8Array)[]; bytes: number } | null>(null);
  const send = (d: string | Uint8Array) => {
    if (session.current) return session.current.write(d);
    const p = pending.current;
    if (!p || p.bytes + d.length > MAX_PENDING_INPUT) return;
    p.data.push(d);
    p.bytes += d.length;
  };
  const [status, setStatus] = useState<TerminalStatus>({ state: "connecting" });
  // Bumped by Reconnect: a new session in the same xterm.
  const [attempt, setAttempt] = useState(0);
  const errors = useRef(onError);
  errors.current = onError;

  // The xterm lives as long as the panel; sessions come and go in it.
  useEffect(() => {
    if (!host.current) return;
    const term = new XTerm({
      cursorBlink: true,
      fontFamily: getComputedStyle(document.documentElement).getPropertyValue("--mono").trim() || "monospace",
      fontSize: 13,
      scrollback: 5000,
      theme: themeOf(),
    });
    const fitAddon = new FitAddon();
    term.loadAddon(fitAddon);
    term.open(host.current);
    xterm.current = term;
    fit.current = fitAddon;

    const refit = () => {
      // A hidden panel (another tab shown) has no size: keep the last one.
      const el = host.current;
      if (!el || el.clientWidth === 0 || el.clientHeight === 0) return;
      fitAddon.fit();
    };
    refit();
    const observer = new ResizeObserver(refit);
    observer.observe(host.current);
    // xterm reports its new size after fit(); the shell learns it too.
    const resized = term.onResize(({ rows, cols }) => session.current?.resize(rows, cols));
    const typed = term.onData((s) => send(s));
    // Some mouse reports are binary strings (one byte per character).
    const binary = term.onBinary((s) => send(Uint8Array.from(s, (c) => c.charCodeAt(0) & 0xff)));

    const media = window.matchMedia?.("(prefers-color-scheme: dark)");
    const onScheme = () => {
      term.options.theme = themeOf();
    };
    media?.addEventListener?.("change", onScheme);
    return () => {
      media?.removeEventListener?.("change", onScheme);
      observer.disconnect();
      resized.dispose();
      typed.dispose();
      binary.dispose();
      term.dispose();
      xterm.current = null;
      fit.current = null;
    };
  }, []);

  useEffect(() => {
    const term = xterm.current;
    if (!term) return;
    const abort = new AbortController();
    let open: WickTerminal | null = null;
    setStatus({ state: "connecting" });
    pending.current = { data: [], bytes: 0 };
    client
      .terminal(agentId, {
        rows: term.rows,
        cols: term.cols,
        onData: (bytes) => term.write(bytes),
        signal: abort.signal,
      })
      .then(
        (t) => {
          if (abort.signal.aborted) {
            t.close();
            return;
          }
          open = t;
          session.current = t;
          // What was typed while the socket opened goes first.
          for (const d of pending.current?.data ?? []) t.write(d);
          pending.current = null;
          setStatus({ state: "open" });
          term.focus();
          // The panel may have been resized while the socket opened.
          t.resize(term.rows, term.cols);
          return t.closed.then(
            (exit) => {
              if (abort.signal.aborted) return;
              const message = closedMessage(exit);
              term.write(`\r\n\x1b[2m[${message}]\x1b[0m\r\n`);
              setStatus({ state: "closed", message });
            },
            (err: unknown) => {
              if (abort.signal.aborted) return;
              setStatus({ state: "closed", message: `The terminal connection was lost: ${errorText(err)}` });
              errors.current(err);
            },
          );
        },
        (err: unknown) => {
          pending.current = null;
          if (abort.signal.aborted) return;
          setStatus({ state: "closed", message: `The terminal did not open: ${errorText(err)}` });
          errors.current(err);
        },
      )
      .finally(() => {
        if (session.current === open) session.current = null;
      });
    return () => {
      pending.current = null;
      abort.abort();
      open?.close();
      if (session.current === open) session.current = null;
    };
  }, [client, agentId, attempt]);

  return (
    <div className="wp-terminal" data-testid="terminal" data-state={status.state}>
      {status.state !== "open" && (
        <div className="wp-terminal-status" role="status" data-testid="terminal-status">
          <span>{status.state === "connecting" ? "Connecting…" : status.message}</span>
          {status.state === "closed" && (
            <button type="button" className="wp-button" data-testid="terminal-reconnect" onClick={() => setAttempt((n) => n + 1)}>
              Reconnect
            </button>
          )}
        </div>
      )}
      <div ref={host} className="wp-terminal-screen" />
    </div>
  );
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
