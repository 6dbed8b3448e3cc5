// The page's URL names the open agent and thread, so that a reload or a
// link reopens them: #/agents/{agent_id}/threads/{thread_id}.

export interface Route {
  agentId?: string;
  threadId?: string;
}

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter((p) => p !== "");
  const out: Route = {};
  if (parts[0] === "agents" && parts[1]) {
    out.agentId = safeDecode(parts[1]);
    if (parts[2] === "threads" && parts[3]) out.threadId = safeDecode(parts[3]);
  }
  return out;
}

export function formatRoute(r: Route): string {
  if (!r.agentId) return "#/";
  const a = `#/agents/${encodeURIComponent(r.agentId)}`;
  return r.threadId ? `${a}/threads/${encodeURIComponent(r.threadId)}` : a;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
