import { describe, expect, it } from "vitest";

import { contentTypeOf, documentIdOf, organisations, ownerLabel, parseK, parseMinScore } from "./knowledge";

describe("knowledge form", () => {
  it.each([
    ["", undefined, undefined],
    [" 7 ", 7, undefined],
    ["1", 1, undefined],
    ["100", 100, undefined],
    ["0", undefined, "k is a whole number from 1 to 100"],
    ["101", undefined, "k is a whole number from 1 to 100"],
    ["2.5", undefined, "k is a whole number from 1 to 100"],
    ["five", undefined, "k is a whole number from 1 to 100"],
  ])("k %j", (text, value, error) => {
    expect(parseK(text)).toEqual(error ? { error } : { value });
  });

  it.each([
    ["", undefined, undefined],
    ["0", 0, undefined],
    ["0.35", 0.35, undefined],
    ["1", 1, undefined],
    ["1.5", undefined, "the min score is a number from 0 to 1"],
    ["-0.1", undefined, "the min score is a number from 0 to 1"],
    ["NaN", undefined, "the min score is a number from 0 to 1"],
  ])("min score %j", (text, value, error) => {
    expect(parseMinScore(text)).toEqual(error ? { error } : { value });
  });
});

describe("documents from files", () => {
  it.each([
    ["redis.md", "redis.md"],
    ["Setup guide (v2).md", "Setup_guide__v2_.md"],
    ["..hidden.txt", "hidden.txt"],
    ["éclair.txt", "_clair.txt"],
    ["...", "document"],
    ["x".repeat(200) + ".md", "x".repeat(128)],
  ])("%j has the id %j", (name, id) => {
    expect(documentIdOf(name)).toBe(id);
    expect(documentIdOf(name)).toMatch(/^[A-Za-z0-9._-]{1,128}$/);
  });

  it("chunks Markdown files by headings, others as text", () => {
    expect(["a.md", "b.MARKDOWN", "c.txt", "d"].map(contentTypeOf)).toEqual(["markdown", "markdown", "text", "text"]);
  });
});

describe("owners", () => {
  it("says whose a collection is and which organisations are known", () => {
    expect(ownerLabel({ org: "" })).toBe("you");
    expect(ownerLabel({ org: "acme" })).toBe("org acme");
    expect(organisations([{ org: "" }, { org: "zeta" }, { org: "acme" }, { org: "zeta" }])).toEqual(["acme", "zeta"]);
  });
});
