import { shapeRows } from "../reads/event-read";
import { SHAPE_SELECT, type ShapeRow } from "../reads/event-shape";

/** How long a retried Idempotency-Key returns the first result. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface IdempotentHit {
  /** SHA-256 of the body the key was first used with; null for keys stored before bodies were kept. */
  requestHash: string | null;
  rows: ShapeRow[];
}

/** The events a key appended within the window, in chain order; null when the key is new. */
export async function findIdempotent(db: D1Database, projectId: string, key: string): Promise<IdempotentHit | null> {
  const since = new Date(Date.now() - IDEMPOTENCY_WINDOW_MS).toISOString();
  const hit = await db
    .prepare("SELECT event_ids, request_hash FROM idempotency_keys WHERE project_id = ? AND key = ? AND created_at > ?")
    .bind(projectId, key, since)
    .first<{ event_ids: string; request_hash: string | null }>();
  if (!hit) return null;
  const rows = await shapeRows(db, {
    sql: `SELECT ${SHAPE_SELECT} FROM events e WHERE e.project_id = ? AND e.id IN (SELECT value FROM json_each(?)) ORDER BY e.seq`,
    params: [projectId, hit.event_ids],
  });
  return { requestHash: hit.request_hash, rows };
}
