import { scrubArchived } from "../model/pending-erasures";
import { idMillis, idTag, tagOfId } from "../model/event-id";
import { LACKS_IDS, ownerOf, segmentHolding, seqsOf } from "./archive-ids";
import { ArchiveDamagedError, type ArchivedRow, type Segment } from "./archive-segments";
import { readListed } from "./archive-walk";
import { element, ID_FORMAT, joinedSummary, SUMMARY_JOIN_COLUMNS, summaryJoin, type SummaryJoined } from "./archive-summary";
import { SummaryProbe } from "./summary-probe";

/** Receive-time slack either side of an id's millisecond (clock skew between the id and received_at). */
const SLACK_MS = 60_000;

/**
 * The most segments one query names for a millisecond. A commit seals its
 * events (at most 1,000) with one receive time, so one millisecond spans one
 * or two segments of 2,000, a few at most; a fuller answer asks again for more.
 */
const LOCATED_PAGE = 8;

/**
 * The located segments (model/event-id.ts) of a project, or by tag of any
 * project, whose receive range holds this millisecond: those ending at or
 * after it, earliest first, that begin at or before it (the inner LIMIT
 * bounds what an unknown id costs to one short index read). Their summaries
 * (archive-summary.ts, ids since format 2) leave the one holding the ids when
 * several share the millisecond (a commit that straddled two segments), and
 * none for an id no event has; a false positive costs a read.
 */
async function locatedSegments(env: Env, db: D1Database, by: { projectId: string } | { tag: number }, ms: number, ids: readonly string[]): Promise<Segment[]> {
  const at = new Date(ms).toISOString();
  const where = "projectId" in by ? "project_id = ?1 AND id_tag IS NOT NULL" : "id_tag = ?1";
  const probe = new SummaryProbe(env, [ids.map((id) => element("id", id))], [ID_FORMAT]);
  for (let limit = LOCATED_PAGE; ; limit *= 4) {
    const { results } = await db
      .prepare(
        `SELECT s.*, ${SUMMARY_JOIN_COLUMNS} FROM (SELECT * FROM archive_segments WHERE ${where} AND last_received_at >= ?2 ` +
          `ORDER BY last_received_at, first_seq LIMIT ?3) s ${summaryJoin()}WHERE s.first_received_at <= ?2`,
      )
      .bind("projectId" in by ? by.projectId : by.tag, at, limit)
      .all<Segment & SummaryJoined>();
    if (results.length === limit) continue;
    const kept: Segment[] = [];
    for (const row of results) if (await probe.admits(joinedSummary(row))) kept.push(row);
    return kept;
  }
}

/** The project's located segments that may hold these ids (one query per distinct millisecond: a batch's ids share one). */
async function locatedHolding(env: Env, db: D1Database, projectId: string, ids: readonly string[]): Promise<Segment[]> {
  const tag = await idTag(projectId);
  const byTime = new Map<number, string[]>();
  for (const id of ids) {
    const ms = idMillis(id);
    if (ms === null || tagOfId(id) !== tag) continue;
    const same = byTime.get(ms);
    if (same) same.push(id);
    else byTime.set(ms, [id]);
  }
  return (await Promise.all([...byTime].map(([ms, same]) => locatedSegments(env, db, { projectId }, ms, same)))).flat();
}

/**
 * Reads segments in seq order until every wanted id is found (taking them out
 * of `wanted`). A candidate can share its millisecond with the one holding an
 * id, so a damaged one is noted, not thrown: it fails the lookup only if an
 * id stays unfound (foundOrDamaged), since it may have been there.
 */
async function readUntilFound(env: Env, db: D1Database, segments: Iterable<Segment>, wanted: Set<string>, earlier: ArchiveDamagedError | null = null) {
  const found: ArchivedRow[] = [];
  let damage = earlier;
  for (const segment of [...segments].sort((x, y) => x.first_seq - y.first_seq)) {
    if (wanted.size === 0) break;
    try {
      for (const row of await readListed(env, db, segment)) if (row.project_id === segment.project_id && wanted.delete(row.id)) found.push(row);
    } catch (error) {
      if (!(error instanceof ArchiveDamagedError)) throw error;
      damage ??= error;
    }
  }
  return { found, damage };
}

/** The rows found, unless an id stayed unfound where a damaged segment may have held it. */
function foundOrDamaged({ found, damage }: { found: ArchivedRow[]; damage: ArchiveDamagedError | null }, wanted: Set<string>): ArchivedRow[] {
  if (damage && wanted.size > 0) throw damage;
  return found;
}

/**
 * Archived events of one project by id, in seq order. A located id's time
 * names the one segment whose receive range holds it (model/event-id.ts); for
 * an older id the shard's id index (archive-ids.ts) names its seq. So only the
 * segments holding them are read, each once (readListed: one rewritten
 * meanwhile is read as it is now). Segments sealed before the index, until
 * the archiver has indexed them, are looked at only for ids still unfound:
 * by the receive-time range that holds an id's millisecond (ids are UUIDv7
 * minted on receipt). A damaged segment that may hold one throws
 * ArchiveDamagedError.
 */
export async function archivedEventsById(env: Env, db: D1Database, projectId: string, ids: readonly string[]): Promise<ArchivedRow[]> {
  if (ids.length === 0) return [];
  const wanted = new Set(ids);
  // A located id, or an indexed older one, at once; then, for what is left, a segment sealed before the index.
  const [seqs, located] = await Promise.all([seqsOf(db, projectId, ids), locatedHolding(env, db, projectId, ids)]);
  const segments = new Map<number, Segment>(located.map((s) => [s.first_seq, s]));
  if (seqs.size > 0) for (const segment of await segmentsHolding(db, projectId, [...seqs.values()])) segments.set(segment.first_seq, segment);
  const first = await readUntilFound(env, db, segments.values(), wanted);
  let found = first.found;
  let damage = first.damage;
  if (wanted.size > 0) {
    const unread = (await legacySegments(db, projectId, [...wanted])).filter((s) => !segments.has(s.first_seq));
    const more = await readUntilFound(env, db, unread, wanted, damage);
    [found, damage] = [found.concat(more.found).sort((a, b) => a.seq - b.seq), more.damage];
  }
  // Rows an erasure still being applied covers come back scrubbed (src/model/pending-erasures.ts).
  return scrubArchived(db, projectId, foundOrDamaged({ found, damage }, wanted));
}

/** One archived event of the project by id, or null (get, receipts). */
export async function archivedEvent(env: Env, db: D1Database, projectId: string, id: string): Promise<ArchivedRow | null> {
  return (await archivedEventsById(env, db, projectId, [id]))[0] ?? null;
}

/**
 * Whose archived event an id is on this shard, and the event: what a public
 * receipt looks up, knowing no project. A located id's tag and time name its
 * project's one segment holding that millisecond; an older id's index entry
 * names one project and one seq. Either way one project's one segment is
 * read, no other project's data is, and an id no segment's range holds reads
 * no segment at all. `owns` says
 * whether the project lives on this shard now (an entry left behind by a
 * move is not its event).
 */
export async function archivedEventAnywhere(env: Env, db: D1Database, id: string, owns: (projectId: string) => Promise<boolean>): Promise<ArchivedRow | null> {
  const ms = idMillis(id);
  const [entry, located] = await Promise.all([ownerOf(db, id), ms === null ? [] : locatedSegments(env, db, { tag: tagOfId(id) }, ms, [id])]);
  const candidates: Segment[] = [];
  if (entry && (await owns(entry.project_id))) {
    const segment = await segmentHolding(db, entry.project_id, entry.seq);
    if (segment) candidates.push(segment);
  }
  // Two projects share a tag about once in 4 billion pairs: then the other's segments of that millisecond are read too, and hold no such id.
  for (const segment of located) if (await owns(segment.project_id)) candidates.push(segment);
  const wanted = new Set([id]);
  return foundOrDamaged(await readUntilFound(env, db, candidates, wanted), wanted)[0] ?? null;
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
