// What a file is, judged by its name: how the canvas shows it, which
// language the editor highlights, whether it is text at all. The gateway
// sends every file as application/octet-stream (user content is never given
// a type on the API's origin), so the extension is all there is.

/** How the canvas shows a file. */
export type CanvasKind = "code" | "markdown" | "slides" | "csv" | "html" | "image" | "binary" | "text";

/** The languages the editor highlights (each a lazily loaded CodeMirror package). */
export type Language = "javascript" | "typescript" | "jsx" | "tsx" | "python" | "markdown" | "json" | "html" | "css";

/** The largest file the canvas renders and the editor opens: bigger ones are offered for download. */
export const MAX_RENDER_BYTES = 1 << 20;

const LANGUAGES: Record<string, Language> = {
  js: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  jsx: "jsx",
  ts: "typescript",
  mts: "typescript",
  cts: "typescript",
  tsx: "tsx",
  py: "python",
  pyi: "python",
  md: "markdown",
  markdown: "markdown",
  json: "json",
  jsonl: "json",
  html: "html",
  htm: "html",
  css: "css",
};

// Source files without a highlighter of their own: still code, shown plain.
const OTHER_CODE = new Set([
  "go", "rs", "c", "h", "cc", "cpp", "hpp", "java", "kt", "rb", "php", "sh", "bash", "zsh",
  "sql", "yaml", "yml", "toml", "ini", "xml", "svelte", "vue", "swift", "scala", "lua", "r", "pl",
]);

/** Image types a browser shows in an <img>, with the type the Blob needs. */
const IMAGES: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  avif: "image/avif",
  bmp: "image/bmp",
  ico: "image/x-icon",
  // Safe in an <img>: scripts in an SVG do not run there.
  svg: "image/svg+xml",
};

const BINARY = new Set([
  "pdf", "zip", "gz", "tgz", "bz2", "xz", "zst", "tar", "7z", "rar", "jar", "whl", "exe", "dll", "so", "dylib",
  "o", "a", "class", "pyc", "wasm", "bin", "dat", "db", "sqlite", "parquet", "npy", "npz", "pkl", "pt",
  "mp3", "mp4", "wav", "ogg", "webm", "mov", "avi", "flac", "woff", "woff2", "ttf", "otf", "xls", "xlsx",
  "doc", "docx", "ppt", "pptx", "odt", "ods",
]);

/** The file's extension, lower case, without the dot ("" for none; a leading dot names a hidden file, not an extension). */
export function extensionOf(path: string): string {
  const name = path.slice(path.lastIndexOf("/") + 1);
  const dot = name.lastIndexOf(".");
  return dot <= 0 ? "" : name.slice(dot + 1).toLowerCase();
}

/** How the canvas shows the file. */
export function canvasKind(path: string): CanvasKind {
  const ext = extensionOf(path);
  // A deck by its name; a Markdown file with marp: true in its front matter is one by its content (the Canvas checks).
  if (/\.slides\.(md|markdown)$/i.test(path)) return "slides";
  if (ext === "md" || ext === "markdown" || ext === "mdx") return "markdown";
  if (ext === "csv" || ext === "tsv") return "csv";
  if (ext === "html" || ext === "htm") return "html";
  if (ext in IMAGES) return "image";
  if (BINARY.has(ext)) return "binary";
  if (ext in LANGUAGES || OTHER_CODE.has(ext)) return "code";
  return "text";
}

/** The language the editor highlights, if it has one for the file. */
export function languageOf(path: string): Language | undefined {
  return LANGUAGES[extensionOf(path)];
}

/** The MIME type of an image file, for its Blob. */
export function imageType(path: string): string | undefined {
  return IMAGES[extensionOf(path)];
}

/** True when the file is not text by its name: no editor, download only. */
export function isBinaryName(path: string): boolean {
  const k = canvasKind(path);
  return k === "binary" || k === "image";
}

/** The CSV delimiter of a file: tabs for .tsv. */
export function csvDelimiter(path: string): string {
  return extensionOf(path) === "tsv" ? "\t" : ",";
}

/** A size in words: "812 B", "3.4 KiB", "100 MiB". */
export function formatBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  const s = u === 0 || v >= 10 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(1);
  return `${s} ${units[u]}`;
}
