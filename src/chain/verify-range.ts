/** One seq range of a chain walked and checked: verifyChain's walk, and each chunk's of a chunked verify. */
import { CHAIN_START, checkLink, checkRow, erasureVouches, type LedgerView, type FailureReason, type LinkStart } from "./chain-check";
import { pageLeaves } from "../tlog/leaf-check";
import { damageFailure, stopAt, untilDamaged, withArchived, type ArchiveTier, type WalkDamage } from "../storage/archive-walk";
import { gapRules, gapsEndingAt, type GapRecord } from "./gap-records";
import type { SigningKeyring } from "../sealing/signing-keys";
import type { AppliedRule } from "./retention-rules";
import { CHAIN_COLUMNS, chainRowOf, type ChainRow } from "../model/chain-row";
import { checkedRowsSql } from "../model/stand-ins";
import { literalKey, rowIdOf, rowsBySeq, shardRowKey } from "../model/row-keys";
import { armDb, isGonePeriod, mergeBySeq, shardArms, type Arm } from "../model/periods";

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
  /** since=checkpoint: events purged in gaps before the checkpoint (gaps lists only those crossed since); null when the checkpoint predates the count. */
  purged_before_checkpoint?: number | null;
}

/** Rows per D1 page: large enough to amortise the round trip, small enough to keep memory flat. */
export const PAGE_SIZE = 2000;

/** A seq range of the chain, after < seq <= through: what one chunk of a chunked verify walks (verify-chunks.ts). */
export interface SeqRange {
  after: number;
  through: number;
}

/** A walked row at either end of a range, as the coordinator links ranges together. */
export interface EdgeRow {
  seq: number;
  id: string;
  occurred_at: string;
  hash: string;
  prev_hash: string | null;
}

/** One range's walk: its result (stopped at its first bad row) and the rows at its ends. */
export interface RangeWalk {
  result: VerifyResult;
  /** Seq of the row the failure names (a damaged segment: its first seq); null when ok. */
  failedSeq: number | null;
  first: EdgeRow | null;
  last: EdgeRow | null;
}

export function emptyResult(head: LedgerView): VerifyResult {
  const checkpoint = { tree_size: head.checkpoint.tree_size, root_hash: head.checkpoint.root_hash };
  return { ok: true, verified: 0, anonymized: 0, unsigned: 0, restored_surrogates: 0, gaps: [], failure: null, checkpoint };
}

export function gapReport(gap: GapRecord): GapReport {
  return { at: gap.purged_at, reason: "plan_retention", purged_count: gap.purged_count, first_seq: gap.first_seq, last_seq: gap.last_seq, rules: gapRules(gap) };
}

/**
 * The rows of one seq range, each checked against its hash, signature, leaf
 * and erasure record, and linked to the row before it. Without a window the
 * first row of a range that does not start the chain is not linked here: the
 * row before it belongs to another range, and whoever walked both links them
 * (mergeChunks). In a window every row's predecessor is looked up anyway.
 */
export async function walkRange(
  db: D1Database,
  ring: SigningKeyring,
  projectId: string,
  window: VerifyWindow,
  head: LedgerView,
  range: SeqRange,
  pageSize = PAGE_SIZE,
): Promise<RangeWalk> {
  const windowed = window.from !== null || window.to !== null;
  const result = emptyResult(head);
  let first: EdgeRow | null = null;
  let last: ChainRow | null = null;
  const fail = (row: ChainRow, reason: FailureReason): RangeWalk => ({
    result: { ...result, ok: false, failure: { event_id: row.id, reason, at: row.occurred_at } },
    failedSeq: row.seq,
    first,
    last: last && edgeOf(last),
  });

  const inWindow = (r: ChainRow) => (window.from === null || r.occurred_at >= window.from) && (window.to === null || r.occurred_at <= window.to);
  // A damaged archive segment ends the walk there, reported as archive_damaged (src/storage/archive-walk.ts).
  const damage: WalkDamage = { error: null };
  const tier = head.archive && range.after > 0 ? clampedTier(head.archive, range.after) : head.archive;
  // Seqs of hot rows that lists or reads by id cannot find (model/stand-ins.ts), noted as their pages are read.
  const unlisted = new Set<number>();
  // The shard's arms (model/periods.ts), listed once a walk; a period dropped meanwhile leaves it (liveArms).
  const arms = liveArms(db, await shardArms(db));
  const hot = pages(db, arms, projectId, range, window, pageSize, unlisted);
  const walk = untilDamaged(withArchived(tier, hot, (r) => (inWindow(r) ? r : null), range.through, pageSize, window), damage);
  for await (const page of walk) {
    first ??= edgeOf(page[0]);
    const starts = await linkStarts(arms, projectId, page, last, windowed, head, range.after).catch(stopAt(damage));
    if (!starts) break;
    const holes = page.flatMap((row, i) => (starts[i] !== null && row.seq !== starts[i].seq + 1 && row.prev_hash !== null ? [row.prev_hash] : []));
    const anonymized = page.flatMap((row) => (row.anonymized_at !== null ? [row.seq] : []));
    const [gaps, erased, leafOf] = await Promise.all([
      gapsEndingAt(db, projectId, holes),
      anonymized.length > 0 ? head.erasedAt(anonymized) : ({} as Record<number, string>),
      pageLeaves((indexes) => head.leavesAt(indexes), page),
    ]);
    for (let i = 0; i < page.length; i++) {
      const row = page[i];
      const start = starts[i];
      if (start === null) {
        // The range's first row: linked by the coordinator to the row before the range.
      } else if (row.seq === start.seq + 1) {
        if (row.prev_hash !== start.hash) return fail(row, "chain_broken");
      } else {
        const link = await checkLink(ring, start, row, async (hash) => gaps.get(hash) ?? []);
        if (!link.ok) return fail(row, "chain_broken");
        result.gaps.push(gapReport(link.gap!));
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
      // An intact row that a list or a read by id cannot find: a row standing in for its index entries is gone
      // (model/stand-ins.ts), or its archived segment's index row no longer bounds it (storage/archive-walk.ts).
      if (unlisted.has(row.seq) || tier?.misplaced.has(row.seq)) return fail(row, "index_damaged");
      if (check.restoredSurrogate) result.restored_surrogates++;
      if (row.anonymized_at !== null) result.anonymized++;
      else if (check.signature === null) result.unsigned++;
      else result.verified++;
    }
    last = page[page.length - 1];
  }
  if (damage.error) {
    return { result: { ...result, ok: false, failure: damageFailure(damage.error) }, failedSeq: damage.error.segment.first_seq, first, last: last && edgeOf(last) };
  }
  return { result, failedSeq: null, first, last: last && edgeOf(last) };
}

function edgeOf(row: ChainRow): EdgeRow {
  return { seq: row.seq, id: row.id, occurred_at: row.occurred_at, hash: row.hash, prev_hash: row.prev_hash };
}

/** The cold tier as a range's walk sees it: withArchived starts at seq 0, the range after `after`. */
function clampedTier(tier: ArchiveTier, after: number): ArchiveTier {
  return { ...tier, between: (afterSeq, beforeSeq, size, window) => tier.between(Math.max(afterSeq, after), beforeSeq, size, window) };
}

/** `read` in each of a walk's arms, their answers in arm order. */
type WalkArms = <T>(read: (arm: D1Database, n: Arm) => Promise<T[]>) => Promise<T[][]>;

/**
 * A walk's arms, `arms` as it listed them. A period is dropped once every row
 * it holds is archived, and each page's archived rows are read after its hot
 * ones (withArchived), so one that is gone when a page reads it answers no
 * rows, and is left out from then on.
 */
function liveArms(db: D1Database, arms: Arm[]): WalkArms {
  const live = [...arms];
  return (read) =>
    Promise.all(
      [...live].map((n) =>
        read(armDb(db, n), n).catch((error) => {
          if (n === null || !isGonePeriod(error)) throw error;
          if (live.includes(n)) live.splice(live.indexOf(n), 1);
          return [];
        }),
      ),
    );
}

/**
 * The range's hot rows in seq order, a page at a time, from every arm: each
 * page is each arm's next `size` rows, merged and cut at `size`. The seq of
 * each whose `unlisted` column is 1 (checkedRowsSql) goes into `unlisted`.
 */
async function* pages(db: D1Database, arms: WalkArms, projectId: string, range: SeqRange, window: VerifyWindow, size: number, unlisted: Set<number>) {
  // ?1 the project, ?2 the seq walked past, ?3 the range's end, then the window's bounds.
  const where: string[] = [];
  const bounds: string[] = [];
  if (window.from !== null) where.push(`e.occurred_at >= ?${3 + bounds.push(window.from)}`);
  if (window.to !== null) where.push(`e.occurred_at <= ?${3 + bounds.push(window.to)}`);
  // The project's layout in this shard, looked up once a walk: each page then reads its rows on that path alone.
  const key = literalKey(await shardRowKey(db, projectId));
  const seqs = { project: "?1", lo: "?2 + 1", hi: "?3", where: where.length > 0 ? where.join(" AND ") : undefined, key };
  const sql = checkedRowsSql(CHAIN_COLUMNS, seqs, size);
  // Prepared once a walk in each arm, as the one statement was before periods.
  const statements = new Map<Arm, D1PreparedStatement>();
  const statement = (arm: D1Database, n: Arm) => statements.get(n) ?? statements.set(n, arm.prepare(sql)).get(n)!;
  const unlistedAt = CHAIN_COLUMNS.split(",").length;
  const rowOf = (cells: unknown[]) => {
    const row = chainRowOf(cells);
    return { row, seq: row.seq, unlisted: Boolean(cells[unlistedAt]) };
  };
  // Marked only once kept: a row an arm read past the page's cut is read again with the next page.
  const kept = (rows: Array<ReturnType<typeof rowOf>>) =>
    rows.map((r) => {
      if (r.unlisted) unlisted.add(r.seq);
      return r.row;
    });
  const read = (arm: D1Database, n: Arm, after: number) =>
    statement(arm, n)
      .bind(projectId, after, range.through, ...bounds)
      .raw()
      .then((rows) => rows.map(rowOf));
  // A period's rows past the walk's cursor, read ahead, and whether it has no more in the range: a period gains no
  // row the range holds while the walk runs (commits go past the head), so what it read stays true, and a period
  // whose rows lie further on is not read again at every page. The main tables are read from the cursor each page,
  // as before periods: an operator's restore may put rows back there meanwhile.
  const ahead = new Map<Arm, { rows: Array<ReturnType<typeof rowOf>>; exhausted: boolean }>();
  const fromArm = async (arm: D1Database, n: Arm, seq: number) => {
    if (n === null) return read(arm, n, seq);
    const buffer = ahead.get(n) ?? { rows: [], exhausted: false };
    buffer.rows = buffer.rows.filter((r) => r.seq > seq);
    if (buffer.rows.length < size && !buffer.exhausted) {
      const got = await read(arm, n, buffer.rows.length > 0 ? buffer.rows[buffer.rows.length - 1].seq : seq);
      buffer.exhausted = got.length < size;
      buffer.rows = [...buffer.rows, ...got];
    }
    ahead.set(n, buffer);
    return buffer.rows;
  };
  const fetchAfter = (seq: number) => {
    const promise = arms((arm, n) => fromArm(arm, n, seq)).then((lists) => kept(mergeBySeq(lists, size)));
    // Walking may stop early at a failure; a prefetch nobody awaits must not reject unhandled.
    promise.catch(() => {});
    return promise;
  };
  let next = fetchAfter(range.after);
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
 * outside it and is looked up (one query per page and arm).
 */
async function linkStarts(
  arms: WalkArms,
  projectId: string,
  page: ChainRow[],
  last: ChainRow | null,
  windowed: boolean,
  head: LedgerView,
  /** The walk's range starts after this seq: without a window, its first row's link is left to the coordinator (null). */
  after = 0,
): Promise<Array<LinkStart | null>> {
  const walkedBefore = page.map((_, i) => (i === 0 ? last : page[i - 1]));
  if (!windowed) return walkedBefore.map((row) => row ?? (after > 0 ? null : CHAIN_START));
  const unknown = page.filter((row, i) => walkedBefore[i]?.seq !== row.seq - 1).map((row) => row.seq);
  const found = new Map<number, LinkStart>();
  if (unknown.length > 0) {
    const sql =
      // CROSS JOIN keeps SQLite from scanning the project's events as the outer loop.
      "SELECT p.of_seq, e.seq, e.hash FROM (SELECT j.value AS of_seq, " +
      `(SELECT max(s.seq) FROM ${rowsBySeq({ project: "?1", lo: "0", hi: "j.value - 1", desc: true, limit: "1", columns: "e.seq" })} s) AS pred FROM json_each(?2) j) p ` +
      `CROSS JOIN events e ON ${rowIdOf("?1", "p.pred")} = e.row_id`;
    const lists = await arms(async (arm) => (await arm.prepare(sql).bind(projectId, JSON.stringify(unknown)).all<{ of_seq: number; seq: number; hash: string }>()).results);
    // Each arm's nearest; the predecessor is the nearest of them.
    for (const r of lists.flat()) if ((found.get(r.of_seq)?.seq ?? -1) < r.seq) found.set(r.of_seq, { seq: r.seq, hash: r.hash });
    // A predecessor no longer hot is in the cold tier. One may be even when an older row is hot: a period is
    // sealed and dropped whatever the window of the rows before it (storage/period-upkeep.ts), and a restored
    // segment is hot between archived ones.
    for (const seq of unknown) {
      const hot = found.get(seq);
      const cold = hot?.seq === seq - 1 ? null : await head.archive?.rowBefore(seq);
      if (cold && (hot === undefined || cold.seq > hot.seq)) found.set(seq, { seq: cold.seq, hash: cold.hash });
    }
  }
  return page.map((row, i) => (walkedBefore[i]?.seq === row.seq - 1 ? walkedBefore[i]! : (found.get(row.seq) ?? CHAIN_START)));
}
