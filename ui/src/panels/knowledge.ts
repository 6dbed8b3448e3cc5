// The Knowledge panel's logic: who owns a collection, what an uploaded file
// becomes, and reading the search form's numbers. The server checks all of
// it again; these only keep a request that cannot succeed from being sent
// and say why next to the field.
import type { Collection } from "@wick-agent/sdk";

/** The search form's bounds (SearchKnowledgeRequest: k 1..100, min_score 0..1). */
export const MAX_K = 100;
export const DEFAULT_K = 5;

/** The longest document id the server takes (KnowledgeDocument.document). */
const MAX_DOCUMENT_ID_BYTES = 128;

/** ownerLabel says whose a collection is: "you", or the organisation's name. */
export function ownerLabel(c: Pick<Collection, "org">): string {
  return c.org === "" ? "you" : `org ${c.org}`;
}

/** organisations are the organisations the listed collections belong to, for the create form's suggestions. */
export function organisations(cs: readonly Pick<Collection, "org">[]): string[] {
  return [...new Set(cs.map((c) => c.org).filter((o) => o !== ""))].sort();
}

/** A form field read: the value to send (undefined: leave it to the server), or why it cannot be sent. */
export type Field<T> = { value: T | undefined; error?: undefined } | { value?: undefined; error: string };

/** parseK reads the "k" field: empty means the server's default. */
export function parseK(text: string): Field<number> {
  const t = text.trim();
  if (t === "") return { value: undefined };
  const n = Number(t);
  if (!Number.isInteger(n) || n < 1 || n > MAX_K) return { error: `k is a whole number from 1 to ${MAX_K}` };
  return { value: n };
}

/** parseMinScore reads the "min score" field: empty means the collection's default. */
export function parseMinScore(text: string): Field<number> {
  const t = text.trim();
  if (t === "") return { value: undefined };
  const n = Number(t);
  if (!Number.isFinite(n) || n < 0 || n > 1) return { error: "the min score is a number from 0 to 1" };
  return { value: n };
}

/**
 * documentIdOf is the document id of an uploaded file: its name with every
 * character the server does not take in an id (letters, digits, '.', '-',
 * '_') turned into '_', and no leading dot (".." would be a path in the
 * URL that deletes it), so that uploading the file again replaces it.
 */
export function documentIdOf(fileName: string): string {
  const id = fileName.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "");
  return (id || "document").slice(0, MAX_DOCUMENT_ID_BYTES);
}

/** contentTypeOf chunks .md and .markdown files by their headings, others as plain text. */
export function contentTypeOf(fileName: string): "markdown" | "text" {
  return /\.(md|markdown)$/i.test(fileName) ? "markdown" : "text";
}

/** formatScore shows a cosine similarity with two decimals. */
export function formatScore(score: number): string {
  return score.toFixed(2);
}
