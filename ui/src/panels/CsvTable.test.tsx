import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { CsvTable } from "./CsvTable";

// Chart.js needs a real canvas (jsdom has none); the fake shows what it was given.
vi.mock("./CsvChart", () => ({
  default: ({ type, labels, values, name }: { type: string; labels: string[]; values: number[]; name: string }) => (
    <div data-testid="canvas-chart" data-type={type} data-name={name}>
      {labels.map((l, i) => `${l}=${values[i]}`).join(" ")}
    </div>
  ),
}));

afterEach(cleanup);

const SALES = "month,region,sales,cost\nJan,north,10,4\nFeb,south,12,5\nMar,north,7,3\n";

describe("CsvTable chart toggle", () => {
  it("charts the first numeric column by the first text column, and follows the selects", async () => {
    render(<CsvTable text={SALES} delimiter="," />);
    expect(screen.getByTestId("canvas-table")).toBeTruthy();
    expect(screen.getByTestId("csv-view-table").getAttribute("aria-pressed")).toBe("true");

    fireEvent.click(screen.getByTestId("csv-view-bar"));
    const chart = await screen.findByTestId("canvas-chart");
    expect(screen.queryByTestId("canvas-table")).toBeNull();
    expect(chart.dataset.type).toBe("bar");
    expect(chart.dataset.name).toBe("sales");
    expect(chart.textContent).toBe("Jan=10 Feb=12 Mar=7");
    // Only numeric columns can be plotted; any column (or the row number) labels.
    const value = screen.getByTestId("chart-value") as HTMLSelectElement;
    expect([...value.options].map((o) => o.textContent)).toEqual(["sales", "cost"]);
    const label = screen.getByTestId("chart-label") as HTMLSelectElement;
    expect([...label.options].map((o) => o.textContent)).toEqual(["Row number", "month", "region", "sales", "cost"]);

    fireEvent.change(value, { target: { value: "3" } });
    fireEvent.change(label, { target: { value: "1" } });
    fireEvent.click(screen.getByTestId("csv-view-line"));
    const line = await screen.findByTestId("canvas-chart");
    expect(line.dataset.type).toBe("line");
    expect(line.dataset.name).toBe("cost");
    expect(line.textContent).toBe("north=4 south=5 north=3");

    fireEvent.click(screen.getByTestId("csv-view-table"));
    expect(screen.getByTestId("canvas-table")).toBeTruthy();
    expect(screen.queryByTestId("canvas-chart")).toBeNull();
  });

  it("plots the rows in the table's sort order", async () => {
    render(<CsvTable text={SALES} delimiter="," />);
    fireEvent.click(screen.getAllByTestId("canvas-table-sort")[2]!);
    fireEvent.click(screen.getByTestId("csv-view-bar"));
    expect((await screen.findByTestId("canvas-chart")).textContent).toBe("Mar=7 Jan=10 Feb=12");
  });

  it("disables the chart with the reason when no column is numeric", () => {
    render(<CsvTable text={"name,city\nAda,London\nAlan,Wilmslow\n"} delimiter="," />);
    for (const v of ["bar", "line"]) {
      const b = screen.getByTestId(`csv-view-${v}`) as HTMLButtonElement;
      expect(b.disabled).toBe(true);
      expect(b.title).toMatch(/nothing to chart/);
    }
    expect(screen.getByTestId("csv-no-chart").textContent).toMatch(/No column holds only numbers/);
    expect(screen.getByTestId("canvas-table")).toBeTruthy();
  });

  it("says a file of one text column is not CSV, and shows it as a table on request", () => {
    render(<CsvTable text={"Dear reader, this is a letter\nnot a table at all\n"} delimiter="," />);
    expect(screen.getByTestId("csv-not-table").textContent).toMatch(/does not look like CSV/);
    expect(screen.queryByTestId("canvas-table")).toBeNull();
    fireEvent.click(screen.getByText("Show as a table anyway"));
    expect(screen.getByTestId("canvas-table")).toBeTruthy();
  });
});
