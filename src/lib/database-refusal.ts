/**
 * D1 refusals that say "not now", told apart from real faults by their
 * documented messages, so the service answers 429 with Retry-After (nothing
 * stored, come back later) instead of a 500.
 *
 * - A database at its size limit refuses every write with
 *   `D1_ERROR: Exceeded maximum DB size` (an account at its storage limit,
 *   `Exceeded maximum account storage ...`). SQLite's own SQLITE_FULL
 *   (`database or disk is full`), which Durable Object storage reports at its
 *   limit, means the same. Witness keeps shards under their mark (the
 *   high-water mark, pressure archiving: src/storage/shard-pressure.ts), so a
 *   full shard is a state that archiving is already resolving, not a bug.
 * - An overloaded database refuses queued queries:
 *   `D1 DB is overloaded. Requests queued for too long.` and
 *   `... Too many requests queued.`
 *
 * Source: Cloudflare's D1 error list (developers.cloudflare.com/d1/observability/debug-d1/).
 * The messages cross Durable Object RPC as the error's message, so matching
 * text is the one test that works wherever the error was thrown.
 */
export interface DatabaseRefusal {
  reason: "storage_full" | "database_overloaded";
  /** Seconds before a retry can help. */
  retryAfter: number;
}

/** Archiving a full shard's oldest segment takes a minute or so; retrying sooner only adds load. */
const FULL_RETRY_AFTER = 60;
/** Seconds an overloaded database or Durable Object is given: their queues drain in seconds. */
export const OVERLOADED_RETRY_AFTER = 5;

const FULL = /Exceeded maximum DB size|Exceeded maximum account storage|database or disk is full|SQLITE_FULL/;
const OVERLOADED = /D1 DB is overloaded/;

/** The refusal an error stands for, or null when it is a fault like any other. */
export function databaseRefusal(error: unknown): DatabaseRefusal | null {
  const message = error instanceof Error ? `${error.message} ${(error.cause as Error | undefined)?.message ?? ""}` : "";
  if (FULL.test(message)) return { reason: "storage_full", retryAfter: FULL_RETRY_AFTER };
  if (OVERLOADED.test(message)) return { reason: "database_overloaded", retryAfter: OVERLOADED_RETRY_AFTER };
  return null;
}

/**
 * Whether Cloudflare's runtime refused a call to a Durable Object whose inbox
 * is too long (`.overloaded`): the call never reached it, so nothing ran.
 */
export function isOverloaded(error: unknown): boolean {
  return error instanceof Error && (error as { overloaded?: unknown }).overloaded === true;
}
