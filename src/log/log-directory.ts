import { TtlCache } from "../lib/ttl-cache";

/**
 * Which project a public log address belongs to, from the control database.
 * A log id never changes and never moves to another project, so an isolate
 * keeps what it found for long; unknown ids are remembered briefly, so a
 * scan of made-up ids costs one query per id a minute, not one per request.
 * The database only routes: the ledger it names refuses an address that is
 * not its own log's (someone changed log_id), and the answer is forgotten.
 */
const known = new TtlCache<string>(60 * 60 * 1000);
const unknown = new TtlCache<true>(60 * 1000);

/**
 * Where a full tile lives in the LOGS bucket; `path` is its tlog-tiles path.
 * The tiles route stores each full tile there on its first read, and serves
 * it from there after checking it (published-tiles.ts); the ledger's alarm
 * moves old full tiles there too (tile-offload.ts), which then leave its
 * storage. Never written in the commit itself: that put, one per 256 events,
 * cost batch ingest ~10% here (local R2 runs on the same thread).
 */
export const tileObjectKey = (logId: string, path: string) => `tiles/${logId}/${path}`;

/** Log ids are 32 lowercase hex digits (migration 0006, createProject); anything else is not one. */
export const LOG_ID = /^[0-9a-f]{32}$/;

export async function projectOfLog(env: Pick<Env, "DB">, logId: string): Promise<string | null> {
  if (!LOG_ID.test(logId)) return null;
  const hit = known.get(logId);
  if (hit !== undefined) return hit;
  if (unknown.get(logId)) return null;
  const row = await env.DB.prepare("SELECT id FROM projects WHERE log_id = ?").bind(logId).first<{ id: string }>();
  if (!row) {
    unknown.set(logId, true);
    return null;
  }
  known.set(logId, row.id);
  return row.id;
}

/** Drops what this isolate remembers of an address the ledger refused, so the next request reads the database again. */
export function forgetLogAddress(logId: string): void {
  known.delete(logId);
}
