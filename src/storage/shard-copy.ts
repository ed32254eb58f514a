import { afterInserts, INDEXING_COLUMNS, placeRows, type IndexedRow } from "../model/row-indexing";
import { HOT_ROW_OVERHEAD_BYTES } from "./shard-pressure";
import { keyBase, OLDER_TOP, rowsBySeq } from "../model/row-keys";
import { keyedLead } from "../model/search-index";
import { armDb, MAIN_COMMIT_SQL, mergeBySeq, overArms, withShardArms, type Arm } from "../model/periods";

/**
 * The SQL of a shard move: copying one project's rows from its source shard to
 * its target in bounded batches, checking the copy and deleting what is left
 * behind. Every function here is idempotent, so a step that crashed halfway is
 * simply run again. Only the project's ledger calls these (see shard-move.ts).
 *
 * A shard's hot rows are in its arms (model/periods.ts): the main tables and
 * each period. A move reads and deletes the project's rows in every arm of a
 * shard, and writes them into the target's main tables only: the target's
 * periods are its own writers'.
 */

/** Every stored column but row_id: the target numbers its rows itself. */
export const EVENT_COLUMNS = [
  "id", "project_id", "seq", "action", "organization", "actor_id", "actor_type", "actor_name",
  "actor_email", "targets", "metadata", "occurred_at", "received_at", "ip_address", "user_agent",
  "pii_salt", "pii_commitment", "hash", "prev_hash", "signature", "anonymized_at", "changes", "schema_version", "schema_valid",
] as const;
const GAP_COLUMNS = ["project_id", "before_hash", "last_hash", "first_seq", "last_seq", "purged_count", "purged_at", "signature", "rules"] as const;
export const SEGMENT_COLUMNS = [
  "project_id", "first_seq", "last_seq", "first_received_at", "last_received_at", "first_occurred_at",
  "last_occurred_at", "count", "bytes", "sha256", "object_key", "created_at",
  "csv_sha256", "csv_bytes", "json_sha256", "json_bytes", "id_tag", "first_id",
] as const;
const KEY_COLUMNS = ["project_id", "key", "event_ids", "created_at", "request_hash"] as const;

const SEQ = EVENT_COLUMNS.indexOf("seq");

/** Rows per copy or delete batch: one batch is one short D1 transaction on each side. */
export const MOVE_BATCH = 500;
/** D1 caps one bound value at 2 MB; keep each statement's JSON well under it. */
const MAX_PARAM_BYTES = 1_000_000;

export type Raw = unknown[];

/** INSERT ... SELECT from json_each: D1 allows only 100 bound parameters per statement. */
export function insertStatements(db: D1Database, table: string, columns: readonly string[], rows: Raw[], verb = "INSERT"): D1PreparedStatement[] {
  const sql = `${verb} INTO ${table} (${columns.join(", ")}) SELECT ${columns.map((_, i) => `value ->> ${i}`).join(", ")} FROM json_each(?)`;
  const out: D1PreparedStatement[] = [];
  let chunk: string[] = [];
  let bytes = 0;
  for (const row of rows) {
    const json = JSON.stringify(row);
    if (chunk.length > 0 && bytes + json.length > MAX_PARAM_BYTES) {
      out.push(db.prepare(sql).bind(`[${chunk.join(",")}]`));
      chunk = [];
      bytes = 0;
    }
    chunk.push(json);
    bytes += json.length;
  }
  if (chunk.length > 0) out.push(db.prepare(sql).bind(`[${chunk.join(",")}]`));
  return out;
}

function armEventsAfter(db: D1Database, projectId: string, afterSeq: number, limit: number): Promise<Raw[]> {
  return db
    .prepare(`SELECT ${EVENT_COLUMNS.join(", ")} FROM ${rowsBySeq({ project: "?1", lo: "?2 + 1", hi: null, limit: "?3" })}`)
    .bind(projectId, afterSeq, limit)
    .raw();
}

/** The project's first `limit` rows after `afterSeq`, in seq order, from `arms` (none: every arm of the shard). */
async function eventsAfter(db: D1Database, projectId: string, afterSeq: number, limit: number, arms?: Arm[]): Promise<Raw[]> {
  const lists = await overArms(db, (arm) => armEventsAfter(arm, projectId, afterSeq, limit), arms);
  if (lists.length === 1) return lists[0];
  return mergeBySeq(lists.map((rows) => rows.map((raw) => ({ seq: raw[SEQ] as number, raw }))), limit).map((r) => r.raw);
}

/**
 * The INSERT of one project's rows (?2; JSON ?1 of `columns`' values, seq
 * order), each at the row id its layout in this shard gives it
 * (model/row-keys.ts): a keyed project's row at its key's row id for its seq,
 * in its block of 16 seqs for search; any other above the shard's highest
 * row below the keyed ones, in the order given, its search lead as given.
 * SQLite's own next row id would land in some project's keyed range once one
 * exists.
 */
function eventInsertSql(columns: readonly string[]): string {
  const seq = `(j.value ->> ${columns.indexOf("seq")})`;
  const values = columns.map((c, i) => (c === "search_lead" ? `CASE WHEN k.base IS NULL THEN j.value ->> ${i} ELSE ${keyedLead(seq)} END` : `j.value ->> ${i}`));
  return (
    `WITH k AS MATERIALIZED (SELECT ${keyBase("?2")} AS base, ${OLDER_TOP} AS top) ` +
    `INSERT INTO events (row_id, ${columns.join(", ")}) SELECT CASE WHEN k.base IS NULL THEN k.top + 1 + j.key ELSE k.base + ${seq} END, ` +
    `${values.join(", ")} FROM k, json_each(?1) j ORDER BY j.key`
  );
}

const EVENT_INSERT = eventInsertSql([...EVENT_COLUMNS, ...INDEXING_COLUMNS]);

/**
 * Insert statements of one project's rows (EVENT_COLUMNS, seq order, none of
 * them stored), stored as the commits that first wrote them stored them: their
 * commit spans and search groups follow in the same batch (model/row-indexing.ts).
 */
function storedInserts(db: D1Database, rows: Raw[]): D1PreparedStatement[] {
  const named = rows.map((r) => Object.fromEntries(EVENT_COLUMNS.map((c, i) => [c, r[i]])) as unknown as IndexedRow);
  const placement = placeRows(named, { copy: true });
  const projectId = named[0].project_id;
  const inserts: D1PreparedStatement[] = [];
  let chunk: string[] = [];
  let bytes = 0;
  const flush = () => {
    if (chunk.length > 0) inserts.push(db.prepare(EVENT_INSERT).bind(`[${chunk.join(",")}]`, projectId));
    chunk = [];
    bytes = 0;
  };
  for (const [i, r] of rows.entries()) {
    const json = JSON.stringify([...r, ...placement.indexing[i]]);
    if (bytes + json.length > MAX_PARAM_BYTES) flush();
    chunk.push(json);
    bytes += json.length;
  }
  flush();
  // Rows brought into the main tables mark them, as a commit there does: a read may have taken them for settled (model/periods.ts).
  return [...inserts, ...afterInserts(db, placement), db.prepare(MAIN_COMMIT_SQL).bind(projectId)];
}

/** Insert statements (rows and search entries) of archived rows (seq order) brought back into D1. */
export function restoreStatements(db: D1Database, rows: ReadonlyArray<Record<(typeof EVENT_COLUMNS)[number], unknown>>): D1PreparedStatement[] {
  return rows.length === 0 ? [] : storedInserts(db, rows.map((r) => EVENT_COLUMNS.map((c) => r[c])));
}

export class CopyMismatchError extends Error {
  constructor(message: string) {
    super(`the copy on the target shard differs from the source: ${message}`);
    this.name = "CopyMismatchError";
  }
}

/**
 * Copies up to `limit` events after `afterSeq` and checks them: the target's
 * rows of that seq range are replaced in one transaction (so a re-run, or a
 * re-copy after an erasure, leaves exactly one row each), then read back and
 * compared column by column with the source. Returns the last seq copied.
 * The source's rows come from all its arms; the target's go into, and are
 * read back from, its main tables (the clearing emptied its every arm).
 */
export async function copyEvents(from: D1Database, to: D1Database, projectId: string, afterSeq: number, limit = MOVE_BATCH, beforeCheck?: () => void) {
  const rows = await eventsAfter(from, projectId, afterSeq, limit);
  if (rows.length === 0) return { copied: 0, lastSeq: afterSeq };
  const first = rows[0][SEQ] as number;
  const last = rows[rows.length - 1][SEQ] as number;
  await to.batch([
    // The delete trigger drops the replaced rows' search entries; the new ones follow the inserts.
    to.prepare(`DELETE FROM events WHERE row_id IN (SELECT row_id FROM ${rowsBySeq({ project: "?1", lo: "?2", hi: "?3", columns: "e.row_id" })})`).bind(projectId, first, last),
    ...storedInserts(to, rows),
  ]);
  beforeCheck?.();
  const copy = await eventsAfter(to, projectId, first - 1, rows.length + 1, [null]);
  const inRange = copy.filter((r) => (r[SEQ] as number) <= last);
  if (inRange.length !== rows.length) throw new CopyMismatchError(`seq ${first}..${last}: ${rows.length} rows, ${inRange.length} copied`);
  for (let i = 0; i < rows.length; i++) {
    if (JSON.stringify(rows[i]) !== JSON.stringify(inRange[i])) throw new CopyMismatchError(`event seq ${rows[i][SEQ]}`);
  }
  return { copied: rows.length, lastSeq: last };
}

/**
 * Copies the project's signed gap records and archive index whole. They only
 * change when a purge or the archiver runs, and the ledger runs neither while
 * a move is copying.
 */
export async function copyGaps(from: D1Database, to: D1Database, projectId: string): Promise<number> {
  const rows = await from.prepare(`SELECT ${GAP_COLUMNS.join(", ")} FROM retention_gaps WHERE project_id = ? ORDER BY first_seq`).bind(projectId).raw();
  // The archive index too: its objects stay where they are (R2 is per project, not per shard).
  const segments = await from.prepare(`SELECT ${SEGMENT_COLUMNS.join(", ")} FROM archive_segments WHERE project_id = ?`).bind(projectId).raw();
  await to.batch([
    to.prepare("DELETE FROM retention_gaps WHERE project_id = ?").bind(projectId),
    ...insertStatements(to, "retention_gaps", GAP_COLUMNS, rows),
    to.prepare("DELETE FROM archive_segments WHERE project_id = ?").bind(projectId),
    ...insertStatements(to, "archive_segments", SEGMENT_COLUMNS, segments),
  ]);
  return rows.length;
}

/**
 * Copies up to `limit` entries of the project's archived-id index after
 * `afterSeq` (archive-ids.ts); returns the last seq copied, or null when none
 * was left. Like the archive index, it only changes when the archiver or a
 * purge runs, and neither runs while a move is copying.
 */
export async function copyArchiveIds(from: D1Database, to: D1Database, projectId: string, afterSeq: number, limit = MOVE_BATCH): Promise<number | null> {
  const rows = await from
    .prepare("SELECT project_id, seq, id FROM archive_ids WHERE project_id = ? AND seq > ? ORDER BY seq LIMIT ?")
    .bind(projectId, afterSeq, limit)
    .raw();
  if (rows.length === 0) return null;
  await to.batch(insertStatements(to, "archive_ids", ["project_id", "seq", "id"], rows, "INSERT OR REPLACE"));
  return rows[rows.length - 1][1] as number;
}

/** Copies up to `limit` idempotency keys after `afterKey` (key order); returns the last key copied, or null when none was left. */
export async function copyKeys(from: D1Database, to: D1Database, projectId: string, afterKey: string, limit = MOVE_BATCH): Promise<string | null> {
  const rows = await from
    .prepare(`SELECT ${KEY_COLUMNS.join(", ")} FROM idempotency_keys WHERE project_id = ? AND key > ? ORDER BY key LIMIT ?`)
    .bind(projectId, afterKey, limit)
    .raw();
  if (rows.length === 0) return null;
  await to.batch(insertStatements(to, "idempotency_keys", KEY_COLUMNS, rows, "INSERT OR REPLACE"));
  return rows[rows.length - 1][1] as string;
}

/** Keys stored since the move began: appends keep adding them behind the key-order cursor. */
export async function copyKeysSince(from: D1Database, to: D1Database, projectId: string, since: string): Promise<number> {
  const rows = await from
    .prepare(`SELECT ${KEY_COLUMNS.join(", ")} FROM idempotency_keys WHERE project_id = ? AND created_at >= ?`)
    .bind(projectId, since)
    .raw();
  if (rows.length > 0) await to.batch(insertStatements(to, "idempotency_keys", KEY_COLUMNS, rows, "INSERT OR REPLACE"));
  return rows.length;
}

/** The project's row counts on one shard (its events in every arm): what the final check compares. */
export async function rowCounts(db: D1Database, projectId: string) {
  return withShardArms(db, async (arms) => {
    const results = await db.batch<{ n: number }>([
      ...arms.map((n) => armDb(db, n).prepare(`SELECT count(*) AS n FROM ${rowsBySeq({ project: "?1", lo: "0", hi: null, columns: "e.seq" })}`).bind(projectId)),
      db.prepare("SELECT count(*) AS n FROM retention_gaps WHERE project_id = ?").bind(projectId),
      db.prepare("SELECT count(*) AS n FROM idempotency_keys WHERE project_id = ?").bind(projectId),
      db.prepare("SELECT count(*) AS n FROM archive_segments WHERE project_id = ?").bind(projectId),
      db.prepare("SELECT count(*) AS n FROM archive_ids WHERE project_id = ?").bind(projectId),
    ]);
    const [gaps, keys, segments, ids] = results.slice(arms.length);
    const events = results.slice(0, arms.length).reduce((sum, r) => sum + r.results[0].n, 0);
    return { events, gaps: gaps.results[0].n, keys: keys.results[0].n, segments: segments.results[0].n, archivedIds: ids.results[0].n };
  });
}

/** The statements that delete up to `limit` of the project's events from one arm, the first reckoning what they take. */
function armDeletes(db: D1Database, projectId: string, limit: number): D1PreparedStatement[] {
  return [
    // What the events about to go take, roughly (shard-pressure.ts: their pages are free once they are deleted).
    db
      .prepare(
        `SELECT coalesce(sum(length(metadata) + length(targets) + coalesce(length(changes), 0) + 300 + ${HOT_ROW_OVERHEAD_BYTES}), 0) AS bytes ` +
          `FROM ${rowsBySeq({ project: "?1", lo: "0", hi: null, limit: "?2", columns: "e.metadata, e.targets, e.changes" })}`,
      )
      .bind(projectId, limit),
    db.prepare(`DELETE FROM events WHERE row_id IN (SELECT row_id FROM ${rowsBySeq({ project: "?1", lo: "0", hi: null, limit: "?2", columns: "e.row_id" })})`).bind(projectId, limit),
  ];
}

/**
 * Deletes up to `limit` of the project's rows from a shard (events first, by
 * seq, from every arm, each arm its share of `limit` so that the batch stays
 * as short as it was with one; the trigger drops their search entries).
 * Returns how many went; 0 when the shard holds nothing of the project any more.
 */
export async function deleteBatch(db: D1Database, projectId: string, limit = MOVE_BATCH): Promise<{ rows: number; freedBytes: number }> {
  return withShardArms(db, (arms) => deleteInArms(db, arms, projectId, limit));
}

async function deleteInArms(db: D1Database, arms: Arm[], projectId: string, limit: number): Promise<{ rows: number; freedBytes: number }> {
  const share = Math.ceil(limit / arms.length);
  const results = await db.batch([
    ...arms.flatMap((n) => armDeletes(armDb(db, n), projectId, share)),
    db.prepare("DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys WHERE project_id = ? LIMIT ?)").bind(projectId, limit),
    db.prepare("DELETE FROM retention_gaps WHERE id IN (SELECT id FROM retention_gaps WHERE project_id = ? LIMIT ?)").bind(projectId, limit),
    db.prepare("DELETE FROM archive_segments WHERE rowid IN (SELECT rowid FROM archive_segments WHERE project_id = ? LIMIT ?)").bind(projectId, limit),
    db.prepare("DELETE FROM archive_ids WHERE project_id = ?1 AND seq IN (SELECT seq FROM archive_ids WHERE project_id = ?1 ORDER BY seq LIMIT ?2)").bind(projectId, limit),
    // Summaries are not copied (derived, and up to 11 KB each): the archiver's backfill writes them anew on the target.
    db.prepare("DELETE FROM archive_summaries WHERE project_id = ?1 AND first_seq IN (SELECT first_seq FROM archive_summaries WHERE project_id = ?1 LIMIT ?2)").bind(projectId, limit),
  ]);
  const [keys, gaps, segments, ids, summaries] = results.slice(2 * arms.length);
  let events = 0;
  let bytes = 0;
  for (let i = 0; i < 2 * arms.length; i += 2) {
    bytes += (results[i].results[0] as { bytes: number }).bytes;
    events += results[i + 1].meta.changes;
  }
  const rows = events + keys.meta.changes + gaps.meta.changes + segments.meta.changes + ids.meta.changes + summaries.meta.changes;
  return { rows, freedBytes: bytes + 150 * (ids.meta.changes + keys.meta.changes) };
}
