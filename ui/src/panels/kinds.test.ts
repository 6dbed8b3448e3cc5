import { describe, expect, it } from "vitest";

import { canvasKind, csvDelimiter, extensionOf, formatBytes, imageType, isBinaryName, languageOf } from "./kinds";

describe("canvasKind", () => {
  const cases: [string, ReturnType<typeof canvasKind>][] = [
    ["/workspace/report.md", "markdown"],
    ["/workspace/README.MARKDOWN", "markdown"],
    ["/workspace/deck.slides.md", "slides"],
    ["/workspace/Q3.Slides.MD", "slides"],
    ["/workspace/slides.md", "markdown"],
    ["/workspace/data.csv", "csv"],
    ["/workspace/data.tsv", "csv"],
    ["/workspace/site/index.html", "html"],
    ["/workspace/page.HTM", "html"],
    ["/workspace/chart.png", "image"],
    ["/workspace/photo.JPEG", "image"],
    ["/workspace/logo.svg", "image"],
    ["/workspace/main.py", "code"],
    ["/workspace/app.tsx", "code"],
    ["/workspace/main.go", "code"],
    ["/workspace/config.yaml", "code"],
    ["/workspace/paper.pdf", "binary"],
    ["/workspace/archive.tar.gz", "binary"],
    ["/workspace/notes.txt", "text"],
    ["/workspace/Makefile", "text"],
    ["/workspace/.env", "text"],
    ["/workspace/dir.v2/file", "text"],
  ];
  for (const [path, want] of cases) {
    it(`${path} is ${want}`, () => {
      expect(canvasKind(path)).toBe(want);
    });
  }
});

describe("languageOf", () => {
  const cases: [string, ReturnType<typeof languageOf>][] = [
    ["a.js", "javascript"],
    ["a.mjs", "javascript"],
    ["a.ts", "typescript"],
    ["a.tsx", "tsx"],
    ["a.jsx", "jsx"],
    ["a.py", "python"],
    ["a.md", "markdown"],
    ["a.json", "json"],
    ["a.html", "html"],
    ["a.css", "css"],
    ["a.go", undefined],
    ["a", undefined],
  ];
  for (const [path, want] of cases) {
    it(`${path} → ${String(want)}`, () => {
      expect(languageOf(path)).toBe(want);
    });
  }
});

describe("helpers", () => {
  it("reads extensions", () => {
    expect(extensionOf("/w/a.B.C")).toBe("c");
    expect(extensionOf("/w/.bashrc")).toBe("");
    expect(extensionOf("/w.d/noext")).toBe("");
  });
  it("types images and tells binary names", () => {
    expect(imageType("a.svg")).toBe("image/svg+xml");
    expect(imageType("a.txt")).toBeUndefined();
    expect(isBinaryName("a.zip")).toBe(true);
    expect(isBinaryName("a.png")).toBe(true);
    expect(isBinaryName("a.py")).toBe(false);
  });
  it("picks the CSV delimiter", () => {
    expect(csvDelimiter("a.tsv")).toBe("\t");
    expect(csvDelimiter("a.csv")).toBe(",");
  });
  it("formats sizes", () => {
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(1023)).toBe("1023 B");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(100 << 20)).toBe("100 MiB");
    expect(formatBytes(1 << 20)).toBe("1 MiB");
  });
});
