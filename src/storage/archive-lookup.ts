import { readSegment, type ArchivedRow, type Segment } from "./archive-segments";

/** Receive-time slack either side of an id's millisecond (clock skew between the id and received_at). */
const SLACK_MS = 60_000;

/** The millisecond a UUIDv7 was minted, or null for anything else. */
function idMillis(id: string): number | null {
  const ms = parseInt(id.replace(/-/g, "").slice(0, 12), 16);
  return /^[0-9a-f-]{36}$/i.test(id) && Number.isFinite(ms) ? ms : null;
}

/**
 * Archived events by id, in seq order. Ids are UUIDv7 minted when the event
 * was received, so only segments whose receive-time range holds one of the
 * ids' milliseconds are read, each once however many ids it holds. Without a
 * project (public receipts), every project's segments of that time on this shard.
 */
export async function archivedEventsById(env: Env, db: D1Database, projectId: string | null, ids: readonly string[]): Promise<ArchivedRow[]> {
  const times = ids.map(idMillis).filter((ms): ms is number => ms !== null);
  if (times.length === 0) return [];
  const { results } = await db
    .prepare("SELECT * FROM archive_segments WHERE (?1 IS NULL OR project_id = ?1) AND first_received_at <= ?2 AND last_received_at >= ?3 ORDER BY first_seq")
    .bind(projectId, new Date(Math.max(...times) + SLACK_MS).toISOString(), new Date(Math.min(...times) - SLACK_MS).toISOString())
    .all<Segment>();
  const wanted = new Set(ids);
  const found: ArchivedRow[] = [];
  for (const segment of results) {
    for (const row of await readSegment(env, segment)) {
      if (!wanted.delete(row.id)) continue;
      found.push(row);
      if (wanted.size === 0) return found;
    }
  }
  return found;
}

/** One archived event by id, or null (get, receipts). */
export async function archivedEvent(env: Env, db: D1Database, projectId: string | null, id: string): Promise<ArchivedRow | null> {
  return (await archivedEventsById(env, db, projectId, [id]))[0] ?? null;
}
