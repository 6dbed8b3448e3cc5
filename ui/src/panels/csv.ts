// A small CSV parser (RFC 4180): quoted fields may hold the delimiter, line
// breaks and doubled quotes. Written here rather than taken from a library
// because the canvas needs only this and the initial bundle has a budget.

/** Parses CSV text into rows of fields. A trailing line break ends the last row; it does not start an empty one. */
export function parseCSV(text: string, delimiter = ","): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  // A row is only pushed once something of it was read, so that a final
  // line break adds no empty row.
  let started = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c !== '"') {
        field += c;
      } else if (text[i + 1] === '"') {
        field += '"';
        i++;
      } else {
        quoted = false;
      }
      continue;
    }
    if (c === '"' && field === "") {
      quoted = true;
      started = true;
    } else if (c === delimiter) {
      row.push(field);
      field = "";
      started = true;
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
      started = false;
    } else {
      field += c;
      started = true;
    }
  }
  if (started) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

const NUMBER = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;

/** True when a cell is a number (as sorting and charts read it: digits, a point, an exponent). */
export function isNumberCell(cell: string): boolean {
  return NUMBER.test(cell);
}

/** Compares two cells: as numbers when both are numbers, else as text (with digits compared numerically). Empty cells sort last. */
export function compareCells(a: string, b: string): number {
  if (a === b) return 0;
  if (a === "") return 1;
  if (b === "") return -1;
  if (NUMBER.test(a) && NUMBER.test(b)) return Number(a) - Number(b);
  return a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" });
}

/** Returns the rows sorted by a column; the sort is stable and does not change rows. */
export function sortRows(rows: string[][], column: number, descending: boolean): string[][] {
  const sign = descending ? -1 : 1;
  return rows
    .map((row, i) => ({ row, i }))
    .sort((x, y) => {
      const a = x.row[column] ?? "";
      const b = y.row[column] ?? "";
      // Empty cells stay last either way.
      if (a === "" || b === "") return compareCells(a, b) || x.i - y.i;
      return sign * compareCells(a, b) || x.i - y.i;
    })
    .map((x) => x.row);
}
