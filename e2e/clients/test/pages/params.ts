// What a test page is told by its query string: where Wick is, whose token
// to send and which agent to run.

export type PageParams = { wick: string; token: string; agent: string };

export function pageParams(): PageParams {
  const q = new URLSearchParams(window.location.search);
  const get = (k: string): string => {
    const v = q.get(k);
    if (!v) throw new Error(`the page needs the query parameter ${k}`);
    return v;
  };
  return { wick: get("wick"), token: get("token"), agent: get("agent") };
}
