import { describe, expect, it } from "vitest";

import { parseCSV } from "./csv";
import { chartSeries, defaultChartColumns, notATable, numericColumns, ROW_NUMBER } from "./csvShape";

const split = (text: string) => {
  const rows = parseCSV(text);
  return { header: rows[0] ?? [], body: rows.slice(1), rows };
};

describe("chart columns", () => {
  const cases: { name: string; csv: string; numeric: number[]; choice: { value: number; label: number } | undefined }[] = [
    { name: "label then numbers", csv: "month,sales,cost\nJan,10,4\nFeb,12.5,5\n", numeric: [1, 2], choice: { value: 1, label: 0 } },
    { name: "numbers first, label later", csv: "sales,region\n10,north\n-3e2,south\n", numeric: [0], choice: { value: 0, label: 1 } },
    { name: "only numbers: rows by number", csv: "a,b\n1,2\n3,4\n", numeric: [0, 1], choice: { value: 0, label: ROW_NUMBER } },
    { name: "empty cells do not spoil a column", csv: "name,score\nx,\ny,7\n", numeric: [1], choice: { value: 1, label: 0 } },
    { name: "a column of empty cells is not numeric", csv: "name,score\nx,\ny,\n", numeric: [], choice: undefined },
    { name: "no numeric column", csv: "name,city\nAda,London\nAlan,Wilmslow\n", numeric: [], choice: undefined },
    { name: "one text cell makes a column text", csv: "name,n\na,1\nb,two\n", numeric: [], choice: undefined },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const { header, body } = split(c.csv);
      const numeric = numericColumns(header, body);
      expect(numeric).toEqual(c.numeric);
      expect(defaultChartColumns(header, numeric)).toEqual(c.choice);
    });
  }

  it("draws one point per row with a value", () => {
    const { body } = split("month,sales\nJan,10\nFeb,\nMar,7.5\n");
    expect(chartSeries(body, 1, 0)).toEqual({ labels: ["Jan", "Mar"], values: [10, 7.5] });
    expect(chartSeries(body, 1, ROW_NUMBER)).toEqual({ labels: ["1", "3"], values: [10, 7.5] });
  });
});

describe("notATable", () => {
  const cases: { name: string; text: string; delimiter: string; bad: boolean }[] = [
    { name: "a table", text: "a,b\n1,2\n", delimiter: ",", bad: false },
    { name: "prose", text: "It was a dark and stormy night\nThe end\n", delimiter: ",", bad: true },
    { name: "one line of text", text: "This is a note and not a table\n", delimiter: ",", bad: true },
    { name: "one column of names under a header", text: "h\nold\nAda Lovelace\n", delimiter: ",", bad: false },
    { name: "one column of numbers under a header", text: "value\n1\n2\n3\n", delimiter: ",", bad: false },
    { name: "a TSV read with tabs", text: "a\tb\n1\t2\n", delimiter: "\t", bad: false },
    { name: "a CSV named .tsv: one column, still a table", text: "a,b\n1,2\n", delimiter: "\t", bad: false },
    { name: "nothing", text: "", delimiter: ",", bad: false },
    { name: "prose with a comma here and there", text: "Dear reader, this is a letter\nnot a table at all\nyours, me\nbye\n", delimiter: ",", bad: true },
    { name: "a table with a short last row", text: "a,b,c\n1,2,3\n4,5,6\n7,8\n", delimiter: ",", bad: false },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = notATable(parseCSV(c.text, c.delimiter), c.delimiter);
      if (c.bad) expect(got).toMatch(/does not look like CSV/);
      else expect(got).toBeUndefined();
    });
  }
});
