// .ts extensions: test/migrations/storage-v2.test.mjs runs this file in plain Node.
import { idMillis } from "./event-id.ts";
import type { Statement } from "./event-query.ts";

/**
 * Hot events by id, without an id index entry per event (storage v2,
 * migrations/0029_commit_spans.sql).
 *
 * A commit stamps one received_at on all its events, and their ids carry that
 * millisecond (model/event-id.ts). So the commit writes one commit_spans row
 * (received_at, project, seq range) and its rows take no id index entry
 * (id_indexed = 0). A lookup reads the spans of the id's millisecond (usually
 * one) and then that seq range of the (project_id, seq) index, comparing ids.
 * Shard copies and archive restores write spans too (commit-spans.ts). Rows
 * written any other way (before 0029, older code, an id without its
 * received_at) keep id_indexed = 1 and their entry in the now partial id
 * index, and so does a row alone in its commit, for which the entry is the
 * cheaper (migration 0036): the statement asks both ways at once, so no
 * reader needs to know which a row took.
 *
 * `columns` are of `events e` (CHAIN_COLUMNS, SHAPE_SELECT). Without a
 * project (a public receipt) every project's spans of that millisecond are
 * read; the id comparison keeps only the event itself.
 */
export function eventsByIdStatement(columns: string, ids: readonly string[], projectId: string | null): Statement {
  // ?1 the ids, ?2 the project, ?3 the instants: D1 wants exactly as many values as the highest number used.
  const params: unknown[] = projectId === null ? [JSON.stringify(ids)] : [JSON.stringify(ids), projectId];
  const project = (alias: string) => (projectId === null ? "" : ` AND ${alias}.project_id = ?2`);
  const legacy =
    `SELECT ${columns} FROM events e INDEXED BY events_legacy_id_unique ` +
    `WHERE e.id IN (SELECT value FROM json_each(?1)) AND e.id_indexed = 1${project("e")}`;
  const instants = [...new Set(ids.map(idMillis).filter((ms): ms is number => ms !== null))].map((ms) => new Date(ms).toISOString());
  if (instants.length === 0) return { sql: legacy, params };
  params[1] = projectId;
  params[2] = JSON.stringify(instants);
  // The row ids first, then the rows: the select list stays about `events e` alone.
  const spanned =
    `SELECT ${columns} FROM events e WHERE e.row_id IN (SELECT s.row_id FROM commit_spans c ` +
    "CROSS JOIN events s ON s.project_id = c.project_id AND s.seq BETWEEN c.first_seq AND c.last_seq " +
    `WHERE c.received_at IN (SELECT value FROM json_each(?3))${project("c")} ` +
    "AND s.id IN (SELECT value FROM json_each(?1)) AND s.id_indexed = 0)";
  return { sql: `${legacy} UNION ALL ${spanned}`, params };
}
