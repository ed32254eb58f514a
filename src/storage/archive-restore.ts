import { segmentObjects } from "./archive-companions";
import { unindexRange } from "./archive-ids";
import { readSegment, type Segment } from "./archive-segments";
import { dropSummary } from "./archive-summary";
import { restoreStatements } from "./shard-copy";
import { measureShard, WARN_FRACTION } from "./shard-pressure";

/**
 * Bringing a project's archived events back into D1, for an operator who turned
 * tiering off and wants everything hot again (npm run projects:tiering -- <p>
 * off --restore). One segment per step, the newest first, so what stays
 * archived is always the oldest part of the chain (as the archiver leaves it);
 * its rows and search entries go in, its index row and archived ids out, in one
 * D1 transaction, and its objects are deleted after. Called under the ledger's
 * commit lock. Refused while the project has a hot window (the archiver would
 * seal the rows again) and when the shard is past the share of its high-water
 * mark where operators are warned: restoring must not make it fill.
 */
export type RestoreStep =
  | { status: "restored"; events: number; remaining: number }
  | { status: "done"; events: 0; remaining: 0 }
  | { status: "refused"; message: string };

export async function restoreNewestSegment(env: Env, db: D1Database, projectId: string): Promise<RestoreStep> {
  const project = await env.DB.prepare("SELECT hot_days, shard FROM projects WHERE id = ?").bind(projectId).first<{ hot_days: number | null; shard: number }>();
  if (!project) return { status: "refused", message: `no project ${projectId}` };
  if (project.hot_days !== null) {
    return { status: "refused", message: `the project keeps a hot window of ${project.hot_days} days: turn tiering off first, or the archiver seals the events again` };
  }
  const shard = project.shard;
  const state = await measureShard(env, shard);
  if (state.size >= state.mark * WARN_FRACTION) {
    return { status: "refused", message: `shard ${shard} holds ${state.size} bytes, past ${Math.round(WARN_FRACTION * 100)}% of its high-water mark (${state.mark}): restoring would fill it` };
  }
  const { results } = await db
    .prepare("SELECT *, (SELECT count(*) FROM archive_segments WHERE project_id = ?1) AS total FROM archive_segments WHERE project_id = ?1 ORDER BY first_seq DESC LIMIT 1")
    .bind(projectId)
    .all<Segment & { total: number }>();
  const segment = results[0];
  if (!segment) return { status: "done", events: 0, remaining: 0 };
  const rows = await readSegment(env, segment);
  await db.batch([
    ...restoreStatements(db, rows),
    db.prepare("DELETE FROM archive_segments WHERE project_id = ? AND first_seq = ?").bind(projectId, segment.first_seq),
    unindexRange(db, projectId, segment.first_seq, segment.last_seq),
    dropSummary(db, projectId, segment.first_seq),
  ]);
  await env.ARCHIVE.delete(segmentObjects(segment.object_key));
  return { status: "restored", events: rows.length, remaining: segment.total - 1 };
}
