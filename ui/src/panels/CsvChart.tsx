// A bar or line chart of one CSV column, drawn by Chart.js. Only the parts a
// bar and a line chart need are registered, so the rest of Chart.js stays
// out of the bundle; the module is loaded lazily with the chart toggle.
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
} from "chart.js";
import { useEffect, useRef } from "react";

Chart.register(BarController, BarElement, LineController, LineElement, PointElement, CategoryScale, LinearScale, Tooltip);

export interface CsvChartProps {
  type: "bar" | "line";
  labels: string[];
  values: number[];
  /** The plotted column's header, the series' name. */
  name: string;
}

/** A theme colour of the page (a CSS custom property), with a fallback for when none is set. */
function themeColor(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

export default function CsvChart({ type, labels, values, name }: CsvChartProps) {
  const canvas = useRef<HTMLCanvasElement>(null);

  useEffect(() => {
    const el = canvas.current;
    if (!el) return;
    const accent = themeColor("--accent", "#2563eb");
    const fg = themeColor("--fg-muted", "#666");
    const grid = themeColor("--border", "#ddd");
    const chart = new Chart(el, {
      type,
      data: {
        labels,
        datasets: [{ label: name, data: values, backgroundColor: accent, borderColor: accent, pointRadius: values.length > 200 ? 0 : 3 }],
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        // Redrawing on every version of a file: no animation to wait for.
        animation: false,
        scales: {
          x: { ticks: { color: fg }, grid: { color: grid } },
          y: { ticks: { color: fg }, grid: { color: grid } },
        },
      },
    });
    return () => chart.destroy();
  }, [type, labels, values, name]);

  return (
    <div className="wp-chart">
      <canvas ref={canvas} data-testid="canvas-chart" role="img" aria-label={`${type === "bar" ? "Bar" : "Line"} chart of ${name}`} />
    </div>
  );
}
