import type { EventRow } from "../db/schema";

/** How long a retried Idempotency-Key returns the first result. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

/** The events a key appended within the window, in chain order; null when the key is new. */
export async function findIdempotent(db: D1Database, projectId: string, key: string): Promise<EventRow[] | null> {
  const since = new Date(Date.now() - IDEMPOTENCY_WINDOW_MS).toISOString();
  const hit = await db
    .prepare("SELECT event_ids FROM idempotency_keys WHERE project_id = ? AND key = ? AND created_at > ?")
    .bind(projectId, key, since)
    .first<{ event_ids: string }>();
  if (!hit) return null;
  const { results } = await db
    .prepare("SELECT * FROM events WHERE project_id = ? AND id IN (SELECT value FROM json_each(?)) ORDER BY seq")
    .bind(projectId, hit.event_ids)
    .all<EventRow>();
  return results;
}
