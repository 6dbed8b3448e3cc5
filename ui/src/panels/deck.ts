// Markdown slide decks (Marp's format: YAML front matter, slides divided by
// lines of three dashes) and what the Canvas does to show one: tell a deck
// from a document, find the workspace images its slides use, inline them,
// and wrap one slide in a page that may load nothing from anywhere.

/** Front matter: a first line of three dashes, YAML, then a closing line of three dashes. */
const FRONT_MATTER = /^(?:\uFEFF)?---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

/** A line that divides slides (Marp also accepts *** and ___ rulers, which this view leaves as rulers). */
const SEPARATOR = /^---[ \t]*$/m;

/** The file's front matter (without its dashes) and the Markdown after it. */
export function splitFrontMatter(text: string): { frontMatter: string | undefined; body: string } {
  const m = FRONT_MATTER.exec(text);
  if (!m) return { frontMatter: undefined, body: text };
  return { frontMatter: m[1] ?? "", body: text.slice(m[0].length) };
}

/** True when the file's front matter says `marp: true`: the author wrote a deck. */
export function isMarpDeck(text: string): boolean {
  const { frontMatter } = splitFrontMatter(text);
  return frontMatter !== undefined && /^marp[ \t]*:[ \t]*true[ \t]*(?:#.*)?$/m.test(frontMatter);
}

/** True when a Markdown file can be read as slides: it is a deck, or its body has a slide separator. */
export function canShowAsSlides(text: string): boolean {
  return isMarpDeck(text) || SEPARATOR.test(splitFrontMatter(text).body);
}

/**
 * hasSlideContent tells a deck with something to show from one that is only
 * front matter, separators, blank lines and comments (Marp's directives),
 * which renders as a blank slide.
 */
export function hasSlideContent(text: string): boolean {
  const body = splitFrontMatter(text)
    .body.replace(/<!--[\s\S]*?(?:-->|$)/g, "")
    .replace(/^---[ \t]*$/gm, "");
  return body.trim() !== "";
}

/** A URL a deck may name that is not in the workspace: it keeps its scheme (the frame's policy blocks it). */
const HAS_SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/**
 * workspacePath resolves an image reference of a deck against the deck's
 * folder: "report/chart.png" in /workspace/deck.md is
 * /workspace/report/chart.png. References with a scheme (https:, data:)
 * or a host (//host/x) are not workspace files: undefined.
 */
export function workspacePath(deckPath: string, ref: string): string | undefined {
  const r = ref.trim();
  if (r === "" || r.startsWith("#") || r.startsWith("//") || HAS_SCHEME.test(r)) return undefined;
  let clean = r.replace(/[?#].*$/, "");
  try {
    clean = decodeURI(clean);
  } catch {
    // A stray % is part of the name.
  }
  const base = clean.startsWith("/") ? [] : deckPath.split("/").slice(0, -1);
  const parts: string[] = [];
  for (const p of [...base, ...clean.split("/")]) {
    if (p === "" || p === ".") continue;
    if (p === "..") parts.pop();
    else parts.push(p);
  }
  return parts.length === 0 ? undefined : "/" + parts.join("/");
}

/** The elements and attributes through which rendered slides load an image. */
const URL_IN_CSS = /url\(\s*(?:"([^"]*)"|'([^']*)'|([^)'"\s]*))\s*\)/g;

/**
 * imageRefs lists the image references of rendered slides: <img src>,
 * <image href> in SVG, and url(…) in style attributes (Marp's background
 * images), each once, in order.
 */
export function imageRefs(html: string): string[] {
  const doc = new DOMParser().parseFromString(`<body>${html}</body>`, "text/html");
  const refs = new Set<string>();
  for (const img of doc.querySelectorAll("img[src]")) refs.add(img.getAttribute("src") ?? "");
  for (const img of doc.querySelectorAll("image")) {
    const href = img.getAttribute("href") ?? img.getAttribute("xlink:href");
    if (href) refs.add(href);
  }
  for (const el of doc.querySelectorAll("[style]")) {
    for (const m of (el.getAttribute("style") ?? "").matchAll(URL_IN_CSS)) refs.add(m[1] ?? m[2] ?? m[3] ?? "");
  }
  refs.delete("");
  return [...refs];
}

/**
 * rewriteImageRefs replaces the image references that urls maps (reference
 * as written → data: URL) in rendered slides, and leaves the others.
 */
export function rewriteImageRefs(html: string, urls: ReadonlyMap<string, string>): string {
  if (urls.size === 0) return html;
  const doc = new DOMParser().parseFromString(`<body>${html}</body>`, "text/html");
  for (const img of doc.querySelectorAll("img[src]")) {
    const to = urls.get(img.getAttribute("src") ?? "");
    if (to) img.setAttribute("src", to);
  }
  for (const img of doc.querySelectorAll("image")) {
    for (const attr of ["href", "xlink:href"]) {
      const to = urls.get(img.getAttribute(attr) ?? "");
      if (to) img.setAttribute(attr, to);
    }
  }
  for (const el of doc.querySelectorAll("[style]")) {
    const style = el.getAttribute("style") ?? "";
    const next = style.replace(URL_IN_CSS, (all, dq?: string, sq?: string, bare?: string) => {
      const to = urls.get(dq ?? sq ?? bare ?? "");
      return to ? `url("${to}")` : all;
    });
    if (next !== style) el.setAttribute("style", next);
  }
  return doc.body.innerHTML;
}

/** A data: URL of bytes. */
export function dataURL(bytes: Uint8Array, type: string): string {
  let bin = "";
  const CHUNK = 0x8000;
  for (let i = 0; i < bytes.length; i += CHUNK) bin += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  return `data:${type};base64,${btoa(bin)}`;
}

/**
 * The policy of the frame a slide is shown in: no scripts, no requests —
 * images only from data: and blob: URLs (the deck's workspace images,
 * inlined), styles and fonts only from the page itself.
 */
export const SLIDE_CSP = "default-src 'none'; img-src data: blob:; style-src 'unsafe-inline'; font-src data:; base-uri 'none'; form-action 'none'";

/** The frame's own rules: the slide scaled to fit, centred, on a dark surround. */
const FRAME_CSS =
  "html,body{margin:0;height:100%;background:#1e1e1e;overflow:hidden}" +
  "div.marpit{height:100%;display:flex;align-items:center;justify-content:center}" +
  "div.marpit>svg[data-marpit-svg]{display:block;width:100%;height:100%}";

/** Escapes text for an HTML attribute value. */
function attr(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}

/**
 * slideDocument is the srcdoc of one slide: Marp's HTML and CSS under the
 * frame's content security policy. The CSS must not close its <style>.
 */
export function slideDocument(slideHTML: string, css: string, title: string): string {
  const safeCSS = css.replace(/<\/style/gi, "<\\/style");
  return (
    `<!doctype html><html><head><meta charset="utf-8">` +
    `<meta http-equiv="Content-Security-Policy" content="${attr(SLIDE_CSP)}">` +
    `<title>${attr(title)}</title><style>${safeCSS}</style><style>${FRAME_CSS}</style></head>` +
    `<body><div class="marpit">${slideHTML}</div></body></html>`
  );
}
