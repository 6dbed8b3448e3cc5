// The Canvas: the files the open thread's runs wrote, newest first, the
// selected one shown for what it is — code highlighted, Markdown as a
// document, CSV as a sortable table, HTML in a sandboxed frame, images
// inline. A file is reloaded when a run writes it again.
import type { Wick } from "@wick-agent/sdk";
import { lazy, Suspense, useEffect, useRef, useState } from "react";

import { decodeText, fetchLimited, saveFile } from "./content";
import { CsvTable } from "./CsvTable";
import { canShowAsSlides, isMarpDeck } from "./deck";
import { baseName, dirOf } from "./fileTree";
import { canvasKind, csvDelimiter, formatBytes, imageType, MAX_RENDER_BYTES, type CanvasKind } from "./kinds";
import type { WrittenFile } from "./types";

const CodeEditor = lazy(() => import("./CodeEditor"));
const MarkdownView = lazy(() => import("./MarkdownView"));
const SlidesView = lazy(() => import("./SlidesView"));

/** The largest image shown inline (images are bigger than text; they are not parsed, only decoded by the browser). */
export const MAX_IMAGE_BYTES = 16 << 20;

export interface CanvasPanelProps {
  client: Wick;
  agentId: string;
  writtenFiles: readonly WrittenFile[];
  /** The file shown; the newest when none or when it is not in the list. */
  selected: string | undefined;
  onSelect: (path: string) => void;
  onError: (err: unknown) => void;
}

/** A file's content as loaded for the canvas, for one version of it. */
type Content =
  | { key: string; state: "loading" }
  | { key: string; state: "text"; text: string }
  | { key: string; state: "image"; url: string }
  | { key: string; state: "binary" | "tooLarge" }
  | { key: string; state: "error"; message: string };

/** Kinds that have a rendered view and a source view. */
const RENDERED: ReadonlySet<CanvasKind> = new Set(["markdown", "slides", "csv", "html"]);

export function CanvasPanel({ client, agentId, writtenFiles, selected, onSelect, onError }: CanvasPanelProps) {
  const file = writtenFiles.find((f) => f.path === selected) ?? writtenFiles[0];
  const key = file ? `${file.path}@${file.version}` : "";
  const kind = file ? canvasKind(file.path) : "text";
  const [content, setContent] = useState<Content>();
  const [source, setSource] = useState(false);
  // Slides or document, as the user chose for a Markdown file; else as the file says.
  const [slidesChoice, setSlidesChoice] = useState<{ path: string; slides: boolean }>();
  // The effect below reads the latest callback without depending on it.
  const errors = useRef(onError);
  errors.current = onError;

  useEffect(() => {
    if (!file) return;
    const abort = new AbortController();
    let url: string | undefined;
    const path = file.path;
    // Keep showing the old version while the new one loads: no flicker on every write.
    setContent((c) => (c && c.key.startsWith(`${path}@`) && c.state !== "error" && c.state !== "image" ? c : { key, state: "loading" }));
    (async () => {
      if (kind === "binary") {
        setContent({ key, state: "binary" });
        return;
      }
      const limit = kind === "image" ? MAX_IMAGE_BYTES : MAX_RENDER_BYTES;
      const got = await fetchLimited(client, agentId, path, limit, abort.signal);
      if (abort.signal.aborted) return;
      if (got.tooLarge) {
        setContent({ key, state: "tooLarge" });
      } else if (kind === "image") {
        url = URL.createObjectURL(new Blob([got.bytes as BlobPart], { type: imageType(path) ?? "application/octet-stream" }));
        setContent({ key, state: "image", url });
      } else {
        const text = decodeText(got.bytes);
        setContent(text === undefined ? { key, state: "binary" } : { key, state: "text", text });
      }
    })().catch((err: unknown) => {
      if (abort.signal.aborted) return;
      setContent({ key, state: "error", message: err instanceof Error ? err.message : String(err) });
      errors.current(err);
    });
    return () => {
      abort.abort();
      if (url) URL.revokeObjectURL(url);
    };
    // file and kind follow from key, which names the path and version.
  }, [client, agentId, key]);

  if (!file) {
    return (
      <div className="wp-canvas" data-testid="canvas">
        <p className="wp-empty">Files the agent writes in this thread show here: code, documents, tables, pages and images.</p>
      </div>
    );
  }

  const download = () => saveFile(client, agentId, file.path).catch(onError);
  const shown = content?.key.startsWith(`${file.path}@`) ? content : undefined;
  const text = shown?.state === "text" ? shown.text : undefined;
  // A .slides.md file, or Markdown whose front matter says marp: true, opens as slides; any Markdown with --- separators may.
  const deckByContent = kind === "markdown" && text !== undefined && isMarpDeck(text);
  const slidesPossible = kind === "slides" || (kind === "markdown" && text !== undefined && canShowAsSlides(text));
  const slides = slidesPossible && (slidesChoice?.path === file.path ? slidesChoice.slides : kind === "slides" || deckByContent);
  const view: CanvasKind = source && RENDERED.has(kind) ? "code" : kind === "slides" || kind === "markdown" ? (slides ? "slides" : "markdown") : kind;
  return (
    <div className="wp-canvas" data-testid="canvas">
      <div className="wp-canvas-items" role="listbox" aria-label="Written files">
        {writtenFiles.map((f) => (
          <button
            type="button"
            key={f.path}
            role="option"
            aria-selected={f.path === file.path}
            className="wp-chip"
            data-testid="canvas-item"
            data-path={f.path}
            title={f.path}
            onClick={() => onSelect(f.path)}
          >
            {baseName(f.path)}
            {f.version > 1 && <span className="wp-muted"> v{f.version}</span>}
          </button>
        ))}
      </div>
      <div className="wp-toolbar">
        <span className="wp-grow wp-ellipsis wp-path" title={file.path}>
          <span className="wp-muted">{dirOf(file.path)}/</span>
          {baseName(file.path)}
        </span>
        {slidesPossible && !source && (
          <button
            type="button"
            className="wp-button wp-toggle"
            data-testid="canvas-slides-toggle"
            aria-pressed={slides}
            onClick={() => setSlidesChoice({ path: file.path, slides: !slides })}
          >
            Slides
          </button>
        )}
        {RENDERED.has(kind) && (
          <button type="button" className="wp-button" aria-pressed={source} onClick={() => setSource((s) => !s)}>
            {source ? "Rendered" : "Source"}
          </button>
        )}
        <button type="button" className="wp-button" data-testid="canvas-download" onClick={download}>
          Download
        </button>
      </div>
      <div className="wp-canvas-view" data-kind={view}>
        <CanvasBody client={client} agentId={agentId} path={file.path} kind={view} content={shown} />
      </div>
    </div>
  );
}

interface CanvasBodyProps {
  client: Wick;
  agentId: string;
  path: string;
  kind: CanvasKind;
  content: Content | undefined;
}

function CanvasBody({ client, agentId, path, kind, content }: CanvasBodyProps) {
  const loading = <p className="wp-empty">Loading…</p>;
  if (!content || content.state === "loading") return loading;
  switch (content.state) {
    case "error":
      return <p className="wp-empty wp-error">{content.message}</p>;
    case "binary":
      if (kind === "csv") return <p className="wp-empty" data-testid="csv-not-table">This file is not CSV: it is not text (a binary file). Download it to open it.</p>;
      return <p className="wp-empty">A binary file: download it to open it.</p>;
    case "tooLarge":
      return (
        <p className="wp-empty">
          Larger than {formatBytes(kind === "image" ? MAX_IMAGE_BYTES : MAX_RENDER_BYTES)}, too large to show here: download it.
        </p>
      );
    case "image":
      return <img className="wp-image" data-testid="canvas-image" src={content.url} alt={baseName(path)} />;
  }
  const { text } = content;
  switch (kind) {
    case "markdown":
      return (
        <Suspense fallback={loading}>
          <MarkdownView text={text} />
        </Suspense>
      );
    case "slides":
      return (
        <Suspense fallback={loading}>
          <SlidesView key={path} client={client} agentId={agentId} path={path} text={text} maxImageBytes={MAX_IMAGE_BYTES} />
        </Suspense>
      );
    case "csv":
      return <CsvTable key={path} text={text} delimiter={csvDelimiter(path)} />;
    case "html":
      // No allow-same-origin: the page runs in an opaque origin, with no
      // access to the UI's storage (the token) or its API.
      return <iframe className="wp-frame" data-testid="canvas-html" title={baseName(path)} sandbox="allow-scripts" referrerPolicy="no-referrer" srcDoc={text} />;
    default:
      return (
        <Suspense fallback={loading}>
          <CodeEditor data-testid="canvas-code" path={path} value={text} readOnly />
        </Suspense>
      );
  }
}
