// The token prompt, the error banner and the connection state.
import { X } from "lucide-react";
import { useState } from "react";

import type { ConnState } from "../api/client";

interface TokenProps {
  /** Why the token is asked for (again), if it is: a refused one says so. */
  reason: string | undefined;
  /** Tries the token; the dialog stays, busy, until it settles. */
  onSubmit(token: string): Promise<void>;
}

export function TokenDialog({ reason, onSubmit }: TokenProps) {
  const [token, setToken] = useState("");
  const [busy, setBusy] = useState(false);
  return (
    <div className="overlay">
      <form
        className="card dialog"
        role="dialog"
        aria-modal="true"
        aria-labelledby="token-title"
        data-testid="token-dialog"
        onSubmit={(e) => {
          e.preventDefault();
          if (!token.trim() || busy) return;
          setBusy(true);
          void onSubmit(token.trim()).finally(() => setBusy(false));
        }}
      >
        <h2 id="token-title">Sign in to Wick</h2>
        <p className="muted">
          This gateway requires an access token (one of its <code>-tokens</code>). It is kept in this tab only.
        </p>
        {reason && (
          <p className="danger small" role="alert">
            {reason}
          </p>
        )}
        <input data-testid="token-input" type="password" autoComplete="current-password" aria-label="Access token" placeholder="Access token" value={token} onChange={(e) => setToken(e.target.value)} autoFocus />
        <button type="submit" className="primary" data-testid="token-submit" disabled={token.trim() === "" || busy}>
          {busy ? "Checking…" : "Continue"}
        </button>
      </form>
    </div>
  );
}

export function ErrorBanner({ errors, onDismiss }: { errors: string[]; onDismiss(): void }) {
  if (errors.length === 0) return null;
  const last = errors[errors.length - 1];
  return (
    <div className="error-banner" role="alert" data-testid="error-banner">
      <span className="grow">
        {last}
        {errors.length > 1 && <span className="small"> (and {errors.length - 1} earlier)</span>}
      </span>
      <button type="button" className="icon" aria-label="Dismiss the errors" title="Dismiss the errors" data-testid="error-dismiss" onClick={onDismiss}>
        <X size={16} aria-hidden="true" />
      </button>
    </div>
  );
}

const CONN_LABEL: Record<ConnState, string> = { connected: "connected", reconnecting: "reconnecting…", offline: "offline" };

export function ConnectionState({ state }: { state: ConnState }) {
  return (
    <span className={`conn conn-${state}`} data-testid="connection-state" data-state={state} role="status" aria-live="polite" title={`Connection: ${CONN_LABEL[state]}`}>
      <span className={`dot dot-${state}`} aria-hidden="true" />
      <span className="conn-label">{CONN_LABEL[state]}</span>
    </span>
  );
}
