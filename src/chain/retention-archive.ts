import { cutoffOf } from "./retention-rules";
import { expiryUnder, planPurge, type PurgePlan, type PurgeWrite } from "./retention-runs";
import type { SigningKeyring } from "../sealing/signing-keys";
import { putSealed, resealWithCompanions, segmentObjects } from "../storage/archive-companions";
import { unindexRange } from "../storage/archive-ids";
import { ArchiveDamagedError, readSegment, type ArchivedRow, type Segment } from "../storage/archive-segments";
import type { ArchiveTier } from "../storage/archive-walk";
import type { CompanionRecords } from "../storage/companion-records";
import { actionPrefixElement, dropSummary, element, joinedSummary, SUMMARY_JOIN_COLUMNS, summaryJoin, type SummaryJoined, type SummaryRow } from "../storage/archive-summary";
import { SummaryProbe } from "../storage/summary-probe";
import { SEGMENT_COLUMNS } from "../storage/shard-copy";

/**
 * Retention in the cold tier, without bringing anything back into D1 (a
 * shard must never fill because a plan expired old events). The rows of an
 * archived segment get the same checks and the same gap records as hot rows
 * (src/chain/retention-runs.ts); then:
 * - every row goes: the segment is retired. One D1 transaction writes the gap
 *   records and deletes its index row, id index entries and summary; its
 *   objects are deleted after it commits.
 * - some rows stay (per-action rules, backdated events, holds, rows that
 *   failed their checks): the segment is sealed again without the others,
 *   under a new key, keeping its first_seq as its identity. Objects first,
 *   then the ledger's record of the new companions, then one transaction
 *   (gap records, index row switched, id entries and summary dropped), then
 *   the old objects deleted.
 * A crash before the transaction leaves the segment as it was (a repeated
 * step writes the same new objects again; otherwise the archiver's sweep
 * deletes them); a crash after it leaves only unnamed old objects, which the
 * sweep deletes. Called by the ledger's purge, under its commit lock, which
 * every writer of the index rows holds: the guard in each transaction is
 * there so a mistake elsewhere fails it rather than leaving gap records over
 * rows still archived.
 */

/** From the ledger: where the scan stands (its kv) and its record of export companions. */
export interface ColdRetention {
  kv: SyncKvStorage;
  companions: Pick<CompanionRecords, "record">;
}

interface Host extends ColdRetention {
  env: Env;
  db: D1Database;
  projectId: string;
  ring: SigningKeyring;
  archive: ArchiveTier;
}

const CURSOR_KEY = "retention_cold_cursor";
/** Segments read per call: a plan that expires nothing archived must not read the whole archive at once. */
export const SEGMENTS_PER_CALL = 5;
/** Index rows (with summaries) looked at per call: a segment its summary rules out costs no read. */
const LOOKED_PER_CALL = 100;
/** Tests only: a fault thrown once between the new objects' write and the transaction, set in the ledger's storage. */
export const RETENTION_FAULT_KEY = "retention_fault";

/**
 * At most one segment retired or rewritten, after at most SEGMENTS_PER_CALL
 * read. more: call again (the scan goes on from its cursor); false once it
 * reached the end, and the next run starts from the first segment again.
 */
export async function retireExpired(host: Host, plan: PurgePlan, now: Date): Promise<{ purged: number; refused: number; more: boolean }> {
  const { db, kv } = host;
  // No event in a segment that began after the most recent cutoff can have expired.
  const newest = plan.rules.map((r) => cutoffOf(r, now)).sort()[plan.rules.length - 1];
  const { results } = await db
    .prepare(
      `SELECT s.*, ${SUMMARY_JOIN_COLUMNS} FROM archive_segments s ` +
        summaryJoin() +
        "WHERE s.project_id = ? AND s.first_seq > ? AND s.first_occurred_at < ? ORDER BY s.first_seq LIMIT ?",
    )
    .bind(host.projectId, kv.get<number>(CURSOR_KEY) ?? 0, newest, LOOKED_PER_CALL)
    .all<Segment & SummaryJoined>();
  const expires = expiryUnder(plan, now);
  let refused = 0;
  let reads = 0;
  const probes = new Map<string, SummaryProbe>();
  for (const listed of results) {
    const { m_version, m_filter, m_mac, ...segment } = listed;
    // Past a segment only once it is done with: a step that crashed on it starts there again.
    const done = () => kv.put(CURSOR_KEY, segment.first_seq);
    // Its summary proves that no action in it falls under a rule that could have expired any of its rows.
    if (!(await mayExpire(host.env, plan, now, segment, joinedSummary(listed), probes))) {
      done();
      continue;
    }
    if (reads++ === SEGMENTS_PER_CALL) return { purged: 0, refused, more: true };
    const rows = await readSegment(host.env, segment).catch((error) => {
      // Verify reports it (archive_damaged); nothing in it can be checked, so nothing in it is purged.
      if (!(error instanceof ArchiveDamagedError)) throw error;
      console.warn(`retention ${host.projectId}: ${error.message}; skipped`);
      return [];
    });
    const write = rows.some((r) => expires(r) !== null) ? await planPurge(db, host.ring, host.projectId, plan, now, rows, host.archive) : null;
    const left = write ? write.expired - write.rows.length : 0;
    if (left > 0) console.warn(`retention ${host.projectId}: left ${left} archived row(s) of seq ${segment.first_seq}-${segment.last_seq} that failed their checks for verify to report`);
    refused += left;
    if (!write || write.rows.length === 0) {
      done();
      continue;
    }
    const purged = write.rows.length === rows.length ? await retire(host, segment, write) : await rewrite(host, segment, rows, write);
    done();
    return { purged, refused, more: true };
  }
  if (results.length < LOOKED_PER_CALL) kv.delete(CURSOR_KEY);
  return { purged: 0, refused, more: results.length === LOOKED_PER_CALL };
}

/**
 * False when the segment's authentic summary shows none of the actions the rules that could
 * expire its rows name (a rule can expire a row only if its cutoff is after the segment's
 * earliest occurred_at). A `*` rule names every action: the segment is read.
 */
async function mayExpire(env: Env, plan: PurgePlan, now: Date, segment: Segment, summary: SummaryRow | null, probes: Map<string, SummaryProbe>): Promise<boolean> {
  const live = plan.rules.filter((r) => cutoffOf(r, now) > segment.first_occurred_at);
  if (live.length === 0) return false;
  if (live.some((r) => r.pattern === "*")) return true;
  const names = live.map((r) => (r.pattern.endsWith("*") ? actionPrefixElement(r.pattern.slice(0, -1)) : element("action", r.pattern)));
  // One probe per set of rules asked about: its element hashes are worked out once per call, not per segment.
  const key = names.join("\n");
  let probe = probes.get(key);
  if (!probe) probes.set(key, (probe = new SummaryProbe(env, [names])));
  return probe.admits(summary);
}

async function retire(host: Host, segment: Segment, write: PurgeWrite): Promise<number> {
  const { db, projectId } = host;
  await db.batch([
    stillNamed(db, segment),
    ...write.statements,
    db.prepare("DELETE FROM archive_segments WHERE project_id = ? AND first_seq = ? AND sha256 = ?").bind(projectId, segment.first_seq, segment.sha256),
    unindexRange(db, projectId, segment.first_seq, segment.last_seq),
    dropSummary(db, segment.project_id, segment.first_seq),
  ]);
  await host.env.ARCHIVE.delete(segmentObjects(segment.object_key));
  return write.rows.length;
}

async function rewrite(host: Host, segment: Segment, rows: ArchivedRow[], write: PurgeWrite): Promise<number> {
  const { db, projectId } = host;
  const gone = new Set(write.rows.map((r) => r.seq));
  const kept = rows.filter((r) => !gone.has(r.seq));
  const sealed = (await resealWithCompanions(projectId, kept, segment.first_seq, segment.created_at))!;
  // Each rewrite keeps fewer rows, so the key differs from the one it replaces; a step repeated after a crash writes the same key again.
  const key = segment.object_key.replace(/(\.[er]\d+)*\.jsonl\.gz$/, `.r${kept.length}.jsonl.gz`);
  const next = { ...sealed.segment, object_key: key };
  await putSealed(host.env, { ...sealed, segment: next });
  if (host.kv.get(RETENTION_FAULT_KEY) !== undefined) {
    host.kv.delete(RETENTION_FAULT_KEY);
    throw new Error("retention: test fault after the rewritten segment's write");
  }
  host.companions.record(next.sha256, { csv: next.csv_sha256!, json: next.json_sha256! });
  await db.batch([
    stillNamed(db, segment),
    ...write.statements,
    db.prepare(SWITCH).bind(...SET.map((c) => next[c]), projectId, segment.first_seq, segment.sha256),
    db.prepare("DELETE FROM archive_ids WHERE project_id = ? AND seq IN (SELECT value FROM json_each(?))").bind(projectId, JSON.stringify([...gone])),
    dropSummary(db, segment.project_id, segment.first_seq),
  ]);
  await host.env.ARCHIVE.delete(segmentObjects(segment.object_key));
  return write.rows.length;
}

/** first_seq stays: it is the segment's identity (its key, and what archive_ids and summaries are keyed by). */
const SET = SEGMENT_COLUMNS.filter((c) => c !== "project_id" && c !== "first_seq");
const SWITCH = `UPDATE archive_segments SET ${SET.map((c) => `${c} = ?`).join(", ")} WHERE project_id = ? AND first_seq = ? AND sha256 = ?`;

/** First in each transaction: fails it (json() of a text that is not JSON raises) unless the index row still names the segment read. */
const stillNamed = (db: D1Database, s: Segment) =>
  db
    .prepare(
      "SELECT json(CASE WHEN EXISTS (SELECT 1 FROM archive_segments WHERE project_id = ? AND first_seq = ? AND sha256 = ? AND object_key = ?) " +
        "THEN '1' ELSE 'retention: the archive segment changed since it was read' END)",
    )
    .bind(s.project_id, s.first_seq, s.sha256, s.object_key);
