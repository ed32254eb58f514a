/**
 * What an API key may do. The key an application sends events with sits on
 * that application's servers, so it should hold `ingest` alone: whoever
 * compromises the application must not be able to read the history back,
 * purge it, erase actors or stream it out.
 *   ingest - POST /v1/events, /v1/events/batch
 *   read   - every read: events, search, verify, exports, receipts, proofs, the log, embed tokens
 *   admin  - retention, erasure, streams, legal holds, keys, project operations; implies the others
 */
export const SCOPES = ["ingest", "read", "admin"] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** admin implies ingest and read. */
export function grants(held: readonly Scope[], needed: Scope): boolean {
  return held.includes(needed) || held.includes("admin");
}

/** The stored form (api_keys.scopes): sorted, deduplicated, comma-separated. */
export function formatScopes(scopes: readonly Scope[]): string {
  return SCOPES.filter((s) => scopes.includes(s)).join(",");
}

/** api_keys.scopes back into scopes; an unknown word grants nothing. */
export function parseStoredScopes(text: string): Scope[] {
  return text.split(",").map((s) => s.trim()).filter(isScope);
}
