// .ts extensions: test/bench/sqlite-floor.mjs runs this file in plain Node (through chain/event-insert.ts).
import { idMillis } from "./event-id.ts";

/**
 * The commit spans a writer of event rows adds (migration 0029): how a hot
 * event is found by id without an id index entry of its own
 * (event-lookup.ts). Commits write them (chain/event-insert.ts), and so do
 * shard copies and archive restores (storage/shard-copy.ts), which put back
 * rows that commits first wrote.
 */

/** What a span needs of a row. */
export interface SpannedRow {
  id: string;
  project_id: string;
  seq: number;
  received_at: string;
}

/**
 * Whether the row's id carries its received_at millisecond (a located id,
 * event-id.ts): then a span can find it, and with one (its commit's rows are
 * two or more: row-indexing.ts) it takes no id index entry (id_indexed = 0).
 * Anything else keeps the index.
 */
export function foundBySpan(r: SpannedRow): boolean {
  return idMillis(r.id) === Date.parse(r.received_at);
}

/** The rows one span covers: a commit's rows, which share their project and received_at. */
export function spanKey(r: SpannedRow): string {
  return `${r.project_id}\n${r.received_at}`;
}

/** An append of the commit, by the name its worker gave it, and its seqs: kept on the commit's span (chain/landed-appends.ts). */
export interface NamedAppend {
  token: string;
  first: number;
  last: number;
}

/**
 * One commit_spans row per (project, received_at) of the rows found by span:
 * a commit shares one received_at, so a commit of two events or more writes
 * one row, where the id index took one per event (a lone row keeps its
 * entry: row-indexing.ts). A span covers its rows' whole seq range: an id is
 * matched against the rows of that range, never taken from the span alone.
 *
 * A copy may put back part of a commit (a batch ends inside it) and may run
 * again over rows a span of its earlier run still covers: with `copy` a span
 * already there is kept (it covers at least these rows), and the lookup reads
 * every span of a millisecond.
 *
 * A span is `live` when it gives rows their time (`timed`: row-indexing.ts,
 * migration 0040), which only a commit's rows are.
 */
export function spanStatements<R extends SpannedRow>(
  db: D1Database,
  rows: readonly R[],
  bySpan: readonly boolean[],
  timed: readonly boolean[],
  options: { appends?: readonly NamedAppend[]; copy?: boolean } = {},
): D1PreparedStatement[] {
  const appends = options.appends ?? [];
  const conflict = options.copy ? " ON CONFLICT DO NOTHING" : "";
  const spans = seqRanges(rows, (r, i) => (bySpan[i] ? spanKey(r) : null));
  const live = new Set(rows.filter((_, i) => timed[i]).map(spanKey));
  return [...spans.values()].map(({ row, first, last }) => {
    const own = appends.filter((a) => a.first >= first && a.last <= last).map((a) => [a.token, a.first, a.last]);
    return db
      .prepare(`INSERT INTO commit_spans (received_at, project_id, first_seq, last_seq, appends, live) VALUES (?, ?, ?, ?, ?, ?)${conflict}`)
      .bind(row.received_at, row.project_id, first, last, own.length > 0 ? JSON.stringify(own) : null, live.has(spanKey(row)) ? 1 : 0);
  });
}

/** The seq range of the rows of each key (a row whose key is null is left out), with the key's first row. */
export function seqRanges<R extends { seq: number }>(rows: readonly R[], keyOf: (row: R, i: number) => string | null): Map<string, { row: R; first: number; last: number }> {
  const ranges = new Map<string, { row: R; first: number; last: number }>();
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
