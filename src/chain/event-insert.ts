import type { EventRow } from "../db/schema";
// .ts extensions: test/bench/sqlite-floor.mjs runs this file in plain Node.
import type { NamedAppend } from "../model/commit-spans.ts";
import { afterInserts, INDEXING_COLUMNS, rowIndexing, type RowIndexing } from "../model/row-indexing.ts";

export const COLUMNS = [
  "id", "project_id", "seq", "action", "organization", "actor_id", "actor_type", "actor_name",
  "actor_email", "targets", "metadata", "occurred_at", "received_at", "ip_address", "user_agent",
  "pii_salt", "pii_commitment", "hash", "prev_hash", "signature", "changes", "schema_version", "schema_valid",
  ...INDEXING_COLUMNS,
] as const;

const INSERT_SQL =
  `INSERT INTO events (${COLUMNS.join(", ")}) SELECT ` +
  COLUMNS.map((_, i) => `value ->> ${i}`).join(", ") +
  " FROM json_each(?)";

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
    indexing[0], indexing[1], indexing[2],
  ];
}

/** D1 caps one bound value at 2 MB; keep each statement's JSON well under it. */
const MAX_PARAM_BYTES = 1_000_000;

/**
 * Many rows per statement through json_each: D1 allows only 100 bound
 * parameters per statement, and one statement per row would be far slower.
 * The rows' commit spans and search index entries follow the inserts
 * (model/row-indexing.ts), so one D1 batch commits them all.
 */
export function insertEventsStatements(db: D1Database, rows: EventRow[], appends: readonly NamedAppend[] = []): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  let chunk: string[] = [];
  let bytes = 0;
  const flush = () => {
    if (chunk.length === 0) return;
    statements.push(db.prepare(INSERT_SQL).bind(`[${chunk.join(",")}]`));
    chunk = [];
    bytes = 0;
  };
  const indexing = rowIndexing(rows);
  for (const [i, row] of rows.entries()) {
    const json = JSON.stringify(columnValues(row, indexing[i]));
    if (bytes + json.length > MAX_PARAM_BYTES) flush();
    chunk.push(json);
    bytes += json.length;
  }
  flush();
  statements.push(...afterInserts(db, rows, indexing, { appends }));
  return statements;
}
