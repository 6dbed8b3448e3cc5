import { describe, expect, it } from "vitest";

import { compareCells, parseCSV, sortRows } from "./csv";

describe("parseCSV", () => {
  const cases: { name: string; text: string; delimiter?: string; want: string[][] }[] = [
    { name: "plain", text: "a,b\n1,2\n", want: [["a", "b"], ["1", "2"]] },
    { name: "no final line break", text: "a,b\n1,2", want: [["a", "b"], ["1", "2"]] },
    { name: "CRLF", text: "a,b\r\n1,2\r\n", want: [["a", "b"], ["1", "2"]] },
    { name: "quoted delimiter", text: 'x,"a, b",y', want: [["x", "a, b", "y"]] },
    { name: "doubled quotes", text: '"say ""hi""",z', want: [['say "hi"', "z"]] },
    { name: "line break in quotes", text: '"one\ntwo",3\n4,5', want: [["one\ntwo", "3"], ["4", "5"]] },
    { name: "empty fields", text: ",,\n", want: [["", "", ""]] },
    { name: "empty quoted field", text: '"",a', want: [["", "a"]] },
    { name: "blank line is an empty row", text: "a\n\nb\n", want: [["a"], [""], ["b"]] },
    { name: "quote inside a field is kept", text: 'ab"c,d', want: [['ab"c', "d"]] },
    { name: "tabs", text: "a\tb,c\n1\t2", delimiter: "\t", want: [["a", "b,c"], ["1", "2"]] },
    { name: "empty text", text: "", want: [] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(parseCSV(c.text, c.delimiter)).toEqual(c.want);
    });
  }
});

describe("sortRows", () => {
  const rows = [
    ["b", "10"],
    ["a", "9"],
    ["c", ""],
    ["A", "100"],
    ["item2", "-1.5"],
    ["item10", "1e1"],
  ];

  it("sorts numbers as numbers", () => {
    expect(sortRows(rows, 1, false).map((r) => r[1])).toEqual(["-1.5", "9", "10", "1e1", "100", ""]);
  });

  it("sorts descending with empty cells still last", () => {
    expect(sortRows(rows, 1, true).map((r) => r[1])).toEqual(["100", "10", "1e1", "9", "-1.5", ""]);
  });

  it("sorts text without case and digits numerically, stably", () => {
    expect(sortRows(rows, 0, false).map((r) => r[0])).toEqual(["a", "A", "b", "c", "item2", "item10"]);
  });

  it("leaves the input alone", () => {
    const copy = rows.map((r) => [...r]);
    sortRows(rows, 0, true);
    expect(rows).toEqual(copy);
  });

  it("compares a number and text as text", () => {
    expect(compareCells("10", "x")).toBeLessThan(0);
    expect(compareCells("", "x")).toBeGreaterThan(0);
  });
});
