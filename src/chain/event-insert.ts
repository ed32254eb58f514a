import type { EventRow } from "../db/schema";
// .ts extensions: test/bench/sqlite-floor.mjs runs this file in plain Node.
import type { NamedAppend } from "../model/commit-spans.ts";
import { afterInserts, INDEXING_COLUMNS, placeRows, type RowIndexing } from "../model/row-indexing.ts";
import { commitInsertSql } from "../model/search-index.ts";

export const COLUMNS = [
  "id", "project_id", "seq", "action", "organization", "actor_id", "actor_type", "actor_name",
  "actor_email", "targets", "metadata", "occurred_at", "received_at", "ip_address", "user_agent",
  "pii_salt", "pii_commitment", "hash", "prev_hash", "signature", "changes", "schema_version", "schema_valid",
  ...INDEXING_COLUMNS,
] as const;

/** The rows of one project, the first with seq ?3, from JSON ?1, numbered for its search groups (search-index.ts). */
const INSERT_SQL = commitInsertSql(COLUMNS);

/**
 * A row's values in COLUMNS order, written out: one array literal per row
 * instead of twenty keyed reads through a closure (the insert runs once per
 * ingested event). A unit test holds it to COLUMNS.
 */
export function columnValues(r: EventRow, indexing: RowIndexing): unknown[] {
  return [
    r.id, r.project_id, r.seq, r.action, r.organization, r.actor_id, r.actor_type, r.actor_name,
    r.actor_email, r.targets, r.metadata, r.occurred_at, r.received_at, r.ip_address, r.user_agent,
    r.pii_salt, r.pii_commitment, r.hash, r.prev_hash, r.signature, r.changes, r.schema_version, r.schema_valid,
    indexing[0], indexing[1], indexing[2], indexing[3], indexing[4], indexing[5], indexing[6], indexing[7], indexing[8],
  ];
}

/** D1 caps one bound value at 2 MB; keep each statement's JSON well under it. */
const MAX_PARAM_BYTES = 1_000_000;

/**
 * Many rows per statement through json_each: D1 allows only 100 bound
 * parameters per statement, and one statement per row would be far slower.
 * Rows are in seq order per project (a commit's are one project's). Their
 * row_id and search lead are made in SQL (search-index.ts, commitInsertSql),
 * so a commit's rows go on in the project's open search group; the other
 * columns of indexing are the ones every writer computes (model/row-indexing.ts).
 * The rows' commit spans and search index entries follow the inserts, so one
 * D1 batch commits them all.
 */
export function insertEventsStatements(db: D1Database, rows: EventRow[], appends: readonly NamedAppend[] = []): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  let chunk: string[] = [];
  let bytes = 0;
  let first: EventRow | null = null;
  const flush = () => {
    if (first === null) return;
    statements.push(db.prepare(INSERT_SQL).bind(`[${chunk.join(",")}]`, first.project_id, first.seq));
    chunk = [];
    bytes = 0;
    first = null;
  };
  const placement = placeRows(rows, { appends });
  for (const [i, row] of rows.entries()) {
    const json = JSON.stringify(columnValues(row, placement.indexing[i]));
    if (bytes + json.length > MAX_PARAM_BYTES || (first !== null && first.project_id !== row.project_id)) flush();
    first ??= row;
    chunk.push(json);
    bytes += json.length;
  }
  flush();
  statements.push(...afterInserts(db, placement));
  return statements;
}
