// The thread's items in a scrolled view that keeps only those near the
// viewport in the DOM, so that a thread of thousands of messages scrolls and
// streams as smoothly as a short one. Heights are measured as items render
// (and again whenever one changes size: a streamed token, an opened fold);
// an item above the view that changes size moves the view with it, so what
// is read stays in place. The view follows new content only while it is at
// the bottom, else offers a button that goes there.
import { defaultRangeExtractor, measureElement, observeElementRect, useVirtualizer, type Range, type VirtualItem, type Virtualizer } from "@tanstack/react-virtual";
import { ArrowDown } from "lucide-react";
import { forwardRef, useCallback, useImperativeHandle, useLayoutEffect, useRef, useState, type ReactNode, type Ref } from "react";

import type { ChatItem } from "../state/chat";
import "./list.css";

/** How close to the bottom (px) the view must be to follow new content. */
const STICK_PX = 80;
/** The height an item is taken to have until it, or one of its kind, is measured. */
const ESTIMATED_ITEM_PX = 64;
/** The space between items (px). */
const GAP_PX = 10;
/** Items rendered beyond each edge of the view, so that a scroll shows measured ones. */
const OVERSCAN = 8;
/** The height a view that has none (not laid out) is taken to have, so that it still shows a screenful. */
const UNLAID_VIEW_PX = 800;

/** What the chat asks of its list. */
export interface MessageListHandle {
  /** Goes to the newest item; false when there was nowhere to go. */
  scrollToBottom(): boolean;
}

interface Props {
  /** Another thread opens at its bottom. */
  threadId: string | undefined;
  items: readonly ChatItem[];
  /**
   * Shown above the items: the empty state, or that the thread loads. A new
   * header is measured again (the list starts below it): keep it the same
   * object while it shows the same.
   */
  header?: ReactNode;
  /** The key of an item that stays rendered out of view (an open editor keeps what was typed). */
  keep?: string | undefined;
  renderItem(item: ChatItem): ReactNode;
}

export const MessageList = forwardRef(function MessageList({ threadId, items, header, keep, renderItem }: Props, ref: Ref<MessageListHandle>) {
  const scroller = useRef<HTMLDivElement>(null);
  const list = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  // Away from the bottom: the button that goes there shows; unread: content
  // came (a run streamed, a message arrived) since the view left it.
  const [away, setAway] = useState(false);
  const [unread, setUnread] = useState(false);
  // Where the last follow left the view: a scroll up since then (whose
  // event may not have been handled yet) stops the following.
  const followedTo = useRef(0);

  const kept = keep === undefined ? -1 : items.findIndex((it) => it.key === keep);
  const rangeExtractor = useCallback(
    (range: Range) => {
      const shown = defaultRangeExtractor(range);
      return kept < 0 || shown.includes(kept) ? shown : [...shown, kept].sort((a, b) => a - b);
    },
    [kept],
  );
  // A new function would make the virtualizer lay out every item again.
  const getItemKey = useCallback((i: number) => items[i]!.key, [items]);
  // An item not measured yet is taken to be as tall as the last one of its
  // kind: each item measured at another height than guessed moves the ones
  // below it, and while the view scrolls up, the view too, and the
  // virtualizer lays out the items below again for each one. Only an item's
  // first size, once it is whole, is taken as its kind's: a new size is the
  // estimate of every item of the kind not measured yet, all at once (a
  // long thread has thousands above the view). Taken from a reply as it
  // streams, each line it grew made every one of them a line taller: the
  // rows rendered jumped away from the bottom and back, unmounting the
  // streaming one, and the view lost its place.
  const measuredByKind = useRef(new Map<ChatItem["kind"], number>());
  const estimateSize = useCallback((i: number) => measuredByKind.current.get(items[i]!.kind) ?? ESTIMATED_ITEM_PX, [items]);
  const measure = useCallback(
    (el: Element, entry: ResizeObserverEntry | undefined, v: Virtualizer<HTMLDivElement, Element>) => {
      const it = items[v.indexFromElement(el)];
      // Read before the virtualizer stores the size returned.
      const first = it !== undefined && !v.itemSizeCache.has(it.key);
      const size = measureElement(el, entry, v);
      if (it && first && size > 0 && !streams(it)) measuredByKind.current.set(it.kind, size);
      return size;
    },
    [items],
  );
  // The list starts below the view's padding (and its header, if any). Read
  // once the header or the list's presence changed, not on every commit: a
  // read after the DOM changed forces a layout, in each frame of a scroll.
  const [scrollMargin, setScrollMargin] = useState(0);
  const shown = items.length > 0;
  useLayoutEffect(() => {
    setScrollMargin(list.current?.offsetTop ?? 0);
  }, [header, shown]);
  const virtualizer = useVirtualizer({
    count: items.length,
    getScrollElement: () => scroller.current,
    estimateSize,
    measureElement: measure,
    getItemKey,
    overscan: OVERSCAN,
    rangeExtractor,
    gap: GAP_PX,
    scrollMargin,
    observeElementRect: observeViewRect,
  });
  virtualizer.shouldAdjustScrollPositionOnItemSizeChange = keepsReadingPlace;
  const rows = virtualizer.getVirtualItems();
  const total = virtualizer.getTotalSize();

  // Another thread opens at its bottom (before the effect below follows it).
  useLayoutEffect(() => {
    stick.current = true;
    followedTo.current = 0;
    setAway(false);
    setUnread(false);
  }, [threadId]);

  // New items, or items measured at another height than guessed: a view
  // at the bottom stays there.
  useLayoutEffect(() => {
    const el = scroller.current;
    // Away from the bottom nothing is read: each read of the layout while
    // items are measured during a scroll would force one.
    if (!el || !stick.current) return;
    const bottom = el.scrollHeight - el.clientHeight;
    // Clamped by a shorter list is not scrolled up.
    if (el.scrollTop < followedTo.current - 1 && el.scrollTop < bottom - 1) {
      stick.current = false;
      setAway(true);
      return;
    }
    el.scrollTop = el.scrollHeight;
    followedTo.current = el.scrollTop;
  }, [items, total]);

  // Content that came while the view was away is unread.
  useLayoutEffect(() => {
    if (!stick.current) setUnread(true);
  }, [items]);

  const scrollToBottom = useCallback((): boolean => {
    const el = scroller.current;
    if (!el || el.scrollHeight - el.scrollTop - el.clientHeight < 1) return false;
    stick.current = true;
    el.scrollTo({ top: el.scrollHeight });
    followedTo.current = el.scrollTop;
    setAway(false);
    setUnread(false);
    return true;
  }, []);

  useImperativeHandle(ref, () => ({ scrollToBottom }), [scrollToBottom]);

  return (
    <div className="messages-wrap">
      <div
        className="messages"
        ref={scroller}
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < STICK_PX;
          setAway(!stick.current);
          if (stick.current) {
            followedTo.current = el.scrollTop;
            setUnread(false);
          }
        }}
      >
        {header}
        {items.length > 0 && (
          // Off-screen items are not in the DOM: each row says where it is in the whole list.
          <div ref={list} className="message-list" role="list" aria-label="Messages" style={{ height: total }} data-testid="message-list" data-count={items.length}>
            {rows.map((row) => (
              <div
                key={row.key}
                ref={virtualizer.measureElement}
                data-index={row.index}
                className="message-row"
                role="listitem"
                aria-setsize={items.length}
                aria-posinset={row.index + 1}
                style={{ transform: `translateY(${row.start - virtualizer.options.scrollMargin}px)` }}
              >
                {renderItem(items[row.index]!)}
              </div>
            ))}
          </div>
        )}
      </div>
      {away && (
        <button
          type="button"
          className="scroll-bottom"
          data-testid="scroll-to-bottom"
          data-unread={unread || undefined}
          aria-label={unread ? "New messages below: go to the newest" : "Go to the newest message"}
          title="Go to the newest message (End)"
          onClick={() => scrollToBottom()}
        >
          <ArrowDown size={16} aria-hidden="true" />
          {unread && <span>New messages</span>}
        </button>
      )}
    </div>
  );
});

/** streams says whether the item is a message or thought still streamed: its size is that of a part of it. */
function streams(it: ChatItem): boolean {
  return (it.kind === "assistant" || it.kind === "thought") && it.streaming;
}

/** The view's size, as if laid out when it is not (so that it still shows a screenful). */
function observeViewRect(v: Virtualizer<HTMLDivElement, Element>, cb: (r: { width: number; height: number }) => void) {
  return observeElementRect(v, (r) => cb(r.height > 0 ? r : { ...r, height: UNLAID_VIEW_PX }));
}

/**
 * keepsReadingPlace says whether an item's change of size moves the view by
 * as much: yes for an item wholly above it, and for one measured for the
 * first time while it straddles its top as the view scrolls (it came in
 * from above); not for a measured item that grows in place (a streamed
 * token, a fold opened), whose new content goes below as it would in a
 * plain page. Never over a scroll the virtualizer has not seen yet (its
 * event comes in the next frame): the move is written from the offset
 * before that scroll, and would undo it.
 */
function keepsReadingPlace(item: Pick<VirtualItem, "key" | "start" | "end">, _delta: number, v: Virtualizer<HTMLDivElement, Element>): boolean {
  // Items start at the scroll margin, as their rows do in the view.
  const top = v.scrollOffset ?? 0;
  const el = v.scrollElement;
  if (el && Math.abs(el.scrollTop - top) > 1) return false;
  return item.end <= top || (v.isScrolling && !v.itemSizeCache.has(item.key) && item.start < top);
}
