// .ts extensions: test/bench/sqlite-floor.mjs and the migrations test run this file in plain Node.

/**
 * How a project's hot row is found by its seq: the seam where keyed row ids
 * come in (issue 38, storage v2; the bench README's "Keyed row ids, a project
 * at a time" has the plan and its measurements).
 *
 * A row on the seq index (events_project_seq_idx) costs an entry there, a
 * billed D1 row at ingest. A keyed project's rows instead sit at row_id =
 * its number in the shard x KEY_SPAN + seq (the shard's project_keys,
 * migration 0045), so a read by seq finds them by row_id and they take no
 * entry (the index is partial: migration 0046). A
 * project is keyed or not for the whole of its stay in a shard: it gets its
 * number when it is placed there (made, or moved in by a shard move, which
 * writes every row it copies at its key), and a project made before keys
 * keeps the older layout, the seq index, until it moves. So a read by seq
 * takes one of two paths, and which one is a fact of the project that does
 * not change while it reads:
 * - no key: the seq index, over rows whose row_id is below KEY_SPAN
 *   (legacyRows);
 * - a key: its range of row ids (keyedRows).
 *
 * Two ways to take them:
 * - A reader that knows the number (the list walks: storage/shards.ts caches
 *   it with the project's shard; verify: once a walk) builds its statement
 *   for that path alone, the number in it (KnownKey: event-query.ts,
 *   stand-ins.ts). A project with no key then runs the statements it ran
 *   before keys.
 * - Any other statement takes both paths, and the one the project is not on
 *   ends at once: the key is looked up in project_keys (keyBase; once a
 *   statement, an uncorrelated subquery), the keyed range of a project with
 *   no key is empty, and the older walk of a keyed one stops at a LIMIT of 0
 *   (olderWalk). The lookups cost each statement some microseconds; these are
 *   pages of up to 2,000 rows (verify, exports, streams, the archive).
 * A row a database writer plants on the other path is read by nothing, and
 * one it moves off its path is missing from every read, verify's walk
 * included.
 *
 * Who writes them: a new project gets its number (PLACE_KEY_SQL, from
 * storage/projects.ts), as does one a shard move brings (shard-move.ts);
 * commits, copies and restores put its rows at their keys (search-index.ts,
 * commitInsertSql; shard-copy.ts), its search groups blocks of 16 seqs.
 *
 * The seq index is partial over row ids below KEY_SPAN (migration 0046), so
 * a keyed row takes no entry: every statement that walks it says
 * `row_id < KEY_SPAN`, which SQLite needs to take a partial index, and a walk
 * of the shard's projects takes the keyed ones from project_keys
 * (shardProjects).
 */

/** Row ids at or past this are keyed: 2^40 seqs a project, and 8,191 projects a shard keep every row id exact in JavaScript (under 2^53). */
export const KEY_SPAN = 1_099_511_627_776;

/**
 * The older path's index, named: its terms include `row_id < KEY_SPAN`, and for a min() or max() SQLite would
 * otherwise walk that range of row ids, the whole table (it cost a list by address 0.5 ms in Node's SQLite).
 */
const BY_SEQ = "INDEXED BY events_project_seq_idx";

/** SQL: project `p`'s first keyed row id, its number x KEY_SPAN (NULL when it has no key). It names only `p`: for a bound `p`, SQLite looks it up once a statement, not once a row. */
export function keyBase(p: string): string {
  return `(SELECT k.n * ${KEY_SPAN} FROM project_keys k WHERE k.project_id = ${p})`;
}

/**
 * SQL for the older path's LIMIT: `limit` (SQL; -1 for none) when project `p` is on it, 0 when it has a key, so
 * the walk ends before it starts. A guard in WHERE would not: SQLite (3.51) tests a term that holds a
 * subquery at every row of the walk, even when it names none of the walk's tables, and a walk of the spans behind
 * one read the project's every span (a list 0.27 -> 0.54 ms). A LIMIT it reckons once, before the walk.
 */
function olderLimit(p: string, limit: string): string {
  return `(CASE WHEN ${hasKey(p)} THEN 0 ELSE ${limit} END)`;
}

function hasKey(p: string): string {
  return `EXISTS (SELECT 1 FROM project_keys k WHERE k.project_id = ${p})`;
}

/**
 * SQL: a walk of the older path for project `p`, stopped at `limit` (-1: none), and at once when `p` has a key:
 * by its LIMIT for a bound `p`; a LIMIT cannot name a column of an outer query, so for a column `p` (one walk per
 * project of a CTE's), by a term that SQLite tests at each row (the walks that take it stop at their first row).
 */
function olderWalk(p: string, select: string, where: string, order: string, limit: string): string {
  return BOUND.test(p) ? `${select} WHERE ${where} ORDER BY ${order} LIMIT ${olderLimit(p, limit)}` : `${select} WHERE NOT ${hasKey(p)} AND ${where} ORDER BY ${order} LIMIT ${limit}`;
}

/** A bound parameter: a value for the whole statement. */
const BOUND = /^\?\d+$/;

/**
 * SQL: the shard's highest row id below the keyed ones (0 with none): where an insert of rows on the seq index
 * numbers them from. SQLite's own next row id would land in some project's keyed range once one exists.
 */
export const OLDER_TOP = `coalesce((SELECT row_id FROM events WHERE row_id < ${KEY_SPAN} ORDER BY row_id DESC LIMIT 1), 0)`;

/** SQL: the row id project `p`'s keyed row of seq `seq` has (NULL when it has no key). */
export function keyedRowId(p: string, seq: string): string {
  return `(${keyBase(p)} + (${seq}))`;
}

/** A range of seqs, both ends SQL expressions and inclusive; `hi` null for no upper bound. */
export interface SeqBounds {
  lo: string;
  hi: string | null;
}

/** SQL: the terms on `e` for project `p`'s older rows of seqs `b` (the seq index's path). */
export function legacyRows(e: string, p: string, b: SeqBounds): string {
  const seqs = b.hi === b.lo ? `${e}.seq = ${b.lo}` : `${e}.seq >= ${b.lo}${b.hi === null ? "" : ` AND ${e}.seq <= ${b.hi}`}`;
  return `${e}.row_id < ${KEY_SPAN} AND ${e}.project_id = ${p} AND ${seqs}`;
}

/** SQL: the terms on `e` for project `p`'s keyed rows of seqs `b` (a range of row ids: none when it has no key). */
export function keyedRows(e: string, p: string, b: SeqBounds): string {
  const lo = keyedRowId(p, `max(${b.lo}, 0)`);
  // Clamped to the key's span: a bound past it (a caller's "every seq") stays inside the project's row ids.
  const hi = keyedRowId(p, b.hi === null ? `${KEY_SPAN} - 1` : `min(${b.hi}, ${KEY_SPAN} - 1)`);
  return `${e}.row_id BETWEEN ${lo} AND ${hi}`;
}

/** What a read by seq range asks: its project, bounds, other terms on `e`, order and limit. */
export interface SeqRead extends SeqBounds {
  /** SQL of the project: a numbered parameter (each path repeats it) or a column. */
  project: string;
  /** More terms on `e`, each path's: numbered parameters only. */
  where?: string;
  /** Seq order; the default ascending. */
  desc?: boolean;
  /** SQL: at most this many rows (each path stops there; the paths together hold at most that many in order). */
  limit?: string;
  /** The columns each row carries (of `e`); every column by default. */
  columns?: string;
  /** The project's layout when the caller knows it (KnownKey): that path alone. */
  key?: KnownKey;
}

/**
 * SQL: a table (for FROM, to be aliased) of the project's rows in the seq
 * range, in seq order, both paths. The project's rows are on one path, so a
 * UNION ALL of the two with a LIMIT around it is that path's rows. Each path
 * reads its rows in order from its own index (the seq index, or the table's
 * row ids) and stops at the limit, so nothing is sorted; the older one is
 * guarded (olderLimit): a row a database writer plants there for a keyed
 * project must be read by nothing.
 */
export function rowsBySeq(r: SeqRead): string {
  const where = r.where ? ` AND ${r.where}` : "";
  const dir = r.desc ? "DESC" : "ASC";
  const limit = r.limit ? ` LIMIT ${r.limit}` : "";
  const columns = r.columns ?? "e.*";
  if (r.key !== undefined) {
    const hi = r.hi ?? (r.key === null ? null : `${KEY_SPAN} - 1`);
    const seqs = hi === null ? legacyRows("e", r.project, r) : seqsOn("e", r.key, r.project, r.lo, hi);
    return `(SELECT ${columns} FROM events e ${seqIndex(r.key)} WHERE ${seqs}${where} ORDER BY ${seqOrder("e", r.key)} ${dir}${limit})`;
  }
  const older = `SELECT * FROM (${olderWalk(r.project, `SELECT ${columns} FROM events e ${BY_SEQ}`, `${legacyRows("e", r.project, r)}${where}`, `e.seq ${dir}`, r.limit ?? "-1")})`;
  // NOT INDEXED: the range of row ids is the walk (SQLite may otherwise take another index the other terms name, and sort).
  const keyed = `SELECT * FROM (SELECT ${columns} FROM events e NOT INDEXED WHERE ${keyedRows("e", r.project, r)}${where} ORDER BY e.row_id ${dir}${limit})`;
  return `(SELECT * FROM (${older} UNION ALL ${keyed})${limit})`;
}

/**
 * SQL: project `p`'s first hot seq, or with `newest` its last (NULL when it has none). One seek on each path: the
 * first row in order, not min() or max(), which with a term the index does not hold (row_id < KEY_SPAN) reads the
 * project's every entry (a list by address paid 0.6 ms for it in Node's SQLite).
 */
export function seqEdge(p: string, newest: boolean): string {
  const dir = newest ? "DESC" : "ASC";
  const keyed =
    `(SELECT (SELECT e.row_id FROM events e NOT INDEXED WHERE e.row_id BETWEEN k.n * ${KEY_SPAN} AND k.n * ${KEY_SPAN} + ${KEY_SPAN} - 1 ` +
    `ORDER BY e.row_id ${dir} LIMIT 1) - k.n * ${KEY_SPAN} FROM project_keys k WHERE k.project_id = ${p})`;
  const older = `(${olderWalk(p, `SELECT e.seq FROM events e ${BY_SEQ}`, `e.row_id < ${KEY_SPAN} AND e.project_id = ${p}`, `e.seq ${dir}`, "1")})`;
  return `coalesce(${keyed}, ${older})`;
}

/** SQL: the terms on `e` for project `p`'s rows of seqs [lo, hi] on both paths, for a lookup in no order (an OR: SQLite seeks each path). */
export function seqSpan(e: string, p: string, lo: string, hi: string): string {
  return `((${legacyRows(e, p, { lo, hi })}) OR (${keyedRows(e, p, { lo, hi })}))`;
}

/** SQL with its positional parameters (`?`) numbered from `first` on: each path of rowsBySeq repeats its terms, and with them their parameters. */
export function numbered(sql: string, first: number): string {
  let n = first;
  return sql.replace(/\?(?!\d)/g, () => `?${n++}`);
}

/** SQL: the row id of project `p`'s row of seq `seq` on its path (NULL when there is none): one lookup. */
export function rowIdOf(p: string, seq: string): string {
  return `coalesce(${keyedRowId(p, seq)}, (SELECT l.row_id FROM events l ${BY_SEQ} WHERE ${legacyRows("l", p, { lo: seq, hi: seq })}))`;
}

/** SQL: the row ids of project `p`'s rows of the seqs in JSON array `seqs` (a parameter), for `row_id IN (...)`. */
export function rowIdsOf(p: string, seqs: string): string {
  return `SELECT ${rowIdOf(p, "x.value")} FROM json_each(${seqs}) x`;
}

/**
 * What a reader that looked the project's number up knows of its layout
 * (storage/shards.ts, projectRowKey; verify-range.ts): its walks take that
 * path alone, so a project with no key runs the statements it ran before
 * keys (event-query.ts). For a keyed project, the SQL of its first row id,
 * bound or a constant: a lookup of its key in each walk would cost a list
 * some 20 us a lookup in the statement, whether or not SQLite makes it
 * (0.3-0.7 ms a list by address in Node's SQLite). Null: no key.
 */
export type KnownKey = string | null;

/** The KnownKey of a project numbered `rowKey` in its shard (null: none), as a number in the SQL: for a statement made once and run many times (verify's pages). */
export function literalKey(rowKey: number | null): KnownKey {
  return rowKey === null ? null : String(rowKey * KEY_SPAN);
}

/** Project `projectId`'s number in the shard `db` (null: its rows there are on the seq index), as the shard itself keeps it. */
export async function shardRowKey(db: D1Database, projectId: string): Promise<number | null> {
  return (await db.prepare("SELECT n FROM project_keys WHERE project_id = ?").bind(projectId).first<{ n: number }>())?.n ?? null;
}

/** The KnownKey of a project numbered `rowKey` in its shard (null: none), its first row id bound with `bind`. */
export function knownKey(rowKey: number | null, bind: (value: unknown) => string): KnownKey {
  // CAST: a JavaScript number may be bound as a REAL; row ids compare as integers.
  return rowKey === null ? null : `CAST(${bind(rowKey * KEY_SPAN)} AS INTEGER)`;
}

/** SQL: how a join reads `events` by seq on the path: the seq index, or (NOT INDEXED) the table's row ids. */
export function seqIndex(key: KnownKey): string {
  return key === null ? BY_SEQ : "NOT INDEXED";
}

/** SQL: the join terms on `e` for project `p`'s rows of seqs [lo, hi] on the path `key` names (one seq when hi is lo). */
export function seqsOn(e: string, key: KnownKey, p: string, lo: string, hi = lo): string {
  if (key !== null) return hi === lo ? `${e}.row_id = ${key} + ${lo}` : `${e}.row_id BETWEEN ${key} + ${lo} AND ${key} + ${hi}`;
  return `${e}.row_id < ${KEY_SPAN} AND ${e}.project_id = ${p} AND ${hi === lo ? `${e}.seq = ${lo}` : `${e}.seq BETWEEN ${lo} AND ${hi}`}`;
}

/** SQL: `e`'s column that orders the rows of a seqsOn range by seq on the path `key` names. */
export function seqOrder(e: string, key: KnownKey): string {
  return key === null ? `${e}.seq` : `${e}.row_id`;
}

/** SQL: project `p`'s newest hot seq, or its oldest, on the path `key` names (NULL when it has none). */
export function knownSeqEdge(key: KnownKey, p: string, newest: boolean): string {
  const dir = newest ? "DESC" : "ASC";
  if (key !== null) return `(SELECT e.row_id - ${key} FROM events e NOT INDEXED WHERE e.row_id BETWEEN ${key} AND ${key} + ${KEY_SPAN - 1} ORDER BY e.row_id ${dir} LIMIT 1)`;
  return `(SELECT e.seq FROM events e ${BY_SEQ} WHERE e.row_id < ${KEY_SPAN} AND e.project_id = ${p} ORDER BY e.seq ${dir} LIMIT 1)`;
}

/**
 * SQL: common table expressions (for WITH RECURSIVE) ending in `name`(id), each project with a hot row in the
 * shard once: those with no key hop along the seq index, one seek a project however many rows it holds, and
 * each keyed one is taken from project_keys when a row of its range is there (one seek a key).
 */
export function shardProjects(name: string): string {
  const next = (after: string) => `(SELECT o.project_id FROM events o ${BY_SEQ} WHERE o.row_id < ${KEY_SPAN}${after} ORDER BY o.project_id LIMIT 1)`;
  return (
    `older(id) AS (SELECT ${next("")} UNION ALL SELECT ${next(" AND o.project_id > older.id")} FROM older WHERE older.id IS NOT NULL), ` +
    `${name}(id) AS (SELECT id FROM older WHERE id IS NOT NULL UNION SELECT k.project_id FROM project_keys k ` +
    `WHERE EXISTS (SELECT 1 FROM events e WHERE e.row_id BETWEEN k.n * ${KEY_SPAN} AND k.n * ${KEY_SPAN} + ${KEY_SPAN - 1}))`
  );
}

/** The most projects a shard numbers: n x KEY_SPAN + seq stays an exact integer in JavaScript (under 2^53). */
export const MAX_KEYS = 8191;

/**
 * SQL: gives project ?1 the shard's next free number (project_keys), when it
 * has no row there yet: what placing a project in a shard does (a new one,
 * or one a move brings), before any of its rows is written. A project that
 * already has rows keeps its layout; past MAX_KEYS numbers, a project is
 * placed on the seq index. One statement: D1 runs it alone, so two
 * placements never take one number.
 */
export const PLACE_KEY_SQL =
  "INSERT OR IGNORE INTO project_keys (project_id, n) SELECT ?1, coalesce(max(n), 0) + 1 FROM project_keys " +
  `HAVING coalesce(max(n), 0) < ${MAX_KEYS} AND NOT EXISTS (SELECT 1 FROM events ${BY_SEQ} WHERE row_id < ${KEY_SPAN} AND project_id = ?1)`;
