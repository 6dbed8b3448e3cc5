import { describe, expect, it } from "vitest";

import type { WrittenFile } from "./types";
import { artifactToOpen } from "./writes";

const w = (path: string, runId = "run_1"): WrittenFile => ({ path, runId, eventId: "1-0", version: 1 });
/** A file the run's commands made, found when it was done. */
const found = (path: string, runId = "run_1"): WrittenFile => ({ path, runId, eventId: "", version: 1, found: true });

describe("artifactToOpen", () => {
  const cases: { name: string; fresh: WrittenFile[]; shown?: WrittenFile; want: string | undefined }[] = [
    { name: "nothing new", fresh: [], want: undefined },
    { name: "the newest rendered file over a newer log", fresh: [w("/workspace/run.log"), w("/workspace/a.csv"), w("/workspace/b.csv")], want: "/workspace/a.csv" },
    { name: "a chart over a newer table and log", fresh: [w("/workspace/run.log"), w("/workspace/a.csv"), w("/workspace/chart.png")], want: "/workspace/chart.png" },
    { name: "a deck over a newer table", fresh: [w("/workspace/sales.csv"), w("/workspace/deck.slides.md"), w("/workspace/chart.png")], want: "/workspace/deck.slides.md" },
    { name: "a document over a table", fresh: [w("/workspace/data.csv"), w("/workspace/summary.md")], want: "/workspace/summary.md" },
    { name: "a CSV", fresh: [w("/workspace/analyze.py"), w("/workspace/data.csv")], want: "/workspace/data.csv" },
    { name: "only working files: the newest", fresh: [w("/workspace/b.py"), w("/workspace/a.py")], want: "/workspace/b.py" },
    { name: "a log after the run's chart leaves the chart", fresh: [w("/workspace/run.log")], shown: w("/workspace/chart.png"), want: undefined },
    { name: "a log of another run opens", fresh: [w("/workspace/run.log", "run_2")], shown: w("/workspace/chart.png"), want: "/workspace/run.log" },
    { name: "a new chart replaces the run's deck", fresh: [w("/workspace/c2.png")], shown: w("/workspace/deck.slides.md"), want: "/workspace/c2.png" },
    { name: "a script after a script opens", fresh: [w("/workspace/b.py")], shown: w("/workspace/a.py"), want: "/workspace/b.py" },
    { name: "a found chart leaves the run's deck", fresh: [found("/workspace/report/chart.png"), found("/workspace/report/summary.md")], shown: w("/workspace/deck.slides.md"), want: undefined },
    { name: "a found chart replaces the run's table", fresh: [found("/workspace/report/summary.md"), found("/workspace/report/chart.png")], shown: w("/workspace/sales.csv"), want: "/workspace/report/chart.png" },
    { name: "a found chart replaces the run's script", fresh: [found("/workspace/out/chart.png")], shown: w("/workspace/plot.py"), want: "/workspace/out/chart.png" },
    { name: "a found table leaves the run's table", fresh: [found("/workspace/b.csv")], shown: w("/workspace/a.csv"), want: undefined },
    { name: "a found log leaves the run's script", fresh: [found("/workspace/run.log")], shown: w("/workspace/a.py"), want: undefined },
    { name: "a found chart replaces another run's deck", fresh: [found("/workspace/c.png", "run_2")], shown: w("/workspace/deck.slides.md"), want: "/workspace/c.png" },
    { name: "found files open when nothing is shown", fresh: [found("/workspace/out.log"), found("/workspace/summary.md")], want: "/workspace/summary.md" },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(artifactToOpen(c.fresh, c.shown)?.path).toBe(c.want);
    });
  }
});
