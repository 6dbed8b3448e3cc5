import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import type { Wick } from "@wick-agent/sdk";
import { afterEach, describe, expect, it, vi } from "vitest";

import { SidePanel } from "./SidePanel";
import { UsagePanel, usd, type Usage } from "./UsagePanel";

afterEach(cleanup);

const row = (day: string, agent: string, model: string, input: number, output: number, cost: number) => ({
  day,
  user: "alice",
  agent_id: agent,
  model,
  calls: "1",
  input_tokens: String(input),
  output_tokens: String(output),
  cost_micro_usd: String(cost),
});

function fakeClient(usage: Usage) {
  const getUsage = vi.fn(async () => usage);
  return { client: { getUsage } as unknown as Wick, getUsage };
}

describe("UsagePanel", () => {
  it("shows days × models with tokens and cost, agents summed, and the month against the budget", async () => {
    const { client, getUsage } = fakeClient({
      from: "2026-11-01",
      to: "2026-11-28",
      rows: [
        row("2026-11-27", "coder", "openai:gpt-4o", 1000, 200, 4500),
        row("2026-11-28", "coder", "openai:gpt-4o", 100, 20, 450),
        row("2026-11-28", "writer", "openai:gpt-4o", 100, 20, 450),
        row("2026-11-28", "writer", "script:demo", 10, 5, 0),
      ],
      budget: { month: "2026-11", tokens: "1475", cost_micro_usd: "5400", token_budget: "100000", cost_budget_micro_usd: "0", resets: "2026-12-01" },
    });
    render(<UsagePanel client={client} running={false} onError={vi.fn()} />);
    const lines = await screen.findAllByTestId("usage-line");
    expect(getUsage).toHaveBeenCalled();
    expect(lines.map((l) => [...l.querySelectorAll("td")].map((td) => td.textContent))).toEqual([
      ["2026-11-28", "openai:gpt-4o", "2", "200", "40", "$0.0009"],
      ["2026-11-28", "script:demo", "1", "10", "5", "$0.00"],
      ["2026-11-27", "openai:gpt-4o", "1", "1,000", "200", "$0.0045"],
    ]);
    expect(screen.getByTestId("usage-month").textContent).toBe("2026-11: 1,475 tokens of 100,000, $0.0054 · resets 2026-12-01");
  });

  it("says so when there are no calls, and reports a failure", async () => {
    const { client } = fakeClient({ from: "2026-11-01", to: "2026-11-28", budget: { month: "2026-11", tokens: "0", cost_micro_usd: "0", token_budget: "0", cost_budget_micro_usd: "0", resets: "2026-12-01" } });
    render(<UsagePanel client={client} running={false} onError={vi.fn()} />);
    await screen.findByText(/No model calls this month/);
    expect(screen.getByTestId("usage-month").textContent).toBe("2026-11: 0 tokens, $0.00");

    const onError = vi.fn();
    const failing = { getUsage: vi.fn(async () => Promise.reject(new Error("down"))) } as unknown as Wick;
    cleanup();
    render(<UsagePanel client={failing} running={false} onError={onError} />);
    await vi.waitFor(() => expect(onError).toHaveBeenCalled());
  });

  it("is a side panel tab that needs no agent chosen", async () => {
    const { client, getUsage } = fakeClient({
      from: "2026-11-01",
      to: "2026-11-28",
      rows: [row("2026-11-28", "coder", "openai:gpt-4o", 100, 20, 450)],
      budget: { month: "2026-11", tokens: "120", cost_micro_usd: "450", token_budget: "0", cost_budget_micro_usd: "0", resets: "2026-12-01" },
    });
    render(<SidePanel client={client} />);
    fireEvent.click(screen.getByTestId("panel-tab-usage"));
    expect(await screen.findAllByTestId("usage-line")).toHaveLength(1);
    expect(getUsage).toHaveBeenCalledTimes(1);
  });

  it("writes dollars", () => {
    expect(usd(12_500_000)).toBe("$12.50");
    expect(usd(4500)).toBe("$0.0045");
    expect(usd(0)).toBe("$0.00");
  });
});
