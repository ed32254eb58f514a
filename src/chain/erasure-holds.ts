import { actorProbe, segmentsToErase } from "../storage/archive-erase";
import { readSegment } from "../storage/archive-segments";
import { erasableSql, isErasable } from "../model/erasable";
import { overArms } from "../model/periods";
import { KEY_SPAN, numbered, seqSpan } from "../model/row-keys";
import { heldSql, isHeld, type LegalHold } from "./legal-holds";
import type { ErasureRequest } from "./erasure-running";

const HOLD_SCAN_PAGE = 200;

/**
 * The active legal holds an erasure would break: those covering any event the
 * erasure would scrub (its actor's events, hot or archived, within its
 * organization scope, self-audit records aside). Empty: the erasure may run.
 * The holds come from the ledger; only the events are read from D1 and the
 * archive.
 */
export async function holdsErasureWouldBreak(env: Env, db: D1Database, req: ErasureRequest, holds: LegalHold[]): Promise<LegalHold[]> {
  if (holds.length === 0) return [];
  const column = req.by === "id" ? "actor_id" : "actor_email";
  const held = heldSql(holds);
  // Every arm's rows: a hold covering the person's events in any of them refuses the erasure.
  const hot = await overArms(db, async (armed) => {
    const { results } = await armed
      .prepare(
        // By e-mail, which no index holds, the walk is of the project's rows, on its path (model/row-keys.ts).
        `SELECT DISTINCT organization, actor_id FROM events WHERE project_id = ?1 AND ${column} = ?2 AND (?3 IS NULL OR organization = ?3) ` +
          `AND ${seqSpan("events", "?1", "0", `${KEY_SPAN - 1}`)} AND ${erasableSql()} AND ${numbered(held.sql, 4)} LIMIT 100`,
      )
      .bind(req.projectId, req.value, req.organization, ...held.params)
      .all<{ organization: string | null; actor_id: string | null }>();
    return results;
  });
  const touched = hot.flat();
  if (touched.length === 0) {
    // Only the segments whose summaries say the actor may be inside are read (archive-summary.ts); pages of
    // HOLD_SCAN_PAGE index rows keep each query's result small (a summary is up to 11 KB).
    const probe = actorProbe(env, req.by, req.value, req.organization);
    for (let after = 0; touched.length === 0; ) {
      const segments = await segmentsToErase(db, req.projectId, after, Number.MAX_SAFE_INTEGER, HOLD_SCAN_PAGE);
      if (segments.length === 0) break;
      after = segments[segments.length - 1].first_seq;
      for (const segment of segments) {
        if (!(await probe.admits(segment.summary))) continue;
        const rows = await readSegment(env, segment);
        touched.push(
          ...rows.filter(
            (r) => (req.by === "id" ? r.actor_id : r.actor_email) === req.value && (req.organization === null || r.organization === req.organization) && isErasable(r.action) && isHeld(holds, r),
          ),
        );
        if (touched.length > 0) break;
      }
    }
  }
  return holds.filter((h) => touched.some((row) => isHeld([h], row)));
}
