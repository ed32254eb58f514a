import { SHAPE_SELECT, shapeRows, type ShapeRow } from "../model/event-shape";

/**
 * Whether an append whose answer never came back landed anyway.
 *
 * The ledger stores a commit in one D1 batch, then answers. When the runtime
 * stops it in between (a deploy resets the object, the machine goes away), the
 * worker's call fails although the events are stored, and answering "nothing
 * was stored, safe to retry" would make the client's retry store them twice.
 * So every append carries a name the worker made up (a random token), which
 * the commit keeps on its span row (migrations/0032_named_appends.sql: bytes,
 * no row of its own), and a worker whose call failed looks for it here: found,
 * the append is answered as stored, with its events; not found, it did not
 * land and the failure stands.
 */

/** How far before the worker's own clock a commit's received_at may lie: the ledger runs on another machine's clock. */
const CLOCK_SKEW_MS = 30_000;

/**
 * The events of the append named `token`, in chain order, or null when no
 * commit since `sentAtMs` (the worker's clock when it called the ledger)
 * holds it. Reads the spans of the shard's commits since then (their key
 * starts with received_at), then the append's seq range.
 */
export async function findLandedAppend(db: D1Database, projectId: string, token: string, sentAtMs: number): Promise<ShapeRow[] | null> {
  const since = new Date(sentAtMs - CLOCK_SKEW_MS).toISOString();
  const hit = await db
    .prepare(
      "SELECT j.value ->> 1 AS first, j.value ->> 2 AS last FROM commit_spans c, json_each(c.appends) j " +
        "WHERE c.received_at >= ?1 AND c.project_id = ?2 AND c.appends IS NOT NULL AND j.value ->> 0 = ?3",
    )
    .bind(since, projectId, token)
    .first<{ first: number; last: number }>();
  if (!hit) return null;
  return shapeRows(db, {
    sql: `SELECT ${SHAPE_SELECT} FROM events e WHERE e.project_id = ? AND e.seq BETWEEN ? AND ? ORDER BY e.seq`,
    params: [projectId, hit.first, hit.last],
  });
}
