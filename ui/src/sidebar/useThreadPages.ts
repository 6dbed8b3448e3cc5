// useThreadPages reads the open agent's threads a page at a time
// (ListThreads with page_size and page_token), newest first, and searches
// them on the server by title (ListThreads' query), so that a search finds
// threads of pages not read yet. refresh reads the first page again and
// merges it in: a thread saved since moves to the front, and the pages read
// further keep their threads (the server's paging neither repeats nor skips
// a thread that was not saved in between).
import type { Wick } from "@wick-agent/sdk";
import { useCallback, useEffect, useRef, useState } from "react";

import type { ThreadSummary } from "./Threads";

/** How many threads one page asks for (the server's default; at most 200). */
export const THREAD_PAGE_SIZE = 50;
/** How long the search waits after a key before it asks the server. */
export const SEARCH_DELAY_MS = 250;

export interface ThreadPages {
  /** The threads read so far, newest first. */
  threads: ThreadSummary[];
  /** The agent (and search) whose first page `threads` holds, once read. */
  loadedFor: { agentId: string; query: string } | undefined;
  /** More pages are left to read. */
  hasMore: boolean;
  /** A page is being read. */
  loading: boolean;
  /** loadMore reads the next page, unless one is being read. */
  loadMore(): void;
  /** refresh reads the first page again and merges it in. */
  refresh(): Promise<void>;
  /** search sets the title search (every word, any case), asked after SEARCH_DELAY_MS. */
  search(query: string): void;
  /** change applies a change to the threads read (a rename, a deletion). */
  change(f: (ts: ThreadSummary[]) => ThreadSummary[]): void;
}

/**
 * mergePage puts a page's threads among those read, each thread once. A
 * first page read again goes first (it holds the newest threads); a next
 * page goes last. A thread the page has replaces the copy read before.
 */
export function mergePage(read: readonly ThreadSummary[], page: readonly ThreadSummary[], first: boolean): ThreadSummary[] {
  const ids = new Set(page.map((t) => t.thread_id));
  const rest = read.filter((t) => !ids.has(t.thread_id));
  return first ? [...page, ...rest] : [...rest, ...page];
}

export function useThreadPages(client: Wick | undefined, agentId: string | undefined, onError: (err: unknown) => void): ThreadPages {
  const [threads, setThreads] = useState<ThreadSummary[]>([]);
  const [loadedFor, setLoadedFor] = useState<ThreadPages["loadedFor"]>();
  const [next, setNext] = useState<string>();
  const [loading, setLoading] = useState(false);
  const [query, setQuery] = useState("");
  // Answers of an earlier agent or search are dropped.
  const gen = useRef(0);
  const busy = useRef(false);
  const nextRef = useRef<string | undefined>(undefined);
  nextRef.current = next;
  const onErrorRef = useRef(onError);
  onErrorRef.current = onError;

  const page = useCallback(
    async (token: string | undefined) => {
      if (!client || !agentId) return undefined;
      const q = query.trim();
      const { data } = await client.api.GET("/threads", {
        params: { query: { agent_id: agentId, page_size: THREAD_PAGE_SIZE, ...(token ? { page_token: token } : {}), ...(q ? { query: q } : {}) } },
      });
      return { threads: data?.threads ?? [], next: data?.next_page_token || undefined, q };
    },
    [client, agentId, query],
  );

  // A new agent or search starts from the first page.
  useEffect(() => {
    const myGen = ++gen.current;
    busy.current = false;
    setThreads([]);
    setNext(undefined);
    setLoadedFor(undefined);
    if (!client || !agentId) return;
    busy.current = true;
    setLoading(true);
    page(undefined)
      .then((p) => {
        if (!p || gen.current !== myGen) return;
        setThreads(p.threads);
        setNext(p.next);
        setLoadedFor({ agentId, query: p.q });
      })
      .catch((err: unknown) => {
        if (gen.current === myGen) onErrorRef.current(err);
      })
      .finally(() => {
        if (gen.current !== myGen) return;
        busy.current = false;
        setLoading(false);
      });
  }, [client, agentId, page]);

  const loadMore = useCallback(() => {
    const token = nextRef.current;
    if (!token || busy.current) return;
    const myGen = gen.current;
    busy.current = true;
    setLoading(true);
    page(token)
      .then((p) => {
        if (!p || gen.current !== myGen) return;
        setThreads((ts) => mergePage(ts, p.threads, false));
        setNext(p.next);
      })
      .catch((err: unknown) => {
        if (gen.current === myGen) onErrorRef.current(err);
      })
      .finally(() => {
        if (gen.current !== myGen) return;
        busy.current = false;
        setLoading(false);
      });
  }, [page]);

  const refresh = useCallback(async () => {
    const myGen = gen.current;
    try {
      const p = await page(undefined);
      if (!p || gen.current !== myGen) return;
      setThreads((ts) => mergePage(ts, p.threads, true));
      // The list had ended: it may go on now (a page read again is merged, each thread once).
      setNext((n) => n ?? p.next);
    } catch (err) {
      if (gen.current === myGen) onErrorRef.current(err);
    }
  }, [page]);

  // The search is asked once typing pauses.
  const timer = useRef<ReturnType<typeof setTimeout>>(undefined);
  const search = useCallback((q: string) => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => setQuery(q), SEARCH_DELAY_MS);
  }, []);
  useEffect(() => () => clearTimeout(timer.current), []);

  const change = useCallback((f: (ts: ThreadSummary[]) => ThreadSummary[]) => setThreads(f), []);

  return { threads, loadedFor, hasMore: next !== undefined, loading, loadMore, refresh, search, change };
}
