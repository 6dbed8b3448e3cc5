// The Usage panel: the user's model calls of this month by day and model
// (tokens and cost, all agents summed), and the month's total beside the
// monthly budgets. It reads GET /usage when shown and after each run.
import type { Wick } from "@wick-agent/sdk";
import { useCallback, useEffect, useState } from "react";

/** What GET /usage returns. */
export type Usage = Awaited<ReturnType<Wick["getUsage"]>>;

/** One line of the table: a day and a model, every agent summed. */
export interface UsageLine {
  day: string;
  model: string;
  calls: number;
  input: number;
  output: number;
  costMicroUsd: number;
}

/** lines sums the rows of each day and model, newest day first. */
export function usageLines(usage: Usage): UsageLine[] {
  const byKey = new Map<string, UsageLine>();
  for (const r of usage.rows ?? []) {
    const key = `${r.day}\u0000${r.model}`;
    const line = byKey.get(key) ?? { day: r.day, model: r.model, calls: 0, input: 0, output: 0, costMicroUsd: 0 };
    line.calls += Number(r.calls);
    line.input += Number(r.input_tokens);
    line.output += Number(r.output_tokens);
    line.costMicroUsd += Number(r.cost_micro_usd);
    byKey.set(key, line);
  }
  return [...byKey.values()].sort((a, b) => (a.day === b.day ? a.model.localeCompare(b.model) : b.day.localeCompare(a.day)));
}

/** usd writes millionths of a dollar as dollars: "$0.0045", "$12.50". */
export function usd(micro: number): string {
  const dollars = micro / 1e6;
  return dollars !== 0 && Math.abs(dollars) < 0.01 ? `$${dollars.toFixed(4)}` : `$${dollars.toFixed(2)}`;
}

const count = (n: number) => n.toLocaleString("en-US");

export interface UsagePanelProps {
  client: Wick;
  /** Changes when a run starts or ends, so the panel reads again. */
  running: boolean;
  onError: (err: unknown) => void;
}

export function UsagePanel({ client, running, onError }: UsagePanelProps) {
  const [usage, setUsage] = useState<Usage>();
  const load = useCallback(async () => {
    try {
      setUsage(await client.getUsage());
    } catch (err) {
      onError(err);
    }
  }, [client, onError]);
  useEffect(() => {
    void load();
  }, [load, running]);

  if (!usage) return <p className="wp-empty">Reading your usage…</p>;
  const b = usage.budget;
  const tokens = Number(b.tokens);
  const tokenBudget = Number(b.token_budget);
  const cost = Number(b.cost_micro_usd);
  const costBudget = Number(b.cost_budget_micro_usd);
  const lines = usageLines(usage);
  return (
    <div className="wp-usage">
      <p className="wp-usage-month" data-testid="usage-month">
        <strong>{b.month}</strong>: {count(tokens)} tokens
        {tokenBudget > 0 && <> of {count(tokenBudget)}</>}, {usd(cost)}
        {costBudget > 0 && <> of {usd(costBudget)}</>}
        {(tokenBudget > 0 || costBudget > 0) && <span className="wp-muted"> · resets {b.resets}</span>}
      </p>
      {lines.length === 0 ? (
        <p className="wp-empty">No model calls this month.</p>
      ) : (
        <table className="wp-usage-table">
          <thead>
            <tr>
              <th scope="col">Day</th>
              <th scope="col">Model</th>
              <th scope="col">Calls</th>
              <th scope="col">Input</th>
              <th scope="col">Output</th>
              <th scope="col">Cost</th>
            </tr>
          </thead>
          <tbody>
            {lines.map((l) => (
              <tr key={`${l.day} ${l.model}`} data-testid="usage-line">
                <td>{l.day}</td>
                <td>
                  <code>{l.model}</code>
                </td>
                <td>{count(l.calls)}</td>
                <td>{count(l.input)}</td>
                <td>{count(l.output)}</td>
                <td>{usd(l.costMicroUsd)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

export default UsagePanel;
