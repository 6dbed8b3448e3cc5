// A CSV file as a table sorted by the column whose header was clicked
// (again: the other way).
import { useMemo, useState } from "react";

import { parseCSV, sortRows } from "./csv";

/** The most rows rendered: a 1 MiB file can have tens of thousands, which the page would take seconds to lay out. */
export const MAX_TABLE_ROWS = 2000;

export function CsvTable({ text, delimiter }: { text: string; delimiter: string }) {
  const [sort, setSort] = useState<{ column: number; descending: boolean }>();
  const [header, body] = useMemo(() => {
    const all = parseCSV(text, delimiter);
    return [all[0] ?? [], all.slice(1)] as const;
  }, [text, delimiter]);
  const sorted = useMemo(() => (sort ? sortRows(body, sort.column, sort.descending) : body), [body, sort]);
  const columns = Math.max(header.length, ...body.slice(0, MAX_TABLE_ROWS).map((r) => r.length));
  const shown = sorted.slice(0, MAX_TABLE_ROWS);

  if (header.length === 0) return <p className="wp-empty">The file is empty.</p>;
  return (
    <div className="wp-table-wrap">
      {sorted.length > MAX_TABLE_ROWS && (
        <p className="wp-muted">
          Showing {MAX_TABLE_ROWS} of {sorted.length} rows{sort ? " (sorted)" : ""}.
        </p>
      )}
      <table className="wp-table" data-testid="canvas-table">
        <thead>
          <tr>
            {Array.from({ length: columns }, (_, i) => {
              const active = sort?.column === i;
              return (
                <th key={i} aria-sort={active ? (sort.descending ? "descending" : "ascending") : "none"}>
                  <button
                    type="button"
                    data-testid="canvas-table-sort"
                    onClick={() => setSort({ column: i, descending: active ? !sort.descending : false })}
                  >
                    {header[i] ?? ""}
                    <span aria-hidden="true">{active ? (sort.descending ? " ▼" : " ▲") : ""}</span>
                  </button>
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>
          {shown.map((row, r) => (
            <tr key={r}>
              {Array.from({ length: columns }, (_, i) => (
                <td key={i}>{row[i] ?? ""}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
