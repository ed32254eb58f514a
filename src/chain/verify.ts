import {
  CHAIN_COLUMNS,
  CHAIN_START,
  chainRowOf,
  checkLink,
  checkRow,
  erasureVouches,
  gapLookup,
  rowBefore,
  newestRowPastHead,
  type ChainRow,
  type LedgerView,
  type FailureReason,
  type LinkStart,
} from "./chain-check";
import { pageLeaves } from "../log/leaf-check";
import { forgetShard, projectShard, shardDb } from "../storage/shards";
import { ledgerView } from "./ledger";
import { damageFailure, stopAt, untilDamaged, withArchived, type WalkDamage } from "../storage/archive-walk";
import { gapRules, gapsEndingAt, type GapRecord } from "./gap-records";
import type { AppliedRule } from "./retention-rules";
import type { SigningKeyring } from "./signing-keys";

/** Inclusive bounds on occurred_at (normalized ISO); null is open. */
export interface VerifyWindow {
  from: string | null;
  to: string | null;
}

export interface GapReport {
  at: string;
  reason: "plan_retention";
  purged_count: number;
  first_seq: number;
  last_seq: number;
  /** The rules and cutoffs the purge applied, as its signed record names them. */
  rules: AppliedRule[];
}

export interface VerifyResult {
  ok: boolean;
  verified: number;
  anonymized: number;
  unsigned: number;
  /** Rows (counted above too) that checked out only with an unpaired surrogate put back where D1 stored U+FFFD. */
  restored_surrogates: number;
  gaps: GapReport[];
  /** event_id and at are null only when every row of a non-empty chain is gone. */
  failure: { event_id: string | null; reason: FailureReason; at: string | null } | null;
  /** The transparency log's newest checkpoint the walked rows were checked against (leaves up to tree_size). */
  checkpoint: { tree_size: number; root_hash: string };
}

/** Rows per D1 page: large enough to amortise the round trip, small enough to keep memory flat. */
export const PAGE_SIZE = 2000;

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
  const windowed = window.from !== null || window.to !== null;
  const checkpoint = { tree_size: head.checkpoint.tree_size, root_hash: head.checkpoint.root_hash };
  const result: VerifyResult = { ok: true, verified: 0, anonymized: 0, unsigned: 0, restored_surrogates: 0, gaps: [], failure: null, checkpoint };
  // The log's own tiles must rebuild the root its checkpoint signs; otherwise no leaf can be trusted.
  if (!head.checkpoint.tiles_match_root) return { ...result, ok: false, failure: { event_id: null, reason: "leaf_mismatch", at: null } };
  const fail = (row: { id: string; occurred_at: string } | null, reason: FailureReason): VerifyResult => ({
    ...result,
    ok: false,
    failure: { event_id: row?.id ?? null, reason, at: row?.occurred_at ?? null },
  });
  const report = (gap: GapRecord) =>
    result.gaps.push({
      at: gap.purged_at,
      reason: "plan_retention",
      purged_count: gap.purged_count,
      first_seq: gap.first_seq,
      last_seq: gap.last_seq,
      rules: gapRules(gap),
    });

  let last: ChainRow | null = null;
  const inWindow = (r: ChainRow) => (window.from === null || r.occurred_at >= window.from) && (window.to === null || r.occurred_at <= window.to);
  // A damaged archive segment ends the walk there, reported as archive_damaged (src/storage/archive-walk.ts).
  const damage: WalkDamage = { error: null };
  const walk = untilDamaged(withArchived(head.archive, pages(db, projectId, head.seq, window, pageSize), (r) => (inWindow(r) ? r : null), head.seq, pageSize, window), damage);
  for await (const page of walk) {
    const starts = await linkStarts(db, projectId, page, last, windowed, head).catch(stopAt(damage));
    if (!starts) break;
    const holes = page.flatMap((row, i) => (row.seq !== starts[i].seq + 1 && row.prev_hash !== null ? [row.prev_hash] : []));
    const anonymized = page.flatMap((row) => (row.anonymized_at !== null ? [row.seq] : []));
    const [gaps, erased, leafOf] = await Promise.all([
      gapsEndingAt(db, projectId, holes),
      anonymized.length > 0 ? head.erasedAt(anonymized) : ({} as Record<number, string>),
      pageLeaves((indexes) => head.leavesAt(indexes), page),
    ]);
    for (let i = 0; i < page.length; i++) {
      const row = page[i];
      const start = starts[i];
      if (row.seq === start.seq + 1) {
        if (row.prev_hash !== start.hash) return fail(row, "chain_broken");
      } else {
        const link = await checkLink(ring, start, row, async (hash) => gaps.get(hash) ?? []);
        if (!link.ok) return fail(row, "chain_broken");
        report(link.gap!);
      }
      // One row at a time: thousands of crypto calls in flight cost more than they overlap.
      const check = await checkRow(ring, row, leafOf(i));
      if (!check.hash) return fail(row, "hash_mismatch");
      // Scrubbed personal data is vouched for only by the ledger's erasure record; otherwise it was just deleted.
      if (!erasureVouches(row, erased)) return fail(row, "hash_mismatch");
      // Only the ledger says from where rows are signed: nulling signatures in D1 turns nothing into "unsigned".
      const mustBeSigned = row.seq >= head.signedFrom;
      if (check.signature === false || (check.signature === null && mustBeSigned)) return fail(row, "signature_mismatch");
      // A row rewritten and re-signed by someone holding the HMAC key still differs from its leaf in the signed log.
      if (!check.leaf) return fail(row, "leaf_mismatch");
      if (check.restoredSurrogate) result.restored_surrogates++;
      if (row.anonymized_at !== null) result.anonymized++;
      else if (check.signature === null) result.unsigned++;
      else result.verified++;
    }
    last = page[page.length - 1];
  }
  if (damage.error) return { ...result, ok: false, failure: damageFailure(damage.error) };

  // The chain's end must be the head the ledger recorded (or a gap must lead
  // to it): that is how deleting the newest events shows. A window that stops
  // before the end does not check it.
  const end = windowed ? ((await rowBefore(db, projectId, head.seq + 1)) ?? (await head.archive?.rowBefore(head.seq + 1).catch(stopAt(damage))) ?? null) : last;
  // The newest events may sit in a damaged segment outside the window: that is where the check stops.
  if (damage.error) return { ...result, ok: false, failure: damageFailure(damage.error) };
  if (window.to === null || (end !== null && end.seq === last?.seq)) {
    const link = await checkLink(ring, end ?? CHAIN_START, { seq: head.seq + 1, prev_hash: head.hash }, gapLookup(db, projectId));
    if (!link.ok) return fail(end, "chain_broken");
    if (link.gap) report(link.gap);
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
const MAX_WALKS = 3;

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
async function lastGapId(db: D1Database, projectId: string): Promise<number> {
  const row = await db.prepare("SELECT max(id) AS id FROM retention_gaps WHERE project_id = ?").bind(projectId).first<{ id: number | null }>();
  return row?.id ?? 0;
}

async function* pages(db: D1Database, projectId: string, headSeq: number, window: VerifyWindow, size: number) {
  let sql = `SELECT ${CHAIN_COLUMNS} FROM events WHERE project_id = ? AND seq > ? AND seq <= ?`;
  const bounds: string[] = [];
  if (window.from !== null) (sql += " AND occurred_at >= ?"), bounds.push(window.from);
  if (window.to !== null) (sql += " AND occurred_at <= ?"), bounds.push(window.to);
  const statement = db.prepare(`${sql} ORDER BY seq LIMIT ${size}`);
  const fetchAfter = (seq: number) => {
    const promise = statement
      .bind(projectId, seq, headSeq, ...bounds)
      .raw()
      .then((rows) => rows.map(chainRowOf));
    // Walking may stop early at a failure; a prefetch nobody awaits must not reject unhandled.
    promise.catch(() => {});
    return promise;
  };
  let next = fetchAfter(0);
  for (;;) {
    const results = await next;
    if (results.length === size) next = fetchAfter(results[results.length - 1].seq);
    if (results.length > 0) yield results;
    if (results.length < size) return;
  }
}

/**
 * The chain predecessor of every row of a page. Without a window the walk sees
 * every row, so it is simply the row walked before; in a window it may lie
 * outside it and is looked up (one query per page).
 */
async function linkStarts(
  db: D1Database,
  projectId: string,
  page: ChainRow[],
  last: ChainRow | null,
  windowed: boolean,
  head: LedgerView,
): Promise<LinkStart[]> {
  const walkedBefore = page.map((_, i) => (i === 0 ? last : page[i - 1]));
  if (!windowed) return walkedBefore.map((row) => row ?? CHAIN_START);
  const unknown = page.filter((row, i) => walkedBefore[i]?.seq !== row.seq - 1).map((row) => row.seq);
  const found = new Map<number, LinkStart>();
  if (unknown.length > 0) {
    const { results } = await db
      .prepare(
        // CROSS JOIN keeps SQLite from scanning the project's events as the outer loop.
        "SELECT p.of_seq, e.seq, e.hash FROM (SELECT j.value AS of_seq, " +
          "(SELECT MAX(s.seq) FROM events s WHERE s.project_id = ?1 AND s.seq < j.value) AS pred FROM json_each(?2) j) p " +
          "CROSS JOIN events e ON e.project_id = ?1 AND e.seq = p.pred",
      )
      .bind(projectId, JSON.stringify(unknown))
      .all<{ of_seq: number; seq: number; hash: string }>();
    for (const r of results) found.set(r.of_seq, { seq: r.seq, hash: r.hash });
    // A predecessor no longer hot is in the cold tier.
    for (const seq of unknown) {
      const cold = found.has(seq) ? null : await head.archive?.rowBefore(seq);
      if (cold) found.set(seq, { seq: cold.seq, hash: cold.hash });
    }
  }
  return page.map((row, i) => (walkedBefore[i]?.seq === row.seq - 1 ? walkedBefore[i]! : (found.get(row.seq) ?? CHAIN_START)));
}
