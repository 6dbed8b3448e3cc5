// The new-agent form: skills on by default, the scripted models and the
// gateway's models offered for the model field.
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { makeClient } from "../api/client";
import { AgentForm, DEFAULT_SKILLS_PATH, SCRIPTED_MODELS, type Agent } from "./Agents";

function json(v: unknown, status = 200): Response {
  return new Response(JSON.stringify(v), { status, headers: { "Content-Type": "application/json" } });
}

let models: Response;

beforeEach(() => {
  models = json({ object: "list", data: [{ id: "gpt-x", object: "model", created: 0, owned_by: "openai" }, { id: "script:demo", object: "model", created: 0, owned_by: "script" }] });
  vi.stubGlobal(
    "fetch",
    vi.fn(async (req: Request) => (new URL(req.url).pathname === "/v1/models" ? models : json({ message: "no" }, 404))),
  );
});

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

function options(): string[] {
  return Array.from(screen.getByTestId("agent-form-models").querySelectorAll("option")).map((o) => o.value);
}

describe("AgentForm", () => {
  it("pre-fills the skills library and sends it", async () => {
    const created: Agent[] = [];
    render(<AgentForm onCreate={async (a) => void created.push(a)} onCancel={() => {}} />);
    expect((screen.getByTestId("agent-form-skills") as HTMLTextAreaElement).value).toBe(DEFAULT_SKILLS_PATH);
    fireEvent.change(screen.getByTestId("agent-form-id"), { target: { value: "analyst" } });
    fireEvent.change(screen.getByTestId("agent-form-model"), { target: { value: "script:showcase" } });
    fireEvent.submit(screen.getByTestId("agent-form"));
    await waitFor(() => expect(created).toHaveLength(1));
    expect(created[0]).toMatchObject({ agent_id: "analyst", model: "script:showcase", skills: { paths: ["/workspace/skills"] } });
  });

  it("offers the scripted models, then the gateway's", async () => {
    render(<AgentForm client={makeClient("http://wick.test", "t", () => {})} onCreate={async () => {}} onCancel={() => {}} />);
    expect(screen.getByTestId("agent-form-model").getAttribute("list")).toBe("agent-form-models");
    await waitFor(() => expect(options()).toEqual(["script:demo", "script:showcase", "gpt-x"]));
  });

  it("keeps the scripted models when the listing fails", async () => {
    models = json({ error: { message: "down" } }, 503);
    render(<AgentForm client={makeClient("http://wick.test", "t", () => {})} onCreate={async () => {}} onCancel={() => {}} />);
    await waitFor(() => expect(vi.mocked(fetch)).toHaveBeenCalled());
    expect(options()).toEqual(SCRIPTED_MODELS);
  });
});
