import type { EventRow } from "../db/schema";
// .ts extensions: test/bench/sqlite-floor.mjs runs this file in plain Node.
import { idMillis } from "../model/event-id.ts";
import { groupIndexStatement, searchLeads, searchWords } from "../model/search-index.ts";

export const COLUMNS = [
  "id", "project_id", "seq", "action", "organization", "actor_id", "actor_type", "actor_name",
  "actor_email", "targets", "metadata", "occurred_at", "received_at", "ip_address", "user_agent",
  "pii_salt", "pii_commitment", "hash", "prev_hash", "signature", "changes", "schema_version", "schema_valid", "id_indexed",
  "search_lead", "search_words",
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
export function columnValues(r: EventRow, bySpan = foundBySpan(r), searchLead = 0): unknown[] {
  return [
    r.id, r.project_id, r.seq, r.action, r.organization, r.actor_id, r.actor_type, r.actor_name,
    r.actor_email, r.targets, r.metadata, r.occurred_at, r.received_at, r.ip_address, r.user_agent,
    r.pii_salt, r.pii_commitment, r.hash, r.prev_hash, r.signature, r.changes, r.schema_version, r.schema_valid,
    bySpan ? 0 : 1, searchLead, searchWords(r).join(" "),
  ];
}

/**
 * Whether the row's id carries its received_at millisecond (a located id,
 * model/event-id.ts): then its commit's span finds it and it takes no id
 * index entry (migration 0029). Anything else keeps the index.
 */
function foundBySpan(r: EventRow): boolean {
  return idMillis(r.id) === Date.parse(r.received_at);
}

/**
 * One commit_spans row per (project, received_at) of the rows found by span:
 * a commit shares one received_at, so this is one row per commit, where the
 * id index took one per event. A span covers its rows' whole seq range: an id
 * is matched against the rows of that range, never taken from the span alone.
 */
function spanStatements(db: D1Database, rows: EventRow[], bySpan: boolean[], appends: readonly NamedAppend[]): D1PreparedStatement[] {
  const spans = seqRanges(rows, (r, i) => (bySpan[i] ? `${r.project_id}\n${r.received_at}` : null));
  return [...spans.values()].map(({ row, first, last }) => {
    const own = appends.filter((a) => a.first >= first && a.last <= last).map((a) => [a.token, a.first, a.last]);
    return db
      .prepare("INSERT INTO commit_spans (received_at, project_id, first_seq, last_seq, appends) VALUES (?, ?, ?, ?, ?)")
      .bind(row.received_at, row.project_id, first, last, own.length > 0 ? JSON.stringify(own) : null);
  });
}

/** The seq range of the rows of each key (a row whose key is null is left out), with the key's first row. */
function seqRanges(rows: EventRow[], keyOf: (row: EventRow, i: number) => string | null): Map<string, { row: EventRow; first: number; last: number }> {
  const ranges = new Map<string, { row: EventRow; first: number; last: number }>();
  for (const [i, row] of rows.entries()) {
    const key = keyOf(row, i);
    if (key === null) continue;
    const range = ranges.get(key);
    if (range) {
      range.first = Math.min(range.first, row.seq);
      range.last = Math.max(range.last, row.seq);
    } else {
      ranges.set(key, { row, first: row.seq, last: row.seq });
    }
  }
  return ranges;
}

/** An append of the commit, by the name its worker gave it, and its seqs: kept on the commit's span (landed-appends.ts). */
export interface NamedAppend {
  token: string;
  first: number;
  last: number;
}

/** D1 caps one bound value at 2 MB; keep each statement's JSON well under it. */
const MAX_PARAM_BYTES = 1_000_000;

/**
 * Many rows per statement through json_each: D1 allows only 100 bound
 * parameters per statement, and one statement per row would be far slower.
 * The rows' commit spans and search index entries follow the inserts, so one
 * D1 batch commits them all. The rows go in array order, so one transaction
 * numbers them consecutively: that is what lets a search group find its
 * entry at row_id - search_lead (search-index.ts).
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
  const bySpan = rows.map(foundBySpan);
  const leads = searchLeads(rows);
  for (const [i, row] of rows.entries()) {
    const json = JSON.stringify(columnValues(row, bySpan[i], leads[i]));
    if (bytes + json.length > MAX_PARAM_BYTES) flush();
    chunk.push(json);
    bytes += json.length;
  }
  flush();
  statements.push(...spanStatements(db, rows, bySpan, appends));
  for (const [projectId, { first, last }] of seqRanges(rows, (r) => r.project_id)) statements.push(groupIndexStatement(db, projectId, first, last));
  return statements;
}
