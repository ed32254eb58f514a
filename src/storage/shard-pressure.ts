import { shardDb, shardNumbers } from "./shards";
import { seqEdge, shardProjects } from "../model/row-keys";

/**
 * How full each event shard is, and what keeps it from filling. A D1 database
 * holds 10 GB and then refuses every write of every project on it, so each
 * shard has a high-water mark well below that (SHARD_HIGH_WATER_BYTES, or the
 * shard's own in the control database's shards table): past it, the shard's
 * largest projects archive their oldest hot events whatever their hot window
 * says, one segment at a time, until the shard is back under (archive-upkeep.ts
 * runs it from each ledger's alarm).
 *
 * A shard is measured by the bytes it holds, not by its file. D1 reports the
 * file's size after every query (meta.size_after) but refuses PRAGMA
 * page_count and freelist_count, and a deleted row's pages may stay in the
 * file as free pages that later writes reuse: measured by its file, a shard
 * whose events were all archived stayed full for ever, passed over for new
 * projects and archiving whatever came in. So each shard keeps an estimate of
 * its free pages (shards.freed_bytes, migration 0028): what archiving and
 * shard moves deleted (recordFreed), less what the file shrank by, and 0
 * again whenever the file grows, since a file grows only once no free page is
 * left. In use = file - freed. An estimate too high or too low only lasts
 * until the file next grows, and a shard that is really filling grows its
 * file, so then the measure is the file's size exactly: no shard passes
 * D1's limit unseen.
 */

export const DEFAULT_HIGH_WATER_BYTES = 8_000_000_000;
/** Operators are warned from this share of the mark on (log line, projects:list). */
export const WARN_FRACTION = 0.8;

export interface ShardState {
  shard: number;
  /** Bytes in use: the file less its estimated free pages. What the mark is held against. */
  size: number;
  /** The database file's size, as D1 reports it. */
  file: number;
  mark: number;
}

/** The deployment's mark; a value that is no positive number falls back to the default (and says so). */
export function deploymentMark(env: Env): number {
  const raw = (env.SHARD_HIGH_WATER_BYTES ?? "").trim();
  if (raw === "") return DEFAULT_HIGH_WATER_BYTES;
  const n = Number(raw);
  if (Number.isSafeInteger(n) && n > 0) return n;
  console.error(`SHARD_HIGH_WATER_BYTES ${JSON.stringify(raw)} is not a positive whole number of bytes; using ${DEFAULT_HIGH_WATER_BYTES}`);
  return DEFAULT_HIGH_WATER_BYTES;
}

/** The shard's database file's size now: any query's meta.size_after (PRAGMA page_count is not authorized on D1). */
export async function shardSize(env: Env, shard: number): Promise<number> {
  return (await shardDb(env, shard).prepare("SELECT 1").run()).meta.size_after ?? 0;
}

/** Every ledger measures its shard about once a minute while it ingests: the control database records one size per shard this often. */
const RECORD_EVERY_MS = 10_000;

/**
 * What one deleted row leaves free beyond its own values: its entries in the
 * events table's indexes, the search index and the targets table (about
 * 1,313 bytes an event hot against ~600 of values in the cost bench).
 */
export const HOT_ROW_OVERHEAD_BYTES = 700;

/** Rows deleted from a shard (archived, or left behind by a move): their pages are free until reused. */
export async function recordFreed(env: Env, shard: number, bytes: number): Promise<void> {
  if (bytes <= 0) return;
  await env.DB.prepare("INSERT INTO shards (shard, freed_bytes) VALUES (?1, ?2) ON CONFLICT (shard) DO UPDATE SET freed_bytes = freed_bytes + ?2")
    .bind(shard, Math.round(bytes))
    .run();
}

/** The free bytes a file of `file` bytes holds, from what was recorded at `recorded` bytes: 0 once it grew, less what it shrank by. */
function freeNow(freed: number, recorded: number | null, file: number): number {
  if (recorded === null || file > recorded) return 0;
  return Math.max(0, freed - (recorded - file));
}

/** Measures a shard and records the size for operators; answers with the mark that applies to it. */
export async function measureShard(env: Env, shard: number, size?: number): Promise<ShardState> {
  const file = size ?? (await shardSize(env, shard));
  const now = Date.now();
  // The record's free estimate follows the file: 0 once it grew, less what it shrank by (freeNow, in SQL).
  const recorded = await env.DB.prepare(
    "INSERT INTO shards (shard, size_bytes, measured_at) VALUES (?1, ?2, ?3) ON CONFLICT (shard) DO UPDATE SET size_bytes = excluded.size_bytes, " +
      "measured_at = excluded.measured_at, freed_bytes = CASE WHEN shards.size_bytes IS NULL OR excluded.size_bytes > shards.size_bytes THEN 0 " +
      "ELSE max(0, shards.freed_bytes - (shards.size_bytes - excluded.size_bytes)) END " +
      "WHERE shards.measured_at IS NULL OR shards.measured_at < ?4 RETURNING high_water_bytes AS mark, freed_bytes AS freed",
  )
    .bind(shard, file, new Date(now).toISOString(), new Date(now - RECORD_EVERY_MS).toISOString())
    .first<{ mark: number | null; freed: number }>();
  let mark: number | null;
  let free: number;
  if (recorded) {
    mark = recorded.mark;
    free = recorded.freed;
  } else {
    // Recorded less than RECORD_EVERY_MS ago: the same rule against that record.
    const row = await env.DB.prepare("SELECT high_water_bytes AS mark, freed_bytes AS freed, size_bytes AS at FROM shards WHERE shard = ?")
      .bind(shard)
      .first<{ mark: number | null; freed: number; at: number | null }>();
    mark = row?.mark ?? null;
    free = row ? freeNow(row.freed, row.at, file) : 0;
  }
  return { shard, size: Math.max(0, file - free), file, mark: mark ?? deploymentMark(env) };
}

/** Every bound shard, measured. */
export function measureShards(env: Env): Promise<ShardState[]> {
  return Promise.all(shardNumbers(env).map((n) => measureShard(env, n)));
}

/** Where a new project goes: the shard with the most free bytes under its mark (ties: the lowest number). */
export async function mostFreeShard(env: Env): Promise<number> {
  const shards = await measureShards(env);
  if (shards.length === 0) throw new Error("No event database is bound (EVENTS_0, EVENTS_1, ...)");
  return shards.reduce((best, s) => (s.mark - s.size > best.mark - best.size ? s : best)).shard;
}

/** A log line for operators once a shard passes WARN_FRACTION of its mark (and an error past the mark). */
export function warnIfFull(s: ShardState, where: string): void {
  const share = s.size / s.mark;
  if (share < WARN_FRACTION) return;
  const line = `shard ${s.shard} holds ${s.size} bytes, ${Math.round(share * 100)}% of its high-water mark ${s.mark} (its file: ${s.file} bytes; ${where})`;
  if (share > 1) console.error(`${line}: its largest projects are archiving more until it is back under`);
  else console.warn(`${line}: add a shard (EVENTS_<n>) or shorten hot windows before it reaches the mark`);
}

/**
 * The shard's projects by hot events, most first: seq span of each project's
 * hot rows (an upper bound where retention left gaps). One query, however many
 * rows: a seek or two a project (shardProjects).
 */
export async function largestProjects(db: D1Database, limit: number): Promise<Array<{ project_id: string; hot: number }>> {
  const { results } = await db
    .prepare(
      `WITH RECURSIVE ${shardProjects("p")}
       SELECT id AS project_id,
         ${seqEdge("p.id", true)} - ${seqEdge("p.id", false)} + 1 AS hot
       FROM p ORDER BY hot DESC, id LIMIT ?`,
    )
    .bind(limit)
    .all<{ project_id: string; hot: number }>();
  return results;
}

/** Seals one segment of a project's oldest hot events whatever its window; how many it archived. */
export type PressureArchive = (projectId: string) => Promise<number>;

/**
 * While the shard is over its mark, one segment at a time from its largest
 * project (a project that cannot archive now, a move or log build under way,
 * is passed over), at most maxSteps segments. before: the size found;
 * size: after; progressed: something was archived.
 */
export async function relievePressure(env: Env, shard: number, archive: PressureArchive, maxSteps: number) {
  const measured = await measureShard(env, shard);
  let state = measured;
  let progressed = false;
  const stuck = new Set<string>();
  for (let step = 0; state.size > measured.mark && step < maxSteps; step++) {
    const target = (await largestProjects(shardDb(env, shard), stuck.size + 1)).find((p) => !stuck.has(p.project_id));
    if (!target) break;
    if ((await archive(target.project_id)) === 0) {
      stuck.add(target.project_id);
      continue;
    }
    progressed = true;
    state = await measureShard(env, shard);
  }
  if (state.size > state.mark && !progressed) console.error(`shard ${shard} is over its high-water mark (${state.size} of ${state.mark} bytes) with nothing its projects can archive now`);
  return { ...state, before: measured.size, progressed };
}
