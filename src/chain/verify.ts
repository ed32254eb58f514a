/**
 * Verify, the entry point. One row's and one link's checks are
 * chain-check.ts; a seq range is walked by verify-range.ts (hot rows and
 * archived segments alike, each row against its leaf in the log,
 * src/tlog/leaf-check.ts); this file walks a whole chain and checks its end
 * against the ledger's head. GET /v1/events/verify runs it in chunks
 * (verify-run.ts, verify-chunks.ts, each chunk in src/durable/verify-chunk.do.ts),
 * a job through src/jobs/verify-job.ts, and an incremental verify from a
 * checkpoint (verify-checkpoint.ts).
 */
import { CHAIN_START, checkLink, gapLookup, rowBefore, newestRowPastHead, type LedgerView, type FailureReason, type LinkStart } from "./chain-check";
import { forgetShard, projectShard, shardDb } from "../storage/shards";
import { ledgerView } from "./ledger";
import { damageFailure, stopAt, type WalkDamage } from "../storage/archive-walk";
import { emptyResult, gapReport, PAGE_SIZE, walkRange } from "./verify-range";
import type { SigningKeyring } from "../sealing/signing-keys";

export { PAGE_SIZE } from "./verify-range";
export type { EdgeRow, GapReport, SeqRange, RangeWalk, VerifyResult, VerifyWindow } from "./verify-range";
import type { VerifyResult, VerifyWindow } from "./verify-range";

/**
 * Walks the project's chain in seq order, one D1 page at a time (the next page
 * is fetched while this one is checked), and stops at the first bad row. A
 * window limits which rows are checked, never what they are checked against:
 * each row still links to its real chain predecessor.
 */
export async function verifyChain(
  db: D1Database,
  ring: SigningKeyring,
  projectId: string,
  window: VerifyWindow,
  /** The ledger's view (ledgerView); rows appended after its head are left for the next verify. */
  head: LedgerView,
  pageSize = PAGE_SIZE,
): Promise<VerifyResult> {
  // The log's own tiles must rebuild the root its checkpoint signs; otherwise no leaf can be trusted.
  if (!head.checkpoint.tiles_match_root) return { ...emptyResult(head), ok: false, failure: { event_id: null, reason: "leaf_mismatch", at: null } };
  const walk = await walkRange(db, ring, projectId, window, head, { after: 0, through: head.seq }, pageSize);
  return walk.failedSeq === null ? checkEnd(db, ring, projectId, window, head, walk.last, walk.result) : walk.result;
}

/**
 * The chain's end must be the head the ledger recorded (or a gap must lead
 * to it): that is how deleting the newest events shows. A window that stops
 * before the end does not check it. `last` is the last row the walk checked;
 * `result` is the walk's (ok) result, returned with the end's gap or failure.
 */
export async function checkEnd(
  db: D1Database,
  ring: SigningKeyring,
  projectId: string,
  window: VerifyWindow,
  head: LedgerView,
  /** An incremental verify's checkpoint stands in for it when no row came after (its id is not kept: null). */
  last: (LinkStart & { id: string | null; occurred_at: string | null }) | null,
  result: VerifyResult,
): Promise<VerifyResult> {
  const windowed = window.from !== null || window.to !== null;
  const fail = (row: { id: string | null; occurred_at: string | null } | null, reason: FailureReason): VerifyResult => ({
    ...result,
    ok: false,
    failure: { event_id: row?.id ?? null, reason, at: row?.occurred_at ?? null },
  });
  const damage: WalkDamage = { error: null };
  const end = windowed ? ((await rowBefore(db, projectId, head.seq + 1)) ?? (await head.archive?.rowBefore(head.seq + 1).catch(stopAt(damage))) ?? null) : last;
  // The newest events may sit in a damaged segment outside the window: that is where the check stops.
  if (damage.error) return { ...result, ok: false, failure: damageFailure(damage.error) };
  if (window.to === null || (end !== null && end.seq === last?.seq)) {
    const link = await checkLink(ring, end ?? CHAIN_START, { seq: head.seq + 1, prev_hash: head.hash }, gapLookup(db, projectId));
    if (!link.ok) return fail(end, "chain_broken");
    if (link.gap) result = { ...result, gaps: [...result.gaps, gapReport(link.gap)] };
    const planted = await plantedRow(db, projectId, head);
    if (planted) return fail(planted, "chain_broken");
  }
  return result;
}

/**
 * A row past the head the walk anchored on is planted only if the ledger
 * never committed it. Honest appends land there all the time while a walk
 * runs, so the newest row seen past that head is checked against the head the
 * ledger holds once every commit under way when the row was read has finished
 * (committedHead waits for its commit lock): a row visible then and still past
 * that head was written by someone other than the ledger.
 */
async function plantedRow(db: D1Database, projectId: string, head: LedgerView) {
  const newest = await newestRowPastHead(db, projectId, head.seq);
  if (!newest) return null;
  const committed = head.committedHead ? await head.committedHead() : head;
  return newest.seq > committed.seq ? newest : null;
}

/** Walks tried when a retention purge keeps landing during them. */
export const MAX_WALKS = 3;

/**
 * verifyChain, safe against the daily retention purge. A purge that commits
 * while a walk is under way can fold rows the walk has already checked into a
 * gap record that starts before where the walk stands, and an honest chain
 * would read as broken. So a chain_broken found while the project's gap
 * records changed is checked again, from the start, against the chain as it
 * is now; a real break is found again and reported.
 */
export async function verifyProject(...args: Parameters<typeof verifyChain>): Promise<VerifyResult> {
  const [db, , projectId] = args;
  let before = await lastGapId(db, projectId);
  for (let walk = 1; ; walk++) {
    const result = await verifyChain(...args);
    if (result.failure?.reason !== "chain_broken" || walk === MAX_WALKS) return result;
    const after = await lastGapId(db, projectId);
    if (after === before) return result;
    before = after;
  }
}

/**
 * What GET /v1/events/verify runs: verifyProject on the project's shard, with
 * the ledger's view taken just before the walk. A shard move that deletes its
 * source rows while a long walk still reads them would look like a broken
 * chain; when the directory names another shard after such a failure, the
 * project is walked again where it now lives (a real break is found there too).
 */
export async function verifyLive(env: Env, ring: SigningKeyring, projectId: string, window: VerifyWindow): Promise<VerifyResult> {
  for (let walk = 1; ; walk++) {
    const shard = await projectShard(env, projectId);
    if (shard === null) throw new Error(`Unknown project ${projectId}`);
    const result = await verifyProject(shardDb(env, shard), ring, projectId, window, await ledgerView(env, projectId, { publishedCopies: true }));
    if (result.failure?.reason !== "chain_broken" || walk === MAX_WALKS) return result;
    forgetShard(projectId);
    if ((await projectShard(env, projectId)) === shard) return result;
  }
}

/** Gap ids only grow (AUTOINCREMENT): a purge, or anyone, writing gap records moves this. */
export async function lastGapId(db: D1Database, projectId: string): Promise<number> {
  const row = await db.prepare("SELECT max(id) AS id FROM retention_gaps WHERE project_id = ?").bind(projectId).first<{ id: number | null }>();
  return row?.id ?? 0;
}
