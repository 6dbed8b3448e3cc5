// The open agent's threads, newest first and grouped by day, each with its
// status, when it was last saved and its title (the one the user gave it,
// else its first message); a search box filters them by title, and a row
// renames its thread in place. A deleted thread leaves a toast that can
// undo the deletion while it waits to be sent. The list is read a page at
// a time: the next is asked for as its end scrolls near (onMore), and the
// search is also asked of the server (onSearch), which finds threads of
// pages not read yet.
import type { components } from "@wick-agent/sdk";
import { Pencil, Trash2 } from "lucide-react";
import { useEffect, useMemo, useRef, useState } from "react";

import { DATE_GROUPS, dateGroup, fullTime, relativeTime, type DateGroup } from "../state/words";
import { SideHead } from "./SideHead";
import { ThreadTitleEditor } from "./ThreadTitleEditor";

export type ThreadSummary = components["schemas"]["wick.agent.v1.ThreadSummary"];
export type ThreadStatus = "idle" | "running" | "interrupted" | "error";

const STATUS_LABEL: Record<ThreadStatus, string> = {
  idle: "",
  running: "running",
  interrupted: "needs approval",
  error: "failed",
};

/** The status in full, for the badge's tooltip. */
const STATUS_TITLE: Record<ThreadStatus, string> = {
  idle: "",
  running: "a run is going",
  interrupted: "its run waits for approval of a tool call",
  error: "the last run failed",
};

/** How often the relative times are brought up to date. */
const CLOCK_TICK_MS = 30_000;
/** How close to the list's end (px) the next page is asked for. */
const MORE_MARGIN_PX = 200;

interface Props {
  threads: ThreadSummary[];
  selected: string | undefined;
  titles: Record<string, string>;
  statuses: Record<string, ThreadStatus>;
  /** Threads deleted on this page whose deletion can still be undone; they are not listed. */
  deleting?: ReadonlySet<string>;
  onSelect(threadId: string): void;
  onNew(): void;
  onDelete(threadId: string): void;
  onUndoDelete?(threadId: string): void;
  /** onRename stores a thread's new title; it throws when the server refuses it. Without it rows offer no rename. */
  onRename?(threadId: string, title: string): Promise<void>;
  /** onSearch asks the server for the threads whose titles match the search box (the rows shown are filtered at once as well). */
  onSearch?(query: string): void;
  /** onMore reads the next page; set while there is one. */
  onMore?(): void;
  /** A page is being read. */
  loadingMore?: boolean;
  /** The search (trimmed) the threads were read with, when onSearch is given; "" for none. */
  searched?: string;
}

export interface ThreadGroup {
  group: DateGroup;
  threads: ThreadSummary[];
}

/** updatedAt is when the thread was last saved; a thread not saved yet (just started) counts as now. */
export function updatedAt(t: ThreadSummary, now: Date): Date {
  const d = t.updated_at ? new Date(t.updated_at) : undefined;
  return d && !Number.isNaN(d.getTime()) ? d : now;
}

/** groupThreads puts threads in their date groups, in the list's order, leaving out empty groups. */
export function groupThreads(threads: readonly ThreadSummary[], now: Date): ThreadGroup[] {
  const by = new Map<DateGroup, ThreadSummary[]>();
  for (const t of threads) {
    const g = dateGroup(updatedAt(t, now), now);
    by.set(g, [...(by.get(g) ?? []), t]);
  }
  return DATE_GROUPS.filter((g) => by.has(g)).map((group) => ({ group, threads: by.get(group)! }));
}

/** matchesQuery: the title holds every word of the query, in any case. */
export function matchesQuery(title: string, query: string): boolean {
  const t = title.toLocaleLowerCase();
  return query
    .toLocaleLowerCase()
    .split(/\s+/)
    .filter((w) => w !== "")
    .every((w) => t.includes(w));
}

/**
 * shownTitles gives each thread its title and, when threads' first messages
 * are the same, the end of its id to tell them apart: it stays the same as
 * the thread changes (a number by position would move). Renaming a thread
 * is the user's way to tell it apart by its title.
 */
export function shownTitles(threads: readonly ThreadSummary[], titles: Record<string, string>): Record<string, { title: string; id?: string }> {
  const count = new Map<string, number>();
  for (const t of threads) {
    const title = titles[t.thread_id ?? ""];
    if (title) count.set(title, (count.get(title) ?? 0) + 1);
  }
  const out: Record<string, { title: string; id?: string }> = {};
  for (const t of threads) {
    const id = t.thread_id ?? "";
    const title = titles[id];
    out[id] = !title ? { title: `Thread ${id.slice(0, 8)}` } : (count.get(title) ?? 0) > 1 ? { title, id: shortId(id) } : { title };
  }
  return out;
}

/** shortId is the part of a thread id that tells it apart: its last characters (ids share a prefix). */
function shortId(id: string): string {
  return id.slice(-6);
}

/** useNow is the time, brought up to date every tick, so that "5 minutes ago" does not stay. */
function useNow(): Date {
  const [now, setNow] = useState(() => new Date());
  useEffect(() => {
    const t = setInterval(() => setNow(new Date()), CLOCK_TICK_MS);
    return () => clearInterval(t);
  }, []);
  return now;
}

/** scrollParent is the nearest ancestor of el that scrolls, or null (the viewport). */
function scrollParent(el: HTMLElement): HTMLElement | null {
  for (let p = el.parentElement; p; p = p.parentElement) {
    if (/(auto|scroll)/.test(getComputedStyle(p).overflowY)) return p;
  }
  return null;
}

/**
 * useMore calls onMore while the element ref is given is within
 * MORE_MARGIN_PX of its scrolling box. The observer is made again after
 * each page (busy false again), and a new observer reports at once: a page
 * that left the end in view is followed by the next without a scroll.
 */
function useMore(onMore: (() => void) | undefined, busy: boolean, rows: number) {
  const ref = useRef<HTMLLIElement>(null);
  useEffect(() => {
    const el = ref.current;
    if (!el || !onMore || busy || typeof IntersectionObserver === "undefined") return;
    const io = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && onMore(), {
      root: scrollParent(el),
      rootMargin: `${MORE_MARGIN_PX}px`,
    });
    io.observe(el);
    return () => io.disconnect();
  }, [onMore, busy, rows]);
  return ref;
}

export function ThreadList({ threads, selected, titles, statuses, deleting, onSelect, onNew, onDelete, onUndoDelete, onRename, onSearch, onMore, loadingMore = false, searched }: Props) {
  const now = useNow();
  const [query, setQuery] = useState("");
  const [renaming, setRenaming] = useState<string>();
  const renameButtons = useRef(new Map<string, HTMLButtonElement>());
  const listed = useMemo(() => threads.filter((t) => !deleting?.has(t.thread_id ?? "")), [threads, deleting]);
  const names = useMemo(() => shownTitles(listed, titles), [listed, titles]);
  const groups = useMemo(
    () => groupThreads(query.trim() === "" ? listed : listed.filter((t) => matchesQuery(names[t.thread_id ?? ""]?.title ?? "", query)), now),
    [listed, names, query, now],
  );
  const undoable = [...(deleting ?? [])];
  const searching = query.trim() !== "";
  // While the server has not answered the search typed, the rows shown are
  // those read for the search before, filtered here: their next page is
  // not the one to read (and the end of a short filtered list is in view).
  const moreOf = onSearch && searched !== undefined && searched !== query.trim() ? undefined : onMore;
  const more = useMore(moreOf, loadingMore, threads.length);

  return (
    <div className="side-section">
      <SideHead title="Threads" newTestId="thread-new" newTitle="Start a new thread" onNew={onNew} />
      {(listed.length > 0 || searching) && (
        <input
          type="search"
          className="thread-search"
          data-testid="thread-search"
          aria-label="Search threads by title"
          placeholder="Search threads"
          value={query}
          onChange={(e) => {
            setQuery(e.target.value);
            onSearch?.(e.target.value);
          }}
        />
      )}
      <ul className="list" data-testid="thread-list">
        {groups.map(({ group, threads: inGroup }) => (
          <li key={group} className="thread-group">
            <h3 className="thread-group-head" data-testid="thread-group">
              {group}
            </h3>
            <ul className="list">
              {inGroup.map((t) => {
                const id = t.thread_id ?? "";
                const status = statuses[id] ?? "idle";
                const at = updatedAt(t, now);
                const shown = names[id]?.title ?? id;
                if (renaming === id && onRename) {
                  return (
                    <li key={id} className="thread-row">
                      <ThreadTitleEditor
                        title={titles[id] || shown}
                        onSave={(title) => onRename(id, title)}
                        onDone={() => {
                          setRenaming(undefined);
                          // Focus goes back to the row's rename button, where it was.
                          queueMicrotask(() => renameButtons.current.get(id)?.focus());
                        }}
                      />
                    </li>
                  );
                }
                return (
                  <li key={id} className="thread-row">
                    <button
                      type="button"
                      className={`list-item${id === selected ? " selected" : ""}`}
                      data-testid="thread-item"
                      data-thread-id={id}
                      data-status={status}
                      aria-current={id === selected || undefined}
                      onClick={() => onSelect(id)}
                    >
                      <span className={`dot dot-${status}`} aria-hidden="true" />
                      <span className="grow thread-title" data-testid="thread-title">
                        <span className="ellipsis">{names[id]?.title}</span>
                        {names[id]?.id && (
                          <span className="thread-title-id muted small" title="the end of the thread's id: another thread has the same first message">
                            {names[id].id}
                          </span>
                        )}
                      </span>
                      {STATUS_LABEL[status] && (
                        <span className={`badge badge-${status}`} title={STATUS_TITLE[status]}>
                          {STATUS_LABEL[status]}
                        </span>
                      )}
                      <time className="thread-time muted small" data-testid="thread-time" dateTime={at.toISOString()} title={fullTime(at)}>
                        {relativeTime(at, now)}
                      </time>
                    </button>
                    {onRename && (
                      <button
                        type="button"
                        className="icon"
                        data-testid="thread-rename"
                        ref={(el) => {
                          if (el) renameButtons.current.set(id, el);
                          else renameButtons.current.delete(id);
                        }}
                        aria-label={`Rename thread ${shown}`}
                        title="Rename thread"
                        onClick={() => setRenaming(id)}
                      >
                        <Pencil size={14} aria-hidden="true" />
                      </button>
                    )}
                    <button type="button" className="icon" data-testid="thread-delete" aria-label={`Delete thread ${names[id]?.title ?? id}`} title="Delete thread" onClick={() => onDelete(id)}>
                      <Trash2 size={14} aria-hidden="true" />
                    </button>
                  </li>
                );
              })}
            </ul>
          </li>
        ))}
        {listed.length === 0 && !searching && !onMore && !loadingMore && <li className="muted small">No threads yet: send a message.</li>}
        {searching && groups.length === 0 && !moreOf && !loadingMore && (
          <li className="muted small" data-testid="thread-search-empty">
            No thread title has “{query.trim()}”.
          </li>
        )}
        {moreOf && (
          <li ref={more} className="muted small thread-more" data-testid="thread-more" aria-busy={loadingMore}>
            {loadingMore ? "Loading older threads…" : ""}
          </li>
        )}
      </ul>
      {undoable.length > 0 && (
        <div className="thread-undo" role="status" data-testid="thread-undo">
          <span className="grow">{undoable.length === 1 ? "Thread deleted." : `${undoable.length} threads deleted.`}</span>
          <button type="button" data-testid="thread-undo-button" onClick={() => undoable.forEach((id) => onUndoDelete?.(id))}>
            Undo
          </button>
        </div>
      )}
    </div>
  );
}
