// Counts and times in words, as the lists show them.

const pluralRules = new Intl.PluralRules("en-US");

/** counted is "1 chunk", "2 chunks": the noun agrees with the count. */
export function counted(n: number | undefined, one: string, other: string): string {
  const v = n ?? 0;
  return `${v.toLocaleString("en-US")} ${pluralRules.select(v) === "one" ? one : other}`;
}

const relative = new Intl.RelativeTimeFormat("en-US", { numeric: "auto" });

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * relativeTime says how long ago when was, as of now: "just now", "5
 * minutes ago", "3 hours ago", "yesterday", "4 days ago"; past a week the
 * date itself ("Mar 4", with the year when it is not this one's).
 */
export function relativeTime(when: Date, now: Date): string {
  const ago = now.getTime() - when.getTime();
  if (ago < MINUTE) return "just now";
  if (ago < HOUR) return relative.format(-Math.floor(ago / MINUTE), "minute");
  const days = calendarDaysBetween(when, now);
  if (days === 0) return relative.format(-Math.floor(ago / HOUR), "hour");
  if (days < 7) return relative.format(-days, "day");
  return when.toLocaleDateString("en-US", {
    month: "short",
    day: "numeric",
    ...(when.getFullYear() === now.getFullYear() ? {} : { year: "numeric" }),
  });
}

/** fullTime is the date and time in full, for a tooltip. */
export function fullTime(when: Date): string {
  return when.toLocaleString("en-US", { dateStyle: "full", timeStyle: "short" });
}

/** The date groups of a list, newest first. */
export const DATE_GROUPS = ["Today", "Yesterday", "Previous 7 days", "Older"] as const;
export type DateGroup = (typeof DATE_GROUPS)[number];

/** dateGroup puts when in its group by local calendar day, as of now; a time in the future counts as today. */
export function dateGroup(when: Date, now: Date): DateGroup {
  const days = calendarDaysBetween(when, now);
  if (days <= 0) return "Today";
  if (days === 1) return "Yesterday";
  if (days <= 7) return "Previous 7 days";
  return "Older";
}

/** calendarDaysBetween counts the midnights (local time) from a to b. */
function calendarDaysBetween(a: Date, b: Date): number {
  const dayA = new Date(a.getFullYear(), a.getMonth(), a.getDate());
  const dayB = new Date(b.getFullYear(), b.getMonth(), b.getDate());
  // Round: a day across a daylight-saving change is 23 or 25 hours long.
  return Math.round((dayB.getTime() - dayA.getTime()) / DAY);
}
