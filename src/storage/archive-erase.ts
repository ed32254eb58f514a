import { putSealed, resealWithCompanions, segmentObjects, type SealedSegment } from "./archive-companions";
import { readSegment, type ArchivedRow, type Segment } from "./archive-segments";
import { element, joinedSummary, summarise, SUMMARY_JOIN_COLUMNS, summaryJoin, summaryStatement, type SummaryJoined, type SummaryRow } from "./archive-summary";
import { SummaryProbe } from "./summary-probe";
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
  /** The scrubbed copy's summary: the erased values are no longer in it. */
  summary: SummaryRow;
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
  return { old: segment, next, seqs, summary: await summarise(env, next.segment, scrubbed) };
}

const SET = SEGMENT_COLUMNS.filter((c) => c !== "project_id" && c !== "first_seq");
const SWITCH =
  `UPDATE archive_segments SET ${SET.map((c, i) => `${c} = ?${i + 1}`).join(", ")} ` +
  `WHERE project_id = ?${SET.length + 1} AND first_seq = ?${SET.length + 2} AND sha256 = ?${SET.length + 3} AND object_key = ?${SET.length + 4}`;

/** One D1 transaction, run under the lock: true when the index row now names the new objects (and its summary is the scrubbed one), false when it had changed. */
export async function switchSegment(db: D1Database, rewrite: SegmentRewrite): Promise<boolean> {
  const { old, next, summary } = rewrite;
  const [res] = await db.batch([
    db.prepare(SWITCH).bind(...SET.map((c) => next.segment[c]), old.project_id, old.first_seq, old.sha256, old.object_key),
    // Only where the switch happened: a refused switch leaves the current segment's summary alone.
    summaryStatement(db, summary),
  ]);
  return res.meta.changes === 1;
}

/** After a switch: the old objects go. After a refused one: the new objects go (the segment is redone from its current copy). */
export async function dropObjects(env: Env, rewrite: SegmentRewrite, switched: boolean): Promise<void> {
  const gone = switched ? rewrite.old.object_key : rewrite.next.segment.object_key;
  const kept = switched ? rewrite.next.segment.object_key : rewrite.old.object_key;
  if (gone !== kept) await env.ARCHIVE.delete(segmentObjects(gone));
}

/** A segment with its current summary, if one was written for exactly this copy of it. */
export type SummarisedSegment = Segment & { summary: SummaryRow | null };

/**
 * The project's segments after `afterFirstSeq` that may hold rows up to
 * throughSeq, in seq order, at most `limit`, each with its summary (valid for
 * its current sha256, or null).
 */
export async function segmentsToErase(db: D1Database, projectId: string, afterFirstSeq: number, throughSeq: number, limit: number): Promise<SummarisedSegment[]> {
  const { results } = await db
    .prepare(
      `SELECT s.*, ${SUMMARY_JOIN_COLUMNS} FROM archive_segments s ` +
        summaryJoin() +
        "WHERE s.project_id = ? AND s.first_seq > ? AND s.first_seq <= ? ORDER BY s.first_seq LIMIT ?",
    )
    .bind(projectId, afterFirstSeq, throughSeq, limit)
    .all<Segment & SummaryJoined>();
  return results.map(({ m_version, m_filter, m_mac, ...segment }) => ({ ...segment, summary: joinedSummary({ ...segment, m_version, m_filter, m_mac }) }));
}

/**
 * What an erasure asks each segment's summary (SummaryProbe.admits: false only
 * when an authentic summary proves no row of it has the actor, in the
 * organization when scoped). Made once per walk, so the element hashes are too.
 */
export function actorProbe(env: Env, by: "id" | "email", value: string, organization: string | null): SummaryProbe {
  return new SummaryProbe(env, [[element(by === "id" ? "actor_id" : "actor_email", value)], ...(organization === null ? [] : [[element("organization", organization)]])]);
}
