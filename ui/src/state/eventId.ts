// Event ids are positions in a run's log, "<ms>-<seq>" (the form of Redis
// stream ids, services/agent/internal/runs). They order numerically, not as
// strings: "10-0" comes after "9-0".

/** The parsed parts of an event id; undefined when id is not of the form. */
function parse(id: string): [number, number] | undefined {
  const m = /^(\d+)-(\d+)$/.exec(id);
  if (!m) return undefined;
  return [Number(m[1]), Number(m[2])];
}

/**
 * compareEventIds orders two event ids: negative when a comes first. ""
 * (before every event) comes first; ids of another form compare as strings
 * after the well-formed ones so that the order is still total.
 */
export function compareEventIds(a: string, b: string): number {
  if (a === b) return 0;
  if (a === "") return -1;
  if (b === "") return 1;
  const pa = parse(a);
  const pb = parse(b);
  if (pa && pb) return pa[0] - pb[0] || pa[1] - pb[1];
  if (pa) return -1;
  if (pb) return 1;
  return a < b ? -1 : 1;
}
