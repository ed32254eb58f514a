import { isHeld, type LegalHold } from "../chain/legal-holds";
import { cutoffOf, orderRules, ruleFor, type RetentionRule } from "../chain/retention-rules";
import { segmentObjects } from "./archive-companions";
import { unindexRange } from "./archive-ids";
import { readSegment, type Segment } from "./archive-segments";
import { restoreStatements } from "./shard-copy";

/**
 * Retention in the cold tier. A segment holding an expired event is brought
 * back into D1 whole (its rows inserted and its index row deleted in one
 * transaction, then its objects deleted), and the ordinary purge deletes the
 * expired rows and writes its signed gap records, with every check it makes
 * of hot rows. What the plan keeps stays hot until the next archive run seals
 * it again. Called by the ledger's purge, under its commit lock.
 */

const CURSOR_KEY = "retention_cold_cursor";
/** Segments looked at per call: a plan that expires nothing archived must not read the whole archive at once. */
const SEGMENTS_PER_CALL = 5;

/**
 * restored: rows brought back; more: call again (before purging anew from the
 * start). A segment whose only expired events are under a legal hold stays
 * archived: the purge would keep them anyway.
 */
export async function restoreExpired(
  env: Env,
  db: D1Database,
  projectId: string,
  rules: RetentionRule[],
  now: Date,
  kv: SyncKvStorage,
  holds: LegalHold[] = [],
) {
  if (rules.length === 0) return { restored: 0, more: false };
  const ordered = orderRules(rules);
  // No event in a segment that began after the most recent cutoff can have expired.
  const newest = rules.map((r) => cutoffOf(r, now)).sort()[rules.length - 1];
  const after = kv.get<number>(CURSOR_KEY) ?? 0;
  const { results } = await db
    .prepare("SELECT * FROM archive_segments WHERE project_id = ? AND first_seq > ? AND first_occurred_at < ? ORDER BY first_seq LIMIT ?")
    .bind(projectId, after, newest, SEGMENTS_PER_CALL)
    .all<Segment>();
  if (results.length === 0) {
    kv.delete(CURSOR_KEY);
    return { restored: 0, more: false };
  }
  for (const segment of results) {
    kv.put(CURSOR_KEY, segment.first_seq);
    const rows = await readSegment(env, segment);
    const expired = rows.some((r) => {
      const rule = ruleFor(ordered, r.action);
      return rule !== null && r.occurred_at < cutoffOf(rule, now) && !isHeld(holds, r);
    });
    if (!expired) continue;
    await db.batch([
      ...restoreStatements(db, projectId, rows),
      db.prepare("DELETE FROM archive_segments WHERE project_id = ? AND first_seq = ?").bind(projectId, segment.first_seq),
      unindexRange(db, projectId, segment.first_seq, segment.last_seq),
    ]);
    await env.ARCHIVE.delete(segmentObjects(segment.object_key));
    return { restored: rows.length, more: true };
  }
  return { restored: 0, more: results.length === SEGMENTS_PER_CALL };
}
