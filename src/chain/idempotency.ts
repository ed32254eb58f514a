
import { SHAPE_SELECT, type ShapeRow } from "../model/event-shape";
import { archivedEventsById } from "../storage/archive-lookup";
import { shapeRows } from "../model/event-shape";
import { eventsByIdStatement } from "../model/event-lookup";
import { overArms } from "../model/periods";

/** How long a retried Idempotency-Key returns the first result. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface IdempotentHit {
  /** SHA-256 of the body the key was first used with; null for keys stored before bodies were kept. */
  requestHash: string | null;
  rows: ShapeRow[];
}

/**
 * The events a key appended within the window, in chain order; null when the
 * key is new. With a short hot window (tiering at 0 days) they may already be
 * in the cold archive: a replay answers with them wherever they are.
 */
export async function findIdempotent(env: Env, db: D1Database, projectId: string, key: string): Promise<IdempotentHit | null> {
  const since = new Date(Date.now() - IDEMPOTENCY_WINDOW_MS).toISOString();
  const hit = await db
    .prepare("SELECT event_ids, request_hash FROM idempotency_keys WHERE project_id = ? AND key = ? AND created_at > ?")
    .bind(projectId, key, since)
    .first<{ event_ids: string; request_hash: string | null }>();
  if (!hit) return null;
  const ids: string[] = JSON.parse(hit.event_ids);
  // Hot, each is in one of the shard's arms (model/periods.ts).
  const byId = eventsByIdStatement(SHAPE_SELECT, ids, projectId);
  const rows: ShapeRow[] = (await overArms(db, (arm) => shapeRows(arm, byId))).flat();
  if (rows.length < ids.length) {
    const hot = new Set(rows.map((r) => r.id));
    rows.push(...(await archivedEventsById(env, db, projectId, ids.filter((id) => !hot.has(id)))));
  }
  rows.sort((a, b) => a.seq - b.seq);
  return { requestHash: hit.request_hash, rows };
}
