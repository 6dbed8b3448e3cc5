import { cleanup, render, screen, within } from "@testing-library/react";
import type { Wick } from "@wick-agent/sdk";
import { afterEach, describe, expect, it, vi } from "vitest";

import { AgentSettings } from "./Agents";

afterEach(cleanup);

/** A fake of the two reads AgentSettings makes: the agent's sandbox and its skills. */
function fakeClient(skills: unknown) {
  const GET = vi.fn(async (route: string) =>
    route === "/agents/skills/available" ? { data: skills } : { data: { agent: { agent_id: "default", sandbox_state: "running" } } },
  );
  return { api: { GET } } as unknown as Wick;
}

function renderSettings(skills: unknown) {
  render(
    <AgentSettings
      client={fakeClient(skills)}
      agent={{ agent_id: "default", backend: { type: "local" }, skills: { paths: ["/workspace/skills"] } }}
      onChanged={() => {}}
      onError={(err) => {
        throw err;
      }}
    />,
  );
}

describe("AgentSettings skills", () => {
  it("lists the skills and, with their warning, the SKILL.md files that were not loaded", async () => {
    renderSettings({
      skills: [{ name: "csv-analyzer", description: "Use when the user gives you a CSV", path: "/workspace/skills/csv-analyzer/SKILL.md" }],
      problems: [
        { path: "/workspace/skills/Bad Name/SKILL.md", warning: 'not loaded: name "Bad Name" is not a folder-safe name' },
        { path: "/workspace/skills/notes/SKILL.md", warning: "not loaded: no YAML front matter (--- … ---) at the top of the file" },
      ],
    });
    const list = await screen.findByTestId("skills-list");
    await within(list).findByText("csv-analyzer");
    const problems = within(list).getAllByTestId("skill-problem");
    expect(problems.map((p) => p.textContent)).toEqual([
      '⚠ /workspace/skills/Bad Name/SKILL.md not loaded: name "Bad Name" is not a folder-safe name',
      "⚠ /workspace/skills/notes/SKILL.md not loaded: no YAML front matter (--- … ---) at the top of the file",
    ]);
    expect(within(list).queryByText("No skills found.")).toBeNull();
  });

  it("says no skills were found beside the problems when none loaded", async () => {
    renderSettings({ skills: [], problems: [{ path: "/workspace/skills/x/SKILL.md", warning: "not loaded: no YAML front matter" }] });
    const list = await screen.findByTestId("skills-list");
    await within(list).findByText("No skills found.");
    expect(within(list).getByTestId("skill-problem").textContent).toContain("not loaded: no YAML front matter");
  });
});

describe("AgentSettings skills after a run started the sandbox", () => {
  it("lists them again once the sandbox runs", async () => {
    // The sandbox is created by the run: stopped (none) before, running after.
    let sandbox = "";
    const GET = vi.fn(async (route: string) => {
      if (route === "/agents/skills/available") {
        return sandbox === "running"
          ? { data: { skills: [{ name: "csv-analyzer", description: "Analyse a CSV", path: "/workspace/skills/csv-analyzer/SKILL.md" }] } }
          : { data: { skills: [], not_running_agent_ids: ["default"] } };
      }
      return { data: { agent: { agent_id: "default", sandbox_state: sandbox } } };
    });
    const client = { api: { GET } } as unknown as Wick;
    const agent = { agent_id: "default", backend: { type: "docker" }, skills: { paths: ["/workspace/skills"] } };
    const onError = (err: unknown) => {
      throw err;
    };
    const props = { client, agent, onChanged: () => {}, onError };
    const { rerender } = render(<AgentSettings {...props} running={false} />);
    const list = await screen.findByTestId("skills-list");
    await within(list).findByText("The sandbox is not running: its skills show once it starts.");

    rerender(<AgentSettings {...props} running={true} />);
    sandbox = "running";
    rerender(<AgentSettings {...props} running={false} />);
    await within(list).findByText("csv-analyzer");
  });
});

describe("AgentSettings sandbox controls", () => {
  function renderWithState(state: string) {
    const GET = vi.fn(async (route: string) =>
      route === "/agents/skills/available" ? { data: { skills: [] } } : { data: { agent: { agent_id: "default", sandbox_state: state } } },
    );
    render(<AgentSettings client={{ api: { GET } } as unknown as Wick} agent={{ agent_id: "default", backend: { type: "local" } }} onChanged={() => {}} onError={() => {}} />);
  }

  it("offers neither Stop nor Restart for a sandbox not started yet", async () => {
    renderWithState("none");
    await within(await screen.findByTestId("container-state")).findByText("not started");
    expect((screen.getByTestId("container-stop") as HTMLButtonElement).disabled).toBe(true);
    expect((screen.getByTestId("container-restart") as HTMLButtonElement).disabled).toBe(true);
  });

  it("offers both for a running one", async () => {
    renderWithState("running");
    await within(await screen.findByTestId("container-state")).findByText("running");
    expect((screen.getByTestId("container-stop") as HTMLButtonElement).disabled).toBe(false);
    expect((screen.getByTestId("container-restart") as HTMLButtonElement).disabled).toBe(false);
  });
});
