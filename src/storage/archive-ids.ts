import type { ArchivedRow, Segment } from "./archive-segments";
import { rowsBySeq } from "../model/row-keys";

/**
 * Since storage v2 only for segments holding ids minted before located ids
 * (src/model/event-id.ts); a segment of located ids writes no rows here.
 *
 * The shard's index of archived event ids (archive_ids: project, seq, id;
 * migration 0011). Ids are random beyond their millisecond, so nothing in a
 * segment's index row says whether an id is inside it, nor whose it is: a
 * lookup by id alone (a public receipt) would have to read every project's
 * segments of that time. With this index it reads the one segment of the one
 * project holding the id, and nothing for an id that was never archived.
 * About 150 bytes of D1 per archived event (the row and its id index), a
 * tenth or less of what the event took while hot.
 *
 * Written with the segment's index row in the sealing transaction, deleted
 * with it when retention retires the segment (a purged row's alone when it
 * rewrites one), moved with the project, and backfilled by the archiver for
 * segments sealed before the index existed (those are "unindexed": no entry
 * in their seq range).
 */

/** The ids of events about to be sealed, copied from their hot rows (run before the rows' delete, in one batch). */
export function indexSealed(db: D1Database, projectId: string, firstSeq: number, lastSeq: number): D1PreparedStatement {
  return db
    .prepare(`INSERT OR REPLACE INTO archive_ids (project_id, seq, id) SELECT project_id, seq, id FROM ${rowsBySeq({ project: "?1", lo: "?2", hi: "?3", columns: "e.project_id, e.seq, e.id" })}`)
    .bind(projectId, firstSeq, lastSeq);
}

/** The ids of a segment's rows (backfill of a segment sealed before the index). */
export function indexRows(db: D1Database, projectId: string, rows: ArchivedRow[]): D1PreparedStatement {
  return db
    .prepare("INSERT OR REPLACE INTO archive_ids (project_id, seq, id) SELECT ?1, value ->> 0, value ->> 1 FROM json_each(?2)")
    .bind(projectId, JSON.stringify(rows.map((r) => [r.seq, r.id])));
}

/** A segment's entries, when its rows leave the archive (retention retires it, or the operator restores it). */
export function unindexRange(db: D1Database, projectId: string, firstSeq: number, lastSeq: number): D1PreparedStatement {
  return db.prepare("DELETE FROM archive_ids WHERE project_id = ? AND seq BETWEEN ? AND ?").bind(projectId, firstSeq, lastSeq);
}

/** Where each of these ids of one project was archived: id -> seq (ids not in the index are absent). */
export async function seqsOf(db: D1Database, projectId: string, ids: readonly string[]): Promise<Map<string, number>> {
  const { results } = await db
    .prepare("SELECT id, seq FROM archive_ids WHERE id IN (SELECT value FROM json_each(?1)) AND project_id = ?2")
    .bind(JSON.stringify(ids), projectId)
    .all<{ id: string; seq: number }>();
  return new Map(results.map((r) => [r.id, r.seq]));
}

/** Whose archived event an id is on this shard, or null: the public lookup's only read before its one segment. */
export function ownerOf(db: D1Database, id: string): Promise<{ project_id: string; seq: number } | null> {
  return db.prepare("SELECT project_id, seq FROM archive_ids WHERE id = ?").bind(id).first<{ project_id: string; seq: number }>();
}

/** The id of a segment's first event, or null for an unindexed segment (verify names it in an archive_damaged failure). */
export async function firstIdOf(db: D1Database, segment: Segment): Promise<string | null> {
  if (segment.first_id) return segment.first_id;
  // Not always first_seq: a segment retention rewrote keeps it as its identity after its first rows went.
  const row = await db
    .prepare("SELECT id FROM archive_ids WHERE project_id = ? AND seq BETWEEN ? AND ? ORDER BY seq LIMIT 1")
    .bind(segment.project_id, segment.first_seq, segment.last_seq)
    .first<{ id: string }>();
  return row?.id ?? null;
}

/** The project's segment holding seq, or null (segments never overlap: only the nearest one below can). */
export async function segmentHolding(db: D1Database, projectId: string, seq: number): Promise<Segment | null> {
  const segment = await db
    .prepare("SELECT * FROM archive_segments WHERE project_id = ? AND first_seq <= ? ORDER BY first_seq DESC LIMIT 1")
    .bind(projectId, seq)
    .first<Segment>();
  return segment && segment.last_seq >= seq ? segment : null;
}

/**
 * Segments sealed before the id index, without entries yet: SQL condition on
 * archive_segments aliased `s`. A segment of located ids (id_tag set) never
 * has entries and needs none. Any entry in its range counts, not only at
 * first_seq: retention may have purged a segment's first rows (archive-retention.ts).
 */
export const LACKS_IDS = "s.id_tag IS NULL AND NOT EXISTS (SELECT 1 FROM archive_ids i WHERE i.project_id = s.project_id AND i.seq BETWEEN s.first_seq AND s.last_seq)";
