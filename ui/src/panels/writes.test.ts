import { describe, expect, it } from "vitest";

import type { WrittenFile } from "./types";
import { artifactToOpen } from "./writes";

const w = (path: string, runId = "run_1"): WrittenFile => ({ path, runId, eventId: "1-0", version: 1 });

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
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(artifactToOpen(c.fresh, c.shown)?.path).toBe(c.want);
    });
  }
});
