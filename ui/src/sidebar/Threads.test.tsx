// The thread list: grouped by day, each row with its time and status, a
// search by title, renaming in the row, and deletion that can be undone
// before it is sent.
import { WickError } from "@wick-agent/sdk";
import { act, cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { useState } from "react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { groupThreads, matchesQuery, shownTitles, ThreadList, type ThreadSummary } from "./Threads";
import { UNDO_DELAY_MS, useDelayedDelete } from "./useDelayedDelete";
import { mergePage } from "./useThreadPages";

const NOW = new Date(2026, 10, 28, 15, 0, 0);
const daysAgo = (d: number, h = 12) => new Date(2026, 10, 28 - d, h, 0, 0).toISOString();

const THREADS: ThreadSummary[] = [
  { thread_id: "th_a1", updated_at: daysAgo(0, 14) },
  { thread_id: "th_b2", updated_at: daysAgo(0, 9) },
  { thread_id: "th_c3", updated_at: daysAgo(1) },
  { thread_id: "th_d4", updated_at: daysAgo(4) },
  { thread_id: "th_e5", updated_at: daysAgo(30) },
];
const TITLES = { th_a1: "What is 6 * 7?", th_b2: "Plan the trip", th_c3: "What is 6 * 7?", th_d4: "Write a report", th_e5: "Old notes" };

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date"] });
  vi.setSystemTime(NOW);
});

afterEach(() => {
  cleanup();
  vi.useRealTimers();
});

function renderList(props: Partial<Parameters<typeof ThreadList>[0]> = {}) {
  const onDelete = vi.fn();
  const onSelect = vi.fn();
  render(
    <ThreadList threads={THREADS} selected={undefined} titles={TITLES} statuses={{ th_b2: "interrupted", th_d4: "error" }} onSelect={onSelect} onNew={() => {}} onDelete={onDelete} {...props} />,
  );
  return { onDelete, onSelect };
}

describe("groupThreads", () => {
  it("puts threads under Today, Yesterday, Previous 7 days and Older, in order, without empty groups", () => {
    const groups = groupThreads(THREADS, NOW).map((g) => [g.group, g.threads.map((t) => t.thread_id)]);
    expect(groups).toEqual([
      ["Today", ["th_a1", "th_b2"]],
      ["Yesterday", ["th_c3"]],
      ["Previous 7 days", ["th_d4"]],
      ["Older", ["th_e5"]],
    ]);
    expect(groupThreads([THREADS[4]!], NOW).map((g) => g.group)).toEqual(["Older"]);
  });

  it("counts a thread not saved yet as today", () => {
    expect(groupThreads([{ thread_id: "new" }], NOW).map((g) => g.group)).toEqual(["Today"]);
  });
});

describe("shownTitles", () => {
  it("tells threads with the same first message apart by their id, and names untitled ones by id", () => {
    const t = shownTitles([...THREADS, { thread_id: "th_untitled_1" }], TITLES);
    expect(t.th_a1).toEqual({ title: "What is 6 * 7?", id: "th_a1" });
    expect(t.th_c3).toEqual({ title: "What is 6 * 7?", id: "th_c3" });
    expect(t.th_b2).toEqual({ title: "Plan the trip" });
    expect(t.th_untitled_1).toEqual({ title: "Thread th_untit" });
  });
});

describe("matchesQuery", () => {
  it("matches every word in any case and any order", () => {
    expect(matchesQuery("Plan the trip", "TRIP plan")).toBe(true);
    expect(matchesQuery("Plan the trip", "plan boat")).toBe(false);
    expect(matchesQuery("Plan the trip", "  ")).toBe(true);
  });
});

describe("ThreadList", () => {
  it("shows the groups, and on each row its relative time with the full date as its title and its status", () => {
    renderList();
    expect(screen.getAllByTestId("thread-group").map((g) => g.textContent)).toEqual(["Today", "Yesterday", "Previous 7 days", "Older"]);
    const rows = screen.getAllByTestId("thread-item");
    expect(rows.map((r) => within(r).getByTestId("thread-time").textContent)).toEqual(["1 hour ago", "6 hours ago", "yesterday", "4 days ago", "Oct 29"]);
    const time = within(rows[0]!).getByTestId("thread-time");
    expect(time.getAttribute("dateTime")).toBe(THREADS[0]!.updated_at);
    expect(time.getAttribute("title")).toContain("November 28, 2026");
    expect(within(rows[0]!).getByTestId("thread-title").textContent).toBe("What is 6 * 7?th_a1");
    expect(within(rows[2]!).getByTestId("thread-title").textContent).toBe("What is 6 * 7?th_c3");
    expect(within(rows[1]!).getByTestId("thread-title").textContent).toBe("Plan the trip");
    expect(rows[1]!.textContent).toContain("needs approval");
    expect(rows[3]!.textContent).toContain("failed");
  });

  it("brings the relative times up to date as time passes", () => {
    renderList();
    act(() => vi.advanceTimersByTime(2 * 60 * 60_000));
    expect(within(screen.getAllByTestId("thread-item")[0]!).getByTestId("thread-time").textContent).toBe("3 hours ago");
  });

  it("filters by title and says when nothing matches", () => {
    renderList();
    fireEvent.change(screen.getByTestId("thread-search"), { target: { value: "6 * 7" } });
    expect(screen.getAllByTestId("thread-item").map((r) => r.dataset.threadId)).toEqual(["th_a1", "th_c3"]);
    expect(screen.getAllByTestId("thread-group").map((g) => g.textContent)).toEqual(["Today", "Yesterday"]);
    fireEvent.change(screen.getByTestId("thread-search"), { target: { value: "nothing like it" } });
    expect(screen.queryAllByTestId("thread-item")).toHaveLength(0);
    expect(screen.getByTestId("thread-search-empty").textContent).toContain("nothing like it");
  });

  it("hides threads being deleted and offers to undo", () => {
    const onUndoDelete = vi.fn();
    renderList({ deleting: new Set(["th_b2"]), onUndoDelete });
    expect(screen.getAllByTestId("thread-item").map((r) => r.dataset.threadId)).not.toContain("th_b2");
    fireEvent.click(screen.getByTestId("thread-undo-button"));
    expect(onUndoDelete).toHaveBeenCalledWith("th_b2");
  });
});

describe("renaming a thread", () => {
  /** Renamable keeps the titles as the page does: a saved rename shows at once. */
  function Renamable({ rename }: { rename: (id: string, title: string) => Promise<void> }) {
    const [titles, setTitles] = useState<Record<string, string>>(TITLES);
    return (
      <ThreadList
        threads={THREADS}
        selected={undefined}
        titles={titles}
        statuses={{}}
        onSelect={() => {}}
        onNew={() => {}}
        onDelete={() => {}}
        onRename={async (id, title) => {
          await rename(id, title);
          setTitles((t) => ({ ...t, [id]: title }));
        }}
      />
    );
  }
  const row = (id: string) => screen.getByTestId("thread-list").querySelector<HTMLElement>(`.thread-row:has([data-thread-id="${id}"])`)!;
  const rowTitle = (id: string) => within(row(id)).getByTestId("thread-title").textContent;

  it("offers no rename without onRename", () => {
    renderList();
    expect(screen.queryAllByTestId("thread-rename")).toHaveLength(0);
  });

  it("saves on Enter, trimmed, and shows the new title at once", async () => {
    const rename = vi.fn(async () => {});
    render(<Renamable rename={rename} />);
    fireEvent.click(screen.getByRole("button", { name: "Rename thread Plan the trip" }));
    const input = screen.getByRole("textbox", { name: "New title for the thread “Plan the trip”" });
    expect((input as HTMLInputElement).value).toBe("Plan the trip");
    expect(document.activeElement).toBe(input);
    expect(input.getAttribute("maxLength")).toBe("200");
    fireEvent.change(input, { target: { value: "  Trip to Ünïcode ✓ " } });
    await act(async () => {
      fireEvent.submit(input.closest("form")!);
    });
    expect(rename).toHaveBeenCalledWith("th_b2", "Trip to Ünïcode ✓");
    expect(screen.queryByTestId("thread-rename-input")).toBeNull();
    expect(rowTitle("th_b2")).toBe("Trip to Ünïcode ✓");
    expect(document.activeElement).toBe(within(row("th_b2")).getByTestId("thread-rename"));
  });

  it("cancels on Escape, and on leaving an input left as it was, without saving", () => {
    const rename = vi.fn(async () => {});
    render(<Renamable rename={rename} />);
    fireEvent.click(within(row("th_d4")).getByTestId("thread-rename"));
    const input = screen.getByTestId("thread-rename-input");
    fireEvent.change(input, { target: { value: "Something else" } });
    fireEvent.keyDown(input, { key: "Escape" });
    expect(screen.queryByTestId("thread-rename-input")).toBeNull();
    expect(rowTitle("th_d4")).toBe("Write a report");

    fireEvent.click(within(row("th_d4")).getByTestId("thread-rename"));
    fireEvent.blur(screen.getByTestId("thread-rename-input"));
    expect(screen.queryByTestId("thread-rename-input")).toBeNull();
    expect(rename).not.toHaveBeenCalled();
  });

  it("keeps the input and the text when the title is empty or refused, saying why", async () => {
    const rename = vi.fn(async () => {
      throw new WickError(400, { code: 3, status: "INVALID_ARGUMENT", message: "title: contains a control character" });
    });
    render(<Renamable rename={rename} />);
    fireEvent.click(within(row("th_e5")).getByTestId("thread-rename"));
    const input = screen.getByTestId("thread-rename-input") as HTMLInputElement;
    fireEvent.change(input, { target: { value: "   " } });
    await act(async () => {
      fireEvent.submit(input.closest("form")!);
    });
    expect(rename).not.toHaveBeenCalled();
    expect(screen.getByRole("alert").textContent).toContain("cannot be empty");

    fireEvent.change(input, { target: { value: "Refused one" } });
    expect(screen.queryByRole("alert")).toBeNull();
    await act(async () => {
      fireEvent.submit(input.closest("form")!);
    });
    expect(rename).toHaveBeenCalledWith("th_e5", "Refused one");
    const alert = screen.getByRole("alert");
    expect(alert.textContent).toContain("title: contains a control character");
    expect(input.getAttribute("aria-describedby")).toBe(alert.id);
    expect(input.value).toBe("Refused one");
    expect(input.disabled).toBe(false);
    fireEvent.blur(input);
    expect(screen.getByTestId("thread-rename-input")).toBe(input);
    fireEvent.keyDown(input, { key: "Escape" });
    expect(rowTitle("th_e5")).toBe("Old notes");
  });
});

describe("useDelayedDelete", () => {
  function Harness({ commit }: { commit: (id: string) => Promise<void> }) {
    const d = useDelayedDelete(commit);
    return (
      <div>
        <span data-testid="pending">{[...d.pending].join(",")}</span>
        <button onClick={() => d.schedule("th_a1")}>delete</button>
        <button onClick={() => d.undo("th_a1")}>undo</button>
      </div>
    );
  }

  it("sends the deletion only when the delay ends, and never when undone first", async () => {
    const commit = vi.fn(async () => {});
    render(<Harness commit={commit} />);
    fireEvent.click(screen.getByText("delete"));
    expect(screen.getByTestId("pending").textContent).toBe("th_a1");
    act(() => vi.advanceTimersByTime(UNDO_DELAY_MS - 1));
    expect(commit).not.toHaveBeenCalled();
    fireEvent.click(screen.getByText("undo"));
    expect(screen.getByTestId("pending").textContent).toBe("");
    act(() => vi.advanceTimersByTime(UNDO_DELAY_MS * 2));
    expect(commit).not.toHaveBeenCalled();

    fireEvent.click(screen.getByText("delete"));
    await act(async () => vi.advanceTimersByTime(UNDO_DELAY_MS));
    expect(commit).toHaveBeenCalledExactlyOnceWith("th_a1");
    expect(screen.getByTestId("pending").textContent).toBe("");
  });

  it("sends nothing when the page goes before the delay ends", () => {
    const commit = vi.fn(async () => {});
    const { unmount } = render(<Harness commit={commit} />);
    fireEvent.click(screen.getByText("delete"));
    unmount();
    act(() => vi.advanceTimersByTime(UNDO_DELAY_MS * 2));
    expect(commit).not.toHaveBeenCalled();
  });
});

describe("pages", () => {
  /** The observers made, with what they watch; report() says the end is in view. */
  let observers: { cb: IntersectionObserverCallback; els: Element[]; on: boolean }[] = [];
  beforeEach(() => {
    observers = [];
    vi.stubGlobal(
      "IntersectionObserver",
      class {
        o: (typeof observers)[number];
        constructor(cb: IntersectionObserverCallback) {
          this.o = { cb, els: [], on: true };
          observers.push(this.o);
        }
        observe(el: Element) {
          this.o.els.push(el);
        }
        disconnect() {
          this.o.on = false;
        }
      },
    );
  });
  afterEach(() => vi.unstubAllGlobals());
  const report = () =>
    act(() => {
      for (const o of observers.filter((o) => o.on)) {
        o.cb(o.els.map((target) => ({ isIntersecting: true, target }) as IntersectionObserverEntry), {} as IntersectionObserver);
      }
    });

  it("asks for the next page when the list's end comes into view, and not while one is read", () => {
    const onMore = vi.fn();
    const { rerender } = render(
      <ThreadList threads={THREADS} selected={undefined} titles={TITLES} statuses={{}} onSelect={() => {}} onNew={() => {}} onDelete={() => {}} onMore={onMore} />,
    );
    expect(screen.getByTestId("thread-more")).toBeTruthy();
    report();
    expect(onMore).toHaveBeenCalledOnce();
    rerender(<ThreadList threads={THREADS} selected={undefined} titles={TITLES} statuses={{}} onSelect={() => {}} onNew={() => {}} onDelete={() => {}} onMore={onMore} loadingMore />);
    report();
    expect(onMore).toHaveBeenCalledOnce();
    expect(screen.getByTestId("thread-more").textContent).toBe("Loading older threads…");
    // The last page read: no end to watch.
    rerender(<ThreadList threads={THREADS} selected={undefined} titles={TITLES} statuses={{}} onSelect={() => {}} onNew={() => {}} onDelete={() => {}} />);
    expect(screen.queryByTestId("thread-more")).toBeNull();
    report();
    expect(onMore).toHaveBeenCalledOnce();
  });

  it("asks the server to search, reads no next page of the search before, and keeps the search box when no thread read matches", () => {
    const onSearch = vi.fn();
    const onMore = vi.fn();
    const { rerender } = render(
      <ThreadList threads={THREADS} selected={undefined} titles={TITLES} statuses={{}} onSelect={() => {}} onNew={() => {}} onDelete={() => {}} onSearch={onSearch} onMore={onMore} searched="" />,
    );
    expect(screen.getByTestId("thread-more")).toBeTruthy();
    fireEvent.change(screen.getByTestId("thread-search"), { target: { value: "zebra" } });
    expect(onSearch).toHaveBeenLastCalledWith("zebra");
    // No row matches here, so the list's end is in view: its next page is the unsearched list's.
    expect(screen.queryByTestId("thread-more")).toBeNull();
    report();
    expect(onMore).not.toHaveBeenCalled();
    // The server found none either.
    rerender(<ThreadList threads={[]} selected={undefined} titles={TITLES} statuses={{}} onSelect={() => {}} onNew={() => {}} onDelete={() => {}} onSearch={onSearch} />);
    expect((screen.getByTestId("thread-search") as HTMLInputElement).value).toBe("zebra");
    expect(screen.getByTestId("thread-search-empty").textContent).toContain("zebra");
    expect(screen.queryByText("No threads yet: send a message.")).toBeNull();
  });
});

describe("mergePage", () => {
  const t = (id: string, title = "") => ({ thread_id: id, title });
  it("puts a first page read again first and a next page last, each thread once, the page's copy winning", () => {
    const read = [t("a"), t("b"), t("c")];
    expect(mergePage(read, [t("d"), t("b", "renamed")], true)).toEqual([t("d"), t("b", "renamed"), t("a"), t("c")]);
    expect(mergePage(read, [t("c", "again"), t("e")], false)).toEqual([t("a"), t("b"), t("c", "again"), t("e")]);
  });
});
