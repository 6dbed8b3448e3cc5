// What a parsed CSV file holds for a chart: which columns are numbers, which
// one labels the rows, and whether the file is a table at all.
import { isNumberCell } from "./csv";

/** The label column "none": rows are labelled by their number. */
export const ROW_NUMBER = -1;

/**
 * numericColumns returns the columns whose every non-empty cell is a
 * number and that have at least one: the columns a chart can plot.
 */
export function numericColumns(header: readonly string[], rows: readonly (readonly string[])[]): number[] {
  const out: number[] = [];
  for (let c = 0; c < header.length; c++) {
    let seen = false;
    let numeric = true;
    for (const row of rows) {
      const cell = (row[c] ?? "").trim();
      if (cell === "") continue;
      seen = true;
      if (!isNumberCell(cell)) {
        numeric = false;
        break;
      }
    }
    if (seen && numeric) out.push(c);
  }
  return out;
}

/** The chart's first choice: the first numeric column, labelled by the first column that is not numeric (else by row number). */
export function defaultChartColumns(header: readonly string[], numeric: readonly number[]): { value: number; label: number } | undefined {
  const value = numeric[0];
  if (value === undefined) return undefined;
  const label = header.findIndex((_, i) => !numeric.includes(i));
  return { value, label: label === -1 ? ROW_NUMBER : label };
}

/** The series a chart draws: one label and one value per row; rows without a value are left out. */
export function chartSeries(rows: readonly (readonly string[])[], value: number, label: number): { labels: string[]; values: number[] } {
  const labels: string[] = [];
  const values: number[] = [];
  rows.forEach((row, i) => {
    const cell = (row[value] ?? "").trim();
    if (cell === "" || !isNumberCell(cell)) return;
    labels.push(label === ROW_NUMBER ? String(i + 1) : (row[label] ?? ""));
    values.push(Number(cell));
  });
  return { labels, values };
}

/** A first line of this many words is a sentence, not a header. */
const SENTENCE_WORDS = 5;

/**
 * notATable says why a parsed file is not shown as a table, or undefined
 * when it is one. A CSV file has a header that names its columns and about
 * as many fields on each line as in the header; prose or a log has neither:
 * a sentence for a header and one field per line, or a comma here and
 * there. A single column under a short header (a list of names or numbers)
 * is a table.
 */
export function notATable(rows: readonly (readonly string[])[], delimiter: string): string | undefined {
  const header = rows[0];
  if (!header) return undefined;
  const body = rows.slice(1);
  const name = delimiter === "\t" ? "tab" : `"${delimiter}"`;
  if (rows.every((r) => r.length === 1)) {
    if ((header[0] ?? "").trim().split(/\s+/).length < SENTENCE_WORDS) return undefined;
    return `This file does not look like CSV: no line has a ${name} between fields, and its first line is a sentence, not a header. It may be plain text; see it under Source.`;
  }
  const matching = body.filter((r) => r.length === header.length).length;
  if (body.length > 0 && matching * 2 < body.length) {
    return `This file does not look like CSV: most lines have a different number of fields than its first line (${header.length}). It may be plain text; see it under Source.`;
  }
  return undefined;
}
