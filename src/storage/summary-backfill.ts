import { ArchiveDamagedError, readSegment, type Segment } from "./archive-segments";
import { summarise, summaryStatement } from "./archive-summary";

/**
 * Summaries for the segments that lack a valid one: sealed before summaries
 * existed (migration 0019), rewritten by retention, or brought to this shard
 * by a move (summaries are not copied). One segment per call, from the
 * archiver's tidy pass under the ledger's commit lock, so nothing rewrites the
 * segment meanwhile; the summary is written only if the index row still names
 * the copy that was read (summaryStatement). Resumable by construction: what is done is a row,
 * what is left is every segment without one.
 */

/** Candidates per call: a damaged segment is skipped (verify reports it), not retried forever in one call. */
const TRIES = 5;

/** True when a segment got its summary; false when none is left to do (or only damaged ones were met). */
export async function backfillSummary(env: Env, db: D1Database, projectId: string): Promise<boolean> {
  const { results } = await db
    .prepare(
      "SELECT s.* FROM archive_segments s WHERE s.project_id = ?1 AND NOT EXISTS " +
        "(SELECT 1 FROM archive_summaries m WHERE m.project_id = ?1 AND m.first_seq = s.first_seq AND m.sha256 = s.sha256) ORDER BY s.first_seq LIMIT ?2",
    )
    .bind(projectId, TRIES)
    .all<Segment>();
  for (const segment of results) {
    let rows;
    try {
      rows = await readSegment(env, segment);
    } catch (error) {
      if (!(error instanceof ArchiveDamagedError)) throw error;
      console.warn(`summary backfill skips a damaged segment: ${error.message}`);
      continue;
    }
    const summary = await summarise(env, segment, rows);
    await summaryStatement(db, summary).run();
    return true;
  }
  return false;
}
