import { putSealed, resealWithCompanions, segmentObjects, type SealedSegment } from "./archive-companions";
import { readSegment, type ArchivedRow, type Segment } from "./archive-segments";
import { SEGMENT_COLUMNS } from "./shard-copy";

/**
 * Actor erasure in the cold tier, one segment at a time, in three moves so
 * the ledger's commit lock is held only for the switch:
 * 1. prepareRewrite (no lock): read the segment, scrub the covered rows
 *    exactly as a hot row is scrubbed (the commitment stays, so verify still
 *    passes), render its export companions again, and write all three objects
 *    under new keys (the old companions show what was erased);
 * 2. switchSegment (under the lock): the index row is pointed at the new
 *    objects only if it still names the segment that was read; a segment
 *    rewritten meanwhile (another erasure, a retention purge) is left as it
 *    is, and the caller redoes it from its new copy;
 * 3. dropOld (no lock): the old objects, which still hold the personal data,
 *    are deleted. A crash anywhere leaves the segment readable: before the
 *    switch the old objects serve (and reads scrub at read time meanwhile),
 *    after it the new ones; a repeated step finds nothing left to scrub.
 */
export interface SegmentRewrite {
  old: Segment;
  next: SealedSegment;
  /** The rows scrubbed: what the erasure record must cover before the switch. */
  seqs: number[];
}

/** The scrubbed copy of a segment, written under new keys; null when no row of it is covered. */
export async function prepareRewrite(
  env: Env,
  segment: Segment,
  covers: (row: ArchivedRow) => boolean,
  erasedAt: string,
  erasureId: number,
): Promise<SegmentRewrite | null> {
  const rows = await readSegment(env, segment);
  const seqs = rows.filter(covers).map((r) => r.seq);
  if (seqs.length === 0) return null;
  const scrubbed = rows.map((r) =>
    covers(r) ? { ...r, actor_id: null, actor_name: null, actor_email: null, ip_address: null, user_agent: null, pii_salt: null, anonymized_at: erasedAt } : r,
  );
  const sealed = (await resealWithCompanions(segment.project_id, scrubbed, segment.first_seq, segment.created_at))!;
  // One key per erasure and segment: a step repeated after a crash writes the same objects again, leaving no orphan.
  const key = segment.object_key.replace(/(\.e?\d+)?\.jsonl\.gz$/, `.e${erasureId}.jsonl.gz`);
  const next = { ...sealed, segment: { ...sealed.segment, object_key: key } };
  await putSealed(env, next);
  return { old: segment, next, seqs };
}

const SET = SEGMENT_COLUMNS.filter((c) => c !== "project_id" && c !== "first_seq");
const SWITCH =
  `UPDATE archive_segments SET ${SET.map((c, i) => `${c} = ?${i + 1}`).join(", ")} ` +
  `WHERE project_id = ?${SET.length + 1} AND first_seq = ?${SET.length + 2} AND sha256 = ?${SET.length + 3} AND object_key = ?${SET.length + 4}`;

/** One D1 statement, run under the lock: true when the index row now names the new objects, false when it had changed. */
export async function switchSegment(db: D1Database, rewrite: SegmentRewrite): Promise<boolean> {
  const { old, next } = rewrite;
  const res = await db
    .prepare(SWITCH)
    .bind(...SET.map((c) => next.segment[c]), old.project_id, old.first_seq, old.sha256, old.object_key)
    .run();
  return res.meta.changes === 1;
}

/** After a switch: the old objects go. After a refused one: the new objects go (the segment is redone from its current copy). */
export async function dropObjects(env: Env, rewrite: SegmentRewrite, switched: boolean): Promise<void> {
  const gone = switched ? rewrite.old.object_key : rewrite.next.segment.object_key;
  const kept = switched ? rewrite.next.segment.object_key : rewrite.old.object_key;
  if (gone !== kept) await env.ARCHIVE.delete(segmentObjects(gone));
}

/** The project's segments after `afterFirstSeq` that may hold rows up to throughSeq, in seq order, at most `limit`. */
export async function segmentsToErase(db: D1Database, projectId: string, afterFirstSeq: number, throughSeq: number, limit: number): Promise<Segment[]> {
  const { results } = await db
    .prepare("SELECT * FROM archive_segments WHERE project_id = ? AND first_seq > ? AND first_seq <= ? ORDER BY first_seq LIMIT ?")
    .bind(projectId, afterFirstSeq, throughSeq, limit)
    .all<Segment>();
  return results;
}
