// A CSV file as a table sorted by the column whose header was clicked
// (again: the other way), or as a bar or line chart of one numeric column.
import { lazy, Suspense, useMemo, useState } from "react";

import { parseCSV, sortRows } from "./csv";
import { chartSeries, defaultChartColumns, notATable, numericColumns, ROW_NUMBER } from "./csvShape";

const CsvChart = lazy(() => import("./CsvChart"));

/** The most rows rendered: a 1 MiB file can have tens of thousands, which the page would take seconds to lay out. */
export const MAX_TABLE_ROWS = 2000;

/** How the file is shown. */
type View = "table" | "bar" | "line";

const VIEWS: readonly { view: View; label: string }[] = [
  { view: "table", label: "Table" },
  { view: "bar", label: "Bar" },
  { view: "line", label: "Line" },
];

export function CsvTable({ text, delimiter }: { text: string; delimiter: string }) {
  const [sort, setSort] = useState<{ column: number; descending: boolean }>();
  const [view, setView] = useState<View>("table");
  const [picked, setPicked] = useState<{ value: number; label: number }>();
  const [anyway, setAnyway] = useState(false);
  const [all, header, body] = useMemo(() => {
    const rows = parseCSV(text, delimiter);
    return [rows, rows[0] ?? [], rows.slice(1)] as const;
  }, [text, delimiter]);
  const numeric = useMemo(() => numericColumns(header, body), [header, body]);
  const sorted = useMemo(() => (sort ? sortRows(body, sort.column, sort.descending) : body), [body, sort]);
  const columns = Math.max(header.length, ...body.slice(0, MAX_TABLE_ROWS).map((r) => r.length));
  const shown = useMemo(() => sorted.slice(0, MAX_TABLE_ROWS), [sorted]);
  // A choice made for another version of the file may name a column it no longer has.
  const chosen = picked && numeric.includes(picked.value) && picked.label < header.length ? picked : defaultChartColumns(header, numeric);
  const series = useMemo(() => (chosen ? chartSeries(shown, chosen.value, chosen.label) : undefined), [shown, chosen?.value, chosen?.label]);

  if (header.length === 0) return <p className="wp-empty">The file is empty.</p>;
  const problem = anyway ? undefined : notATable(all, delimiter);
  if (problem) {
    return (
      <div className="wp-empty" data-testid="csv-not-table">
        <p>{problem}</p>
        <button type="button" className="wp-button" onClick={() => setAnyway(true)}>
          Show as a table anyway
        </button>
      </div>
    );
  }
  const noChart = numeric.length === 0 ? "No column holds only numbers: there is nothing to chart." : undefined;
  const current = noChart ? "table" : view;
  return (
    <div className="wp-table-wrap">
      <div className="wp-csv-bar">
        <div className="wp-segmented" role="group" aria-label="Show as" data-testid="csv-view">
          {VIEWS.map(({ view: v, label }) => (
            <button
              type="button"
              key={v}
              className="wp-button"
              data-testid={`csv-view-${v}`}
              aria-pressed={current === v}
              disabled={v !== "table" && noChart !== undefined}
              title={v !== "table" ? noChart : undefined}
              onClick={() => setView(v)}
            >
              {label}
            </button>
          ))}
        </div>
        {noChart && (
          <span className="wp-muted" data-testid="csv-no-chart">
            {noChart}
          </span>
        )}
        {current !== "table" && chosen && (
          <>
            <label className="wp-muted">
              Value{" "}
              <select
                data-testid="chart-value"
                value={chosen.value}
                onChange={(e) => setPicked({ label: chosen.label, value: Number(e.target.value) })}
              >
                {numeric.map((c) => (
                  <option key={c} value={c}>
                    {header[c] || `Column ${c + 1}`}
                  </option>
                ))}
              </select>
            </label>
            <label className="wp-muted">
              Label{" "}
              <select
                data-testid="chart-label"
                value={chosen.label}
                onChange={(e) => setPicked({ value: chosen.value, label: Number(e.target.value) })}
              >
                <option value={ROW_NUMBER}>Row number</option>
                {header.map((h, c) => (
                  <option key={c} value={c}>
                    {h || `Column ${c + 1}`}
                  </option>
                ))}
              </select>
            </label>
          </>
        )}
      </div>
      {sorted.length > MAX_TABLE_ROWS && (
        <p className="wp-muted">
          Showing {MAX_TABLE_ROWS} of {sorted.length} rows{sort ? " (sorted)" : ""}.
        </p>
      )}
      {current !== "table" && chosen && series ? (
        <Suspense fallback={<p className="wp-empty">Loading the chart…</p>}>
          <CsvChart type={current} labels={series.labels} values={series.values} name={header[chosen.value] || `Column ${chosen.value + 1}`} />
        </Suspense>
      ) : (
        <CsvRows header={header} columns={columns} shown={shown} sort={sort} setSort={setSort} />
      )}
    </div>
  );
}

interface CsvRowsProps {
  header: readonly string[];
  columns: number;
  shown: readonly string[][];
  sort: { column: number; descending: boolean } | undefined;
  setSort: (s: { column: number; descending: boolean }) => void;
}

function CsvRows({ header, columns, shown, sort, setSort }: CsvRowsProps) {
  return (
    <>
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
    </>
  );
}
