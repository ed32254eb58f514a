import { actorProbe, segmentsToErase } from "../storage/archive-erase";
import { ArchiveDamagedError, readSegment, type ArchivedRow } from "../storage/archive-segments";
import { erasableSql, isErasable } from "../model/erasable";
import { overArms } from "../model/periods";
import type { ErasureRequest } from "./erasure-running";

const SCAN_PAGE = 200;
/**
 * What the look may cost on the request path: a long-lived admin key's
 * records can sit in thousands of segments, and an invocation has a bounded
 * number of subrequests. Past these it lets the erasure through, which
 * scrubs no self-audit record anyway; only the clearer 400 is given up.
 */
const MAX_SEGMENT_READS = 20;
const MAX_SCAN_PAGES = 10;

/**
 * True when the id names only API keys or sessions: some self-audit record
 * (witness.*) has it as its actor, and no other event, hot or archived,
 * within the erasure's organization scope. Such an erasure would scrub
 * nothing (erasable.ts), so it is refused rather than recorded as if it had
 * erased someone. An id found nowhere is accepted: nothing tells it from a
 * person whose events are all gone.
 *
 * Not under the commit lock: it only chooses the answer, and an event
 * appended meanwhile changes nothing the erasure would do to self-audit
 * records. Archived segments are read only when the hot rows have no other
 * event of the id, and only those whose summaries say it may be inside; the
 * walk stops at the first event that is not a self-audit record.
 */
export async function namesOnlySelfAudit(env: Env, db: D1Database, req: ErasureRequest): Promise<boolean> {
  // Self-audit records never carry an e-mail (auditEvent): an erasure by e-mail is always about people.
  if (req.by !== "id") return false;
  const match = "project_id = ?1 AND actor_id = ?2 AND (?3 IS NULL OR organization = ?3)";
  // The person's events may be in any arm, and so may the keys' records.
  const hot = await overArms(db, (armed) =>
    armed
      .prepare(
        `SELECT EXISTS (SELECT 1 FROM events WHERE ${match} AND ${erasableSql()}) AS people, ` +
          `EXISTS (SELECT 1 FROM events WHERE ${match} AND NOT (${erasableSql()})) AS keys`,
      )
      .bind(req.projectId, req.value, req.organization)
      .first<{ people: number; keys: number }>(),
  );
  if (hot.some((h) => h!.people)) return false;
  let keys = hot.some((h) => h!.keys === 1);
  const probe = actorProbe(env, "id", req.value, req.organization);
  let reads = 0;
  for (let after = 0, pages = 0; ; pages++) {
    if (pages === MAX_SCAN_PAGES) return false;
    const segments = await segmentsToErase(db, req.projectId, after, Number.MAX_SAFE_INTEGER, SCAN_PAGE);
    if (segments.length === 0) return keys;
    after = segments[segments.length - 1].first_seq;
    for (const segment of segments) {
      if (!(await probe.admits(segment.summary))) continue;
      if (++reads > MAX_SEGMENT_READS) return false;
      let rows: ArchivedRow[];
      try {
        rows = await readSegment(env, segment);
      } catch (error) {
        // What it holds is unknown (verify reports it): better let an erasure through than refuse a person's.
        if (error instanceof ArchiveDamagedError) return false;
        throw error;
      }
      for (const row of rows) {
        if (row.actor_id !== req.value || (req.organization !== null && row.organization !== req.organization)) continue;
        if (isErasable(row.action)) return false;
        keys = true;
      }
    }
  }
}
