import { backfillSegment, putSealed, sealWithCompanions } from "./archive-companions";
import { indexSealed } from "./archive-ids";
import type { ArchivedRow, Segment } from "./archive-segments";
import type { CompanionRecords } from "./companion-records";
import { summarise, summaryStatement } from "./archive-summary";
import { sweepUnindexed } from "./archive-sweep";
import { backfillSummary } from "./summary-backfill";
import { EVENT_COLUMNS, SEGMENT_COLUMNS } from "./shard-copy";
import { HOT_ROW_OVERHEAD_BYTES, recordFreed } from "./shard-pressure";
import { projectShard } from "./shards";
import { armDb, overArms, shardPeriods, type Arm } from "../model/periods";
import { rowsBySeq } from "../model/row-keys";

/**
 * Moving events out of D1 into the cold tier, one sealed segment per call.
 * Only the project's ledger calls archiveStep, holding its commit lock, so it
 * never interleaves with an append, an erasure or a purge. Order of effects:
 * the object and its export companions are written to R2 first; then one D1
 * transaction adds its index row and deletes the hot rows it holds. A crash
 * after the object writes leaves the rows hot and unindexed objects, which
 * the next run overwrites (segmentKey is the first seq); a crash after the
 * transaction leaves nothing to redo. So no event is lost and none is in both tiers.
 * Between the two, the ledger records the companions' hashes (companion-records.ts);
 * the transaction also indexes the segment's event ids when they were minted
 * before located ids (archive-ids.ts; a located id needs no row: archive-lookup.ts).
 */

/** Rows per segment: one D1 read and one object of roughly 0.2-1 MB compressed. */
export const SEGMENT_ROWS = 2000;

/** routine: a segment of fewer than SEGMENT_ROWS due rows waits until its oldest row has been due this long. */
export const PARTIAL_AFTER_MS = 86_400_000;

const RECEIVED = EVENT_COLUMNS.indexOf("received_at");
const SEQ = EVENT_COLUMNS.indexOf("seq");

async function nextSegmentAfter(db: D1Database, projectId: string, seq: number): Promise<number> {
  const row = await db.prepare("SELECT min(first_seq) AS s FROM archive_segments WHERE project_id = ? AND first_seq > ?").bind(projectId, seq).first<{ s: number | null }>();
  return row?.s ?? Number.MAX_SAFE_INTEGER;
}

/**
 * tidy (the default): seal whatever is due, then, once nothing is, backfill
 * and sweep older segments (the daily check asks each archived project for it).
 * routine (the ledger's alarm, continuously): only whole segments, or a part
 * of one whose oldest row has been due for PARTIAL_AFTER_MS, so a quiet
 * project is not cut into slivers; nothing else. pressure (a shard over its
 * high-water mark, shard-pressure.ts): the oldest hot rows, whatever the window.
 */
export type ArchiveMode = "tidy" | "routine" | "pressure";

export interface ArchiveHooks {
  mode?: ArchiveMode;
  /** Tests: fail after the object write, before the D1 transaction. */
  failAfterPut?: boolean;
  /** Tests: a smaller segment. */
  segmentRows?: number;
  /** Erasures still running: the sweep keeps their rewrites' objects (archive-sweep.ts). */
  runningErasures?: ReadonlySet<number>;
}

/** The project's hot window in days (control database), or null. */
export async function hotDays(env: Env, projectId: string): Promise<number | null> {
  const row = await env.DB.prepare("SELECT hot_days FROM projects WHERE id = ?").bind(projectId).first<{ hot_days: number | null }>();
  return row?.hot_days ?? null;
}

/**
 * Seals the next segment: the oldest hot rows received before the window, in
 * seq order, up to the first row that is still inside it (so each segment is
 * a contiguous seq range even if clocks stepped back) and never past the next
 * segment (rows an operator's restore brought back hot lie below segments).
 */
export async function archiveStep(env: Env, db: D1Database, projectId: string, now: Date, companions: CompanionRecords, hooks: ArchiveHooks = {}) {
  const step = await sealNext(env, db, projectId, now, companions, hooks);
  if ((hooks.mode ?? "tidy") !== "tidy") return step;
  // Once nothing is due, older segments get what they lack (id index entries, recorded companions), one per step.
  if (step.done && (await backfillSegment(env, db, projectId, companions))) return { ...step, done: false };
  // Then summaries (summary-backfill.ts), one segment per step.
  if (step.done && (await backfillSummary(env, db, projectId))) return { ...step, done: false };
  // Last, what interrupted steps left in the bucket (archive-sweep.ts).
  if (step.done) await sweepUnindexed(env, db, projectId, hooks.runningErasures);
  return step;
}

/** Rows as D1's raw() gives them (EVENT_COLUMNS order) to named fields. */
function rowsAsObjects(rows: unknown[][]): ArchivedRow[] {
  return rows.map((r) => Object.fromEntries(EVENT_COLUMNS.map((c, i) => [c, r[i]])) as unknown as ArchivedRow);
}

function ripe(oldest: string, cutoff: string): boolean {
  return oldest < new Date(Date.parse(cutoff) - PARTIAL_AFTER_MS).toISOString();
}

/**
 * The project's oldest hot rows, up to `limit`, in seq order across the
 * shard's arms (model/periods.ts), each with the arm it is in. A period's
 * rows stay after they are sealed, until the period is dropped, so in a
 * period only rows past the project's sealed segments are hot.
 */
async function oldestHot(db: D1Database, projectId: string, limit: number, arms: Arm[]): Promise<Array<{ row: unknown[]; arm: Arm }>> {
  const sealed =
    arms.length === 1 ? 0 : ((await db.prepare("SELECT max(last_seq) AS s FROM archive_segments WHERE project_id = ?").bind(projectId).first<{ s: number | null }>())?.s ?? 0);
  const lists = await overArms(
    db,
    async (arm, n) =>
      (
        await arm
          .prepare(`SELECT ${EVENT_COLUMNS.join(", ")} FROM ${rowsBySeq({ project: "?1", lo: "?3", hi: null, limit: "?2" })}`)
          .bind(projectId, limit, n === null ? 0 : sealed + 1)
          .raw()
      ).map((row) => ({ row, arm: n })),
    arms,
  );
  return lists
    .flat()
    .sort((a, b) => (a.row[SEQ] as number) - (b.row[SEQ] as number))
    .slice(0, limit);
}

/** The shard's arms, and the periods among them the archive seals whatever their rows' windows: those being emptied to be dropped (period-upkeep.ts). */
async function periodsOf(db: D1Database): Promise<{ arms: Arm[]; sealing: Set<number> }> {
  const periods = await shardPeriods(db);
  return { arms: [null, ...periods.map((p) => p.n)], sealing: new Set(periods.filter((p) => p.sealing_at !== null).map((p) => p.n)) };
}

async function sealNext(env: Env, db: D1Database, projectId: string, now: Date, companions: CompanionRecords, hooks: ArchiveHooks) {
  const mode = hooks.mode ?? "tidy";
  const days = await hotDays(env, projectId);
  const { arms, sealing } = await periodsOf(db);
  if (days === null && mode !== "pressure" && sealing.size === 0) return { archived: 0, done: true, segment: null };
  // Under pressure every committed row may go (ISO times all sort below "~").
  const cutoff = mode === "pressure" ? "~" : days === null ? "" : new Date(now.getTime() - days * 86_400_000).toISOString();
  const limit = hooks.segmentRows ?? SEGMENT_ROWS;
  const hot = await oldestHot(db, projectId, limit, arms);
  const rows = hot.map((h) => h.row);
  if (rows.length === 0) return { archived: 0, done: true, segment: null };
  // A row of the main tables is due past the window; a period's, only once the period is being sealed (then whatever
  // the window: the period is dropped once all it holds is sealed, and reads meanwhile take the hot copy).
  const due = (i: number) => (hot[i].arm === null ? (rows[i][RECEIVED] as string) < cutoff : sealing.has(hot[i].arm!));
  const next = await nextSegmentAfter(db, projectId, rows[0][SEQ] as number);
  let eligible = rows.findIndex((r, i) => !due(i) || (r[SEQ] as number) >= next);
  const bounded = eligible !== -1 && (rows[eligible][SEQ] as number) >= next;
  if (eligible === -1) eligible = rows.length;
  if (eligible === 0) return { archived: 0, done: !bounded, segment: null };
  // A routine step leaves a part of a segment for later, unless it must close the gap below the next segment.
  if (mode === "routine" && eligible < limit && !bounded && !ripe(rows[0][RECEIVED] as string, cutoff === "" ? now.toISOString() : cutoff)) return { archived: 0, done: true, segment: null };
  const taken = rows.slice(0, eligible);
  const sealed = await sealWithCompanions(projectId, taken, now.toISOString());
  const { segment } = sealed;
  await putSealed(env, sealed);
  if (hooks.failAfterPut) throw new Error("injected failure after the segment write");
  companions.record(segment.sha256, { csv: segment.csv_sha256!, json: segment.json_sha256! });
  const summary = await summarise(env, segment, rowsAsObjects(taken));
  await db.batch([
    insertSegment(db, segment),
    summaryStatement(db, summary),
    // Only a segment with ids minted before located ids needs a row per id (archive-lookup.ts).
    ...(segment.id_tag === null ? [...new Set(hot.slice(0, eligible).map((h) => h.arm))].map((n) => indexSealed(armDb(db, n), projectId, segment.first_seq, segment.last_seq)) : []),
    // The main tables' rows only: a period's go when it is dropped, which bills nothing (model/periods.ts).
    db.prepare(`DELETE FROM events WHERE row_id IN (SELECT row_id FROM ${rowsBySeq({ project: "?1", lo: "?2", hi: "?3", columns: "e.row_id" })})`).bind(projectId, segment.first_seq, segment.last_seq),
  ]);
  // The hot rows' pages are free now (shard-pressure.ts); the segment's own rows and summary took a little back.
  const shard = await projectShard(env, projectId);
  if (shard !== null) await recordFreed(env, shard, freedBy(taken.filter((_, i) => hot[i].arm === null)) - summary.filter.length);
  return { archived: segment.count, done: eligible < limit && !bounded, segment };
}

/** What deleting these hot rows (raw, EVENT_COLUMNS order) frees in the shard, roughly: their values (8 bytes a number) and index entries. */
function freedBy(rows: unknown[][]): number {
  let bytes = 0;
  for (const r of rows) {
    bytes += HOT_ROW_OVERHEAD_BYTES;
    for (const v of r) bytes += typeof v === "string" ? v.length : 8;
  }
  return bytes;
}

/** INSERT OR REPLACE: a rewritten segment (erasure, retention) keeps its first seq. */
export function insertSegment(db: D1Database, s: Segment): D1PreparedStatement {
  return db
    .prepare(`INSERT OR REPLACE INTO archive_segments (${SEGMENT_COLUMNS.join(", ")}) VALUES (${SEGMENT_COLUMNS.map(() => "?").join(", ")})`)
    .bind(...SEGMENT_COLUMNS.map((c) => s[c]));
}

