import { scrubArchived } from "../model/pending-erasures";
import { LACKS_IDS, ownerOf, segmentHolding, seqsOf } from "./archive-ids";
import { ArchiveDamagedError, type ArchivedRow, type Segment } from "./archive-segments";
import { readListed } from "./archive-walk";

/** Receive-time slack either side of an id's millisecond (clock skew between the id and received_at). */
const SLACK_MS = 60_000;

/** The millisecond a UUIDv7 was minted, or null for anything else. */
function idMillis(id: string): number | null {
  const ms = parseInt(id.replace(/-/g, "").slice(0, 12), 16);
  return /^[0-9a-f-]{36}$/i.test(id) && Number.isFinite(ms) ? ms : null;
}

/**
 * Archived events of one project by id, in seq order. The shard's id index
 * (archive-ids.ts) names each id's seq, so only the segments holding them are
 * read, each once (readListed: one rewritten meanwhile is read as it is
 * now). Segments sealed before the index, until the archiver has indexed
 * them, are found as before: by the receive-time range that holds an id's
 * millisecond (ids are UUIDv7 minted on receipt). A damaged segment throws
 * ArchiveDamagedError.
 */
export async function archivedEventsById(env: Env, db: D1Database, projectId: string, ids: readonly string[]): Promise<ArchivedRow[]> {
  if (ids.length === 0) return [];
  const seqs = await seqsOf(db, projectId, ids);
  const segments = new Map<number, Segment>();
  for (const segment of await segmentsHolding(db, projectId, [...seqs.values()])) segments.set(segment.first_seq, segment);
  const unindexed = ids.filter((id) => !seqs.has(id));
  for (const segment of await legacySegments(db, projectId, unindexed)) segments.set(segment.first_seq, segment);
  const wanted = new Set(ids);
  const found: ArchivedRow[] = [];
  for (const segment of [...segments.values()].sort((a, b) => a.first_seq - b.first_seq)) {
    for (const row of await readListed(env, db, segment)) if (row.project_id === projectId && wanted.delete(row.id)) found.push(row);
  }
  // Rows an erasure still being applied covers come back scrubbed (src/model/pending-erasures.ts).
  return scrubArchived(db, projectId, found);
}

/** One archived event of the project by id, or null (get, receipts). */
export async function archivedEvent(env: Env, db: D1Database, projectId: string, id: string): Promise<ArchivedRow | null> {
  return (await archivedEventsById(env, db, projectId, [id]))[0] ?? null;
}

/**
 * Whose archived event an id is on this shard, and the event: what a public
 * receipt looks up, knowing no project. The id index names one project and
 * one seq: that project's one segment is read, no other project's data is,
 * and an id that was never archived reads no segment at all. `owns` says
 * whether the project lives on this shard now (an entry left behind by a
 * move is not its event).
 */
export async function archivedEventAnywhere(env: Env, db: D1Database, id: string, owns: (projectId: string) => Promise<boolean>): Promise<ArchivedRow | null> {
  const entry = await ownerOf(db, id);
  if (!entry || !(await owns(entry.project_id))) return null;
  const segment = await segmentHolding(db, entry.project_id, entry.seq);
  if (!segment) return null;
  return (await readListed(env, db, segment)).find((r) => r.id === id && r.project_id === entry.project_id) ?? null;
}

/**
 * The public lookup's fallback for segments sealed before the id index, until
 * the archiver has indexed them all (a transition, not a steady state): every
 * unindexed segment of this shard whose receive-time range holds the id's
 * millisecond. Its project is unknown, so a damaged one is skipped rather than
 * failing a lookup that may well be for another project's event.
 */
export async function legacyEventAnywhere(env: Env, db: D1Database, id: string, owns: (projectId: string) => Promise<boolean>): Promise<ArchivedRow | null> {
  for (const segment of await legacySegments(db, null, [id])) {
    let rows: ArchivedRow[];
    try {
      rows = await readListed(env, db, segment);
    } catch (error) {
      if (!(error instanceof ArchiveDamagedError)) throw error;
      console.warn(`public lookup skips a damaged unindexed segment: ${error.message}`);
      continue;
    }
    const row = rows.find((r) => r.id === id);
    if (row && row.project_id === segment.project_id && (await owns(row.project_id))) return row;
  }
  return null;
}

/** The project's segments holding any of these seqs, in one query (an idempotent replay may name a thousand). */
async function segmentsHolding(db: D1Database, projectId: string, seqs: number[]): Promise<Segment[]> {
  if (seqs.length === 0) return [];
  const { results } = await db
    .prepare("SELECT * FROM archive_segments WHERE project_id = ? AND last_seq >= ? AND first_seq <= ? ORDER BY first_seq")
    .bind(projectId, Math.min(...seqs), Math.max(...seqs))
    .all<Segment>();
  return results.filter((s) => seqs.some((seq) => seq >= s.first_seq && seq <= s.last_seq));
}

/** Unindexed segments (of one project, or of all) whose receive-time range may hold one of these ids. */
async function legacySegments(db: D1Database, projectId: string | null, ids: readonly string[]): Promise<Segment[]> {
  const times = ids.map(idMillis).filter((ms): ms is number => ms !== null);
  if (times.length === 0) return [];
  const { results } = await db
    .prepare(
      `SELECT * FROM archive_segments s WHERE (?1 IS NULL OR s.project_id = ?1) AND s.first_received_at <= ?2 AND s.last_received_at >= ?3 AND ${LACKS_IDS} ORDER BY s.first_seq`,
    )
    .bind(projectId, new Date(Math.max(...times) + SLACK_MS).toISOString(), new Date(Math.min(...times) - SLACK_MS).toISOString())
    .all<Segment>();
  return results;
}
