// A Markdown deck shown as slides, one at a time. Marp renders the deck here,
// in the UI; each slide goes into a frame without scripts or an origin whose
// policy lets it load nothing, so the deck's workspace images are fetched
// through the files API first and inlined as data: URLs. Loaded lazily with
// Marp.
import { Marp } from "@marp-team/marp-core";
import type { Wick } from "@wick-agent/sdk";
import { useEffect, useRef, useState, type KeyboardEvent } from "react";

import { fetchLimited } from "./content";
import { dataURL, hasSlideContent, imageRefs, rewriteImageRefs, slideDocument, workspacePath } from "./deck";
import { baseName } from "./fileTree";
import { formatBytes, imageType } from "./kinds";

/** The most image bytes one deck inlines (each image is also held to the Canvas's image limit). */
export const MAX_DECK_IMAGE_BYTES = 32 << 20;

export interface SlidesViewProps {
  client: Wick;
  agentId: string;
  /** The deck's workspace path: relative image paths start from its folder. */
  path: string;
  text: string;
  /** The largest single image inlined. */
  maxImageBytes: number;
}

/** A rendered deck: each slide's HTML, the deck's CSS, and the images that could not be shown. */
interface Deck {
  slides: string[];
  css: string;
  missing: string[];
}

/** Keys that move through the deck, and where to. */
const KEYS: Record<string, "next" | "prev" | "first" | "last"> = {
  ArrowRight: "next",
  ArrowDown: "next",
  PageDown: "next",
  " ": "next",
  ArrowLeft: "prev",
  ArrowUp: "prev",
  PageUp: "prev",
  Home: "first",
  End: "last",
};

/** renderDeck renders a deck with Marp (no script, no math) and inlines its workspace images. */
async function renderDeck(props: SlidesViewProps, signal: AbortSignal): Promise<Deck> {
  const { client, agentId, path, text, maxImageBytes } = props;
  const marp = new Marp({ script: false, math: false });
  const { html, css } = marp.render(text, { htmlAsArray: true });
  const urls = new Map<string, string>();
  const missing: string[] = [];
  let budget = MAX_DECK_IMAGE_BYTES;
  for (const ref of imageRefs(html.join(""))) {
    const file = workspacePath(path, ref);
    const type = file && imageType(file);
    // Images outside the workspace stay as written: the frame's policy blocks them.
    if (!file || !type) continue;
    try {
      const got = await fetchLimited(client, agentId, file, Math.min(maxImageBytes, budget), signal);
      if (got.tooLarge) {
        missing.push(`${ref} (over ${formatBytes(Math.min(maxImageBytes, budget))})`);
        continue;
      }
      budget -= got.bytes.byteLength;
      urls.set(ref, dataURL(got.bytes, type));
    } catch (err) {
      if (signal.aborted) throw err;
      missing.push(ref);
    }
  }
  return { slides: html.map((h) => rewriteImageRefs(h, urls)), css, missing };
}

export default function SlidesView(props: SlidesViewProps) {
  const { client, agentId, path, text, maxImageBytes } = props;
  const [deck, setDeck] = useState<Deck | { error: string }>();
  const [index, setIndex] = useState(0);
  const [fullscreen, setFullscreen] = useState(false);
  const root = useRef<HTMLDivElement>(null);
  const stage = useRef<HTMLDivElement>(null);
  const empty = !hasSlideContent(text);

  useEffect(() => {
    if (empty) return;
    const abort = new AbortController();
    renderDeck({ client, agentId, path, text, maxImageBytes }, abort.signal).then(
      (d) => {
        if (!abort.signal.aborted) setDeck(d);
      },
      (err: unknown) => {
        if (!abort.signal.aborted) setDeck({ error: err instanceof Error ? err.message : String(err) });
      },
    );
    return () => abort.abort();
  }, [client, agentId, path, text, maxImageBytes, empty]);

  useEffect(() => {
    const onChange = () => setFullscreen(document.fullscreenElement !== null && document.fullscreenElement === root.current);
    document.addEventListener("fullscreenchange", onChange);
    return () => document.removeEventListener("fullscreenchange", onChange);
  }, []);

  if (empty) {
    return (
      <p className="wp-empty" data-testid="slides-empty">
        This deck has no slides: after its front matter there is nothing but separators. Write slide content between the --- lines.
      </p>
    );
  }
  // A new version of the deck keeps showing the old one until it is rendered.
  if (!deck) return <p className="wp-empty">Rendering the slides…</p>;
  if ("error" in deck) return <p className="wp-empty wp-error">The slides could not be rendered: {deck.error}</p>;

  const count = deck.slides.length;
  const at = Math.min(index, count - 1);
  const go = (to: number) => setIndex(Math.max(0, Math.min(count - 1, to)));
  const onKey = (e: KeyboardEvent<HTMLDivElement>) => {
    const move = KEYS[e.key];
    if (!move || e.altKey || e.ctrlKey || e.metaKey) return;
    // Space and arrows on a button mean the button.
    if (e.key === " " && e.target instanceof HTMLButtonElement) return;
    e.preventDefault();
    go(move === "next" ? at + 1 : move === "prev" ? at - 1 : move === "first" ? 0 : count - 1);
  };
  const toggleFullscreen = () => {
    if (document.fullscreenElement) {
      void document.exitFullscreen().catch(() => {});
      return;
    }
    const el = root.current;
    if (!el?.requestFullscreen) return;
    el.requestFullscreen().then(
      () => stage.current?.focus(),
      () => {},
    );
  };

  return (
    <div className="wp-slides" ref={root} data-testid="canvas-slides" data-fullscreen={fullscreen} onKeyDown={onKey}>
      <div
        className="wp-slides-stage"
        ref={stage}
        tabIndex={0}
        role="group"
        aria-roledescription="slide"
        aria-label={`Slide ${at + 1} of ${count}`}
        data-testid="slides-stage"
      >
        <iframe
          className="wp-slides-frame"
          data-testid="slides-frame"
          title={`${baseName(path)}, slide ${at + 1}`}
          // No permissions at all: the slide is HTML and CSS, nothing runs.
          sandbox=""
          referrerPolicy="no-referrer"
          tabIndex={-1}
          srcDoc={slideDocument(deck.slides[at] ?? "", deck.css, `${baseName(path)} ${at + 1}`)}
        />
        {/* Keeps clicks (and so focus, and the keys) in the UI, not in the frame. */}
        <div className="wp-slides-hit" aria-hidden="true" onClick={() => stage.current?.focus()} />
      </div>
      <div className="wp-slides-bar">
        <button type="button" className="wp-button" data-testid="slides-prev" aria-label="Previous slide" disabled={at === 0} onClick={() => go(at - 1)}>
          ←
        </button>
        <span className="wp-slides-count" data-testid="slides-counter" aria-live="polite">
          {at + 1} / {count}
        </span>
        <button type="button" className="wp-button" data-testid="slides-next" aria-label="Next slide" disabled={at === count - 1} onClick={() => go(at + 1)}>
          →
        </button>
        <span className="wp-grow wp-muted wp-ellipsis" data-testid="slides-missing">
          {deck.missing.length > 0 && `Not shown: ${deck.missing.join(", ")}`}
        </span>
        <button type="button" className="wp-button" data-testid="slides-fullscreen" aria-pressed={fullscreen} onClick={toggleFullscreen}>
          {fullscreen ? "Exit full screen" : "Full screen"}
        </button>
      </div>
    </div>
  );
}
