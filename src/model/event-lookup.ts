// .ts extensions: test/migrations/storage-v2.test.mjs runs this file in plain Node.
import { idMillis, tagOfId } from "./event-id.ts";
import type { Statement } from "./event-query.ts";
import { rowIdOf, rowsBySeq, seqEdge, seqSpan } from "./row-keys.ts";

/**
 * Hot events by id, without an id index entry per event (storage v2,
 * migrations/0029_commit_spans.sql, 0036, 0037).
 *
 * A commit stamps one received_at on all its events, and their ids carry that
 * millisecond (model/event-id.ts). So a row is found one of three ways, which
 * its id_indexed says (model/row-indexing.ts decides):
 * - 0: its commit wrote one commit_spans row (received_at, project, seq
 *   range), read for the id's millisecond (usually one span) and then that
 *   seq range of the (project_id, seq) index, comparing ids: commits of two
 *   events or more, and shard copies and archive restores of their rows;
 * - 2: alone in its commit and live (no occurred_at sent), its occurred_at is
 *   the id's millisecond, so the project's time index holds it at that
 *   instant (migration 0037);
 * - 1: anything else (rows before 0029, an id without its received_at, a
 *   lone backfilled row) keeps its entry in the now partial id index.
 * The statement asks all three ways at once, so no reader needs to know
 * which a row took.
 *
 * `columns` are of `events e` (CHAIN_COLUMNS, SHAPE_SELECT). Without a
 * project (a public receipt) every project's spans of that millisecond are
 * read, and the time index of the projects that carry the id's tag
 * (project_tags); the id comparison keeps only the event itself.
 */
export function eventsByIdStatement(columns: string, ids: readonly string[], projectId: string | null): Statement {
  // ?1 the ids, ?2 the project, ?3 the instants, ?4 the tags: D1 wants exactly as many values as the highest number used.
  const params: unknown[] = projectId === null ? [JSON.stringify(ids)] : [JSON.stringify(ids), projectId];
  const project = (alias: string) => (projectId === null ? "" : ` AND ${alias}.project_id = ?2`);
  const legacy = (select: string) =>
    `SELECT ${select} FROM events e INDEXED BY events_legacy_id_unique ` +
    `WHERE e.id IN (SELECT value FROM json_each(?1)) AND e.id_indexed = 1${project("e")}`;
  const located = ids.filter((id) => idMillis(id) !== null);
  const instants = [...new Set(located.map((id) => new Date(idMillis(id)!).toISOString()))];
  if (instants.length === 0) return { sql: legacy(columns), params };
  params[1] = projectId;
  params[2] = JSON.stringify(instants);
  // The row ids first, then the rows: the select list stays about `events e` alone.
  const spanned = (select: string) =>
    `SELECT ${select} FROM events e WHERE e.row_id IN (SELECT s.row_id FROM commit_spans c ` +
    `CROSS JOIN events s ON ${seqSpan("s", "c.project_id", "c.first_seq", "c.last_seq")} ` +
    `WHERE c.received_at IN (SELECT value FROM json_each(?3))${project("c")} ` +
    "AND s.id IN (SELECT value FROM json_each(?1)) AND s.id_indexed = 0)";
  // Without a project, the projects that carry the ids' tags first (CROSS JOIN keeps that order), then each one's instants.
  const projects = projectId === null ? "project_tags t CROSS JOIN " : "";
  const whose = projectId === null ? "t.tag IN (SELECT value FROM json_each(?4)) AND s.project_id = t.project_id" : "s.project_id = ?2";
  const atInstant = (select: string) =>
    `SELECT ${select} FROM events e WHERE e.row_id IN (SELECT s.row_id FROM ${projects}events s INDEXED BY events_project_time_idx ` +
    `WHERE ${whose} AND s.occurred_at IN (SELECT value FROM json_each(?3)) AND s.id IN (SELECT value FROM json_each(?1)) AND s.id_indexed = 2 AND s.time_in_span = 0)`;
  if (projectId === null) params[3] = JSON.stringify([...new Set(located.map(tagOfId))]);
  const found = (select: string) => `${legacy(select)} UNION ALL ${spanned(select)} UNION ALL ${atInstant(select)}`;
  if (ids.length !== 1) return { sql: found(columns), params };
  // One id found nowhere: a lone live row whose occurred_at was changed, looked for by its received_at.
  const lost =
    `SELECT ${columns} FROM events e WHERE NOT EXISTS (SELECT 1 FROM (${found("1")})) AND e.row_id IN (${byReceiveTime(projectId === null ? "project_tags t WHERE t.tag IN (SELECT value FROM json_each(?4))" : "(SELECT ?2 AS project_id) t")})`;
  return { sql: `${found(columns)} UNION ALL ${lost}`, params };
}

/**
 * SQL: the row id of the row of a lone commit received at the id's instant
 * (?3 its one instant, ?1 the id) in each project of `projects` (a FROM
 * clause naming projects as t.project_id). A binary search of the project's
 * (project_id, seq) index for the first row received at or after the
 * instant: commits stamp received_at in chain order (chain/group-commit.ts),
 * so that row is the lone commit's. About two index reads per halving, 40
 * for a trillion events, and only when nothing else found the id.
 *
 * Why: a lone live row is found at its instant in the time index, which
 * reads its occurred_at. A database writer who changes that field must not
 * make the event unknown (a receipt would then say no such event, as if
 * retention had purged it): found here, its receipt says it was altered. A
 * project whose received_at ever stepped back (a ledger that started on a
 * clock more than a minute behind its last commit, or code before
 * GroupCommit.resumeAfter) may send the search past the row; it then stays
 * unknown, as it would have without this search.
 */
function byReceiveTime(projects: string): string {
  // Each step either probes the first row in [mid, hi] (k = 0), keeping it as received_at || seq (received_at is
  // 24 characters, toISOString), or narrows [lo, hi] by that probe (k = 1); ans is the first row at or after ?3 so far.
  const at = "(SELECT value FROM json_each(?3))";
  const probed = "CAST(substr(f, 25) AS INTEGER)";
  const before = `f IS NOT NULL AND substr(f, 1, 24) < ${at}`;
  return (
    "WITH RECURSIVE b(p, lo, hi, ans, f, k) AS (" +
    `SELECT t.project_id, ${seqEdge("t.project_id", false)}, ${seqEdge("t.project_id", true)}, NULL, NULL, 0 FROM ${projects} ` +
    "UNION ALL SELECT p, " +
    `CASE WHEN k = 1 AND ${before} THEN ${probed} + 1 ELSE lo END, ` +
    `CASE WHEN k = 1 AND NOT (${before}) THEN (lo + hi) / 2 - 1 ELSE hi END, ` +
    `CASE WHEN k = 1 AND f IS NOT NULL AND NOT (${before}) THEN ${probed} ELSE ans END, ` +
    `CASE WHEN k = 0 THEN (SELECT received_at || seq FROM ${rowsBySeq({ project: "b.p", lo: "(b.lo + b.hi) / 2", hi: "b.hi", limit: "1", columns: "e.received_at, e.seq" })}) END, ` +
    "1 - k FROM b WHERE lo <= hi) " +
    `SELECT s.row_id FROM b CROSS JOIN events s ON s.row_id = ${rowIdOf("b.p", "b.ans")} WHERE b.lo > b.hi AND s.received_at = ${at} ` +
    "AND s.id IN (SELECT value FROM json_each(?1)) AND s.id_indexed = 2"
  );
}

/** What storage reads of a row to tell whether it is found at its instant. */
export interface InstantRow {
  id: string;
  received_at: string;
  occurred_at: string;
}

/**
 * Whether the time index finds the row by its id alone: its id carries its
 * received_at millisecond (a located id) and its occurred_at is exactly that
 * instant as eventsByIdStatement writes it (a live event's occurred_at is its
 * received_at: chain/seal-events.ts).
 */
export function foundAtInstant(r: InstantRow): boolean {
  const ms = idMillis(r.id);
  return ms !== null && r.occurred_at === r.received_at && new Date(ms).toISOString() === r.received_at;
}

/**
 * The project_tags rows that rows found at their instant need, for a lookup
 * that names no project: one per (tag, project), written only when missing
 * (a conflict that is ignored is not a row written).
 */
export function projectTagStatements(db: D1Database, rows: ReadonlyArray<InstantRow & { project_id: string }>, atInstant: readonly boolean[]): D1PreparedStatement[] {
  const pairs = new Map<string, [number, string]>();
  rows.forEach((r, i) => {
    if (atInstant[i]) pairs.set(`${tagOfId(r.id)}\n${r.project_id}`, [tagOfId(r.id), r.project_id]);
  });
  return [...pairs.values()].map(([tag, projectId]) =>
    db.prepare("INSERT INTO project_tags (tag, project_id) VALUES (?, ?) ON CONFLICT DO NOTHING").bind(tag, projectId),
  );
}
