// useDelayedDelete holds a deletion back for a few seconds so that it can be
// undone. Nothing is deleted until the delay ends: a page that closes or
// crashes before then sends no deletion, so the thread is kept.
import { useCallback, useEffect, useRef, useState } from "react";

/** How long a deletion waits, undoable, before it is sent. */
export const UNDO_DELAY_MS = 5_000;

export interface DelayedDelete {
  /** The ids whose deletion waits. */
  pending: ReadonlySet<string>;
  schedule(id: string): void;
  undo(id: string): void;
}

/** commit sends the deletion; its failure is the caller's to report (the id is listed again). */
export function useDelayedDelete(commit: (id: string) => Promise<void>, delayMs = UNDO_DELAY_MS): DelayedDelete {
  const [pending, setPending] = useState<ReadonlySet<string>>(new Set());
  const timers = useRef(new Map<string, ReturnType<typeof setTimeout>>());
  const commitRef = useRef(commit);
  commitRef.current = commit;

  const drop = useCallback((id: string) => {
    setPending((p) => {
      if (!p.has(id)) return p;
      const next = new Set(p);
      next.delete(id);
      return next;
    });
  }, []);

  const schedule = useCallback(
    (id: string) => {
      if (timers.current.has(id)) return;
      setPending((p) => new Set(p).add(id));
      timers.current.set(
        id,
        setTimeout(() => {
          timers.current.delete(id);
          void commitRef.current(id).finally(() => drop(id));
        }, delayMs),
      );
    },
    [delayMs, drop],
  );

  const undo = useCallback(
    (id: string) => {
      clearTimeout(timers.current.get(id));
      timers.current.delete(id);
      drop(id);
    },
    [drop],
  );

  // Leaving the page (or this list) sends nothing: the threads are kept.
  useEffect(() => {
    const all = timers.current;
    return () => {
      for (const t of all.values()) clearTimeout(t);
      all.clear();
    };
  }, []);

  return { pending, schedule, undo };
}
