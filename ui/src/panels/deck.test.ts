import { describe, expect, it } from "vitest";

import { canShowAsSlides, dataURL, hasSlideContent, imageRefs, isMarpDeck, rewriteImageRefs, slideDocument, SLIDE_CSP, splitFrontMatter, workspacePath } from "./deck";

const DECK = "---\nmarp: true\ntheme: default\n---\n# One\n\n![chart](report/sales-chart.png)\n\n---\n\n# Two\n\n---\n\n# Three\n";

describe("deck parsing", () => {
  const cases: { name: string; text: string; marp: boolean; slides: boolean; content: boolean }[] = [
    { name: "a Marp deck", text: DECK, marp: true, slides: true, content: true },
    { name: "marp: true with a comment and CRLF", text: "---\r\nmarp: true # a deck\r\n---\r\n# A\r\n", marp: true, slides: true, content: true },
    { name: "marp: false", text: "---\nmarp: false\n---\n# A\n", marp: false, slides: false, content: true },
    { name: "marp: true in the body, not the front matter", text: "# Doc\n\nmarp: true\n", marp: false, slides: false, content: true },
    { name: "a document with --- separators", text: "# A\n\n---\n\n# B\n", marp: false, slides: true, content: true },
    { name: "a plain document", text: "# A\n\ntext\n", marp: false, slides: false, content: true },
    { name: "front matter only", text: "---\nmarp: true\n---\n", marp: true, slides: true, content: false },
    { name: "separators, blank lines and directives only", text: "---\nmarp: true\n---\n\n---\n<!-- _class: lead -->\n---\n\n", marp: true, slides: true, content: false },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(isMarpDeck(c.text)).toBe(c.marp);
      expect(canShowAsSlides(c.text)).toBe(c.slides);
      expect(hasSlideContent(c.text)).toBe(c.content);
    });
  }

  it("splits the front matter from the body", () => {
    expect(splitFrontMatter(DECK)).toEqual({ frontMatter: "marp: true\ntheme: default", body: DECK.slice(DECK.indexOf("# One")) });
    expect(splitFrontMatter("# no front matter\n").frontMatter).toBeUndefined();
  });
});

describe("workspacePath", () => {
  const cases: [string, string, string | undefined][] = [
    ["/workspace/deck.slides.md", "report/sales-chart.png", "/workspace/report/sales-chart.png"],
    ["/workspace/decks/q3.md", "./chart.png", "/workspace/decks/chart.png"],
    ["/workspace/decks/q3.md", "../report/chart%20one.png?v=2", "/workspace/report/chart one.png"],
    ["/workspace/deck.md", "/workspace/other/x.png", "/workspace/other/x.png"],
    ["/workspace/deck.md", "https://example.com/x.png", undefined],
    ["/workspace/deck.md", "//example.com/x.png", undefined],
    ["/workspace/deck.md", "data:image/png;base64,AAAA", undefined],
    ["/workspace/deck.md", "#anchor", undefined],
    ["/workspace/deck.md", "", undefined],
  ];
  for (const [deck, ref, want] of cases) {
    it(`${ref || "(empty)"} from ${deck}`, () => {
      expect(workspacePath(deck, ref)).toBe(want);
    });
  }
});

describe("image references", () => {
  const html =
    '<svg data-marpit-svg=""><foreignObject><section><p><img src="report/a.png" alt="a"><img src="https://x.test/b.png"></p></section></foreignObject>' +
    '<foreignObject><section><figure style="background-image:url(&quot;bg.png&quot;);"></figure></section></foreignObject></svg>';

  it("lists img sources and CSS background images once each", () => {
    expect(imageRefs(html + '<img src="report/a.png">')).toEqual(["report/a.png", "https://x.test/b.png", "bg.png"]);
  });

  it("rewrites the mapped references and leaves the others", () => {
    const urls = new Map([
      ["report/a.png", "data:image/png;base64,QQ=="],
      ["bg.png", "data:image/png;base64,Qg=="],
    ]);
    const out = rewriteImageRefs(html, urls);
    const doc = new DOMParser().parseFromString(out, "text/html");
    expect([...doc.querySelectorAll("img")].map((i) => i.getAttribute("src"))).toEqual(["data:image/png;base64,QQ==", "https://x.test/b.png"]);
    expect(doc.querySelector("figure")?.getAttribute("style")).toBe('background-image:url("data:image/png;base64,Qg==");');
    expect(imageRefs(out)).not.toContain("report/a.png");
  });

  it("leaves the HTML as it is with nothing to rewrite", () => {
    expect(rewriteImageRefs(html, new Map())).toBe(html);
  });
});

describe("slideDocument", () => {
  it("puts the slide under a policy that loads nothing but inline images and styles", () => {
    const doc = slideDocument("<svg></svg>", "section{color:red}</style><script>alert(1)</script>", 'a "deck"');
    expect(doc).toContain(`content="${SLIDE_CSP}"`);
    expect(SLIDE_CSP).toContain("default-src 'none'");
    expect(SLIDE_CSP).toContain("img-src data: blob:");
    expect(SLIDE_CSP).not.toContain("script-src");
    // The deck's CSS cannot close its style element.
    expect(doc).not.toContain("</style><script>");
    expect(doc).toContain("<title>a &quot;deck&quot;</title>");
  });

  it("encodes bytes as a data: URL", () => {
    expect(dataURL(new Uint8Array([0x89, 0x50, 0x4e, 0x47]), "image/png")).toBe("data:image/png;base64,iVBORw==");
  });
});
