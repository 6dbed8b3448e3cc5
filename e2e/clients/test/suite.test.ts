import { describe, expect, it } from "vitest";

import { headers, url } from "./helpers.js";

// The harness itself: the suite is up and answers its users, and only them.
describe("the suite under test", () => {
  it("lists the agent templates to a user", async () => {
    const res = await fetch(`${url}/agents`, { headers: headers("alice") });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { agents?: { agent_id: string }[] };
    expect(body.agents?.map((a) => a.agent_id)).toContain("default");
  });
  it("refuses a request without a token", async () => {
    const res = await fetch(`${url}/agents`);
    expect(res.status).toBe(401);
  });
});
