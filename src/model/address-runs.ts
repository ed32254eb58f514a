// .ts extensions: test/bench/sqlite-floor.mjs runs this file in plain Node (through chain/event-insert.ts).
import { knownSeqEdge, seqIndex, seqsOn, type KnownKey } from "./row-keys.ts";

/**
 * Address runs (migration 0038): how a filter on ip_address finds a batch's
 * events without an index entry per event. An event's address is its ingest
 * request's, so the events of one request share it: a run of consecutive
 * rows of one project and one address is one ip_runs row (its seq range),
 * and its rows take no entry in events_ip_time_idx (ip_run = 1). A lone row
 * keeps its entry, as every row written before 0038 does. A commit's live
 * rows of one address are a live set instead (ip_run = 2, migration 0043:
 * live-sets.ts), which is in list order where a run is in seq order.
 *
 * Writers: commits (chain/event-insert.ts) and shard copies and restores
 * (storage/shard-copy.ts), through row-indexing.ts. Deletes and erasure's
 * scrub: the migration's triggers drop a run once none of its rows holds
 * the address. Readers: event-query.ts (addressWalk).
 */

/** What a run needs of a row. */
export interface AddressedRow {
  project_id: string;
  seq: number;
  ip_address: string | null;
}

/**
 * Rows a run takes at least. A run costs a row at ingest and its delete at
 * archive (a deleted index entry is billed as no row), where its rows'
 * entries cost one each at ingest: two rows break even, three save one.
 */
export const MIN_RUN = 3;

/**
 * Rows a run takes at most (a longer one is cut): a commit holds up to 1,000
 * events and a shard copy's batch 500, so this cuts nothing they write. The
 * triggers of migration 0038 rely on it: the run that holds a row ends less
 * than MAX_RUN seqs after it, a bounded seek however many runs the address
 * has, and runs that overlap (a copy that ran again) are each found.
 */
export const MAX_RUN = 1024;

export interface AddressRun {
  projectId: string;
  ip: string;
  first: number;
  last: number;
}

/**
 * The runs of rows in this order (consecutive seqs of one project and one
 * address, MIN_RUN rows or more), and each row's ip_run: 1 when a run holds it.
 * A row `taken` marks (a live address set holds it: live-sets.ts) joins none,
 * as a row without an address.
 */
export function addressRuns(rows: readonly AddressedRow[], taken: readonly number[] = []): { runs: AddressRun[]; ipRun: (0 | 1)[] } {
  const runs: AddressRun[] = [];
  const ipRun: (0 | 1)[] = rows.map(() => 0);
  const ipOf = (i: number) => (taken[i] ? null : rows[i].ip_address);
  let start = 0;
  for (let i = 1; i <= rows.length; i++) {
    const prev = rows[i - 1];
    const row = rows[i];
    const ip = ipOf(i - 1);
    const goesOn = row !== undefined && ip !== null && ipOf(i) === ip && row.project_id === prev.project_id && row.seq === prev.seq + 1;
    if (goesOn && i - start < MAX_RUN) continue;
    if (i - start >= MIN_RUN && ip !== null) {
      runs.push({ projectId: prev.project_id, ip, first: rows[start].seq, last: prev.seq });
      ipRun.fill(1, start, i);
    }
    start = i;
  }
  return { runs, ipRun };
}

/**
 * The sets of rows in this order that share a key (rows in seq order per
 * project; `keyOf` undefined: the row joins none): each the indexes of
 * MIN_RUN rows or more, not necessarily consecutive, spanning fewer than
 * MAX_RUN seqs (a longer one is cut). Target type sets and live sets (of an
 * action, an organization, an address) are made this way
 * (target-type-sets.ts, live-sets.ts).
 */
export function keyedSets<R extends { seq: number }>(rows: readonly R[], keyOf: (row: R, i: number) => string | undefined): number[][] {
  const sets: number[][] = [];
  const open = new Map<string, number[]>();
  const close = (members: number[]) => {
    if (members.length >= MIN_RUN) sets.push(members);
  };
  for (const [i, row] of rows.entries()) {
    const key = keyOf(row, i);
    if (key === undefined) continue;
    const members = open.get(key);
    if (members !== undefined) {
      if (row.seq > rows[members.at(-1)!].seq && row.seq - rows[members[0]].seq < MAX_RUN) {
        members.push(i);
        continue;
      }
      close(members);
    }
    open.set(key, [i]);
  }
  for (const members of open.values()) close(members);
  return sets;
}

/**
 * One statement for all the runs (D1 caps a statement at 100 bound values).
 * A run already there is kept: a copy may run again over rows it put back.
 */
export function addressRunStatement(db: D1Database, runs: readonly AddressRun[]): D1PreparedStatement | null {
  if (runs.length === 0) return null;
  return db
    .prepare(
      "INSERT INTO ip_runs (project_id, ip, last_seq, first_seq) SELECT j.value ->> 0, j.value ->> 1, j.value ->> 3, j.value ->> 2 FROM json_each(?1) j WHERE true ON CONFLICT DO NOTHING",
    )
    .bind(JSON.stringify(runs.map((r) => [r.projectId, r.ip, r.first, r.last])));
}

/**
 * Runs an address may have for its runs to be read: past it the address is
 * common (and the guard below reads no more of them).
 */
export const SPARSE_RUNS = 2_000;

/**
 * SQL: 1 when the address's runs are few enough to read whole (the sparse
 * walk), else 0, for a page of `limit` rows (bound parameters, as `project`
 * and `ip`; a negative limit is no limit). Reading the runs costs their S
 * events, every page, ~0.9 µs each (measured in SQLite: read through the seq
 * index, looked up, sorted); the list walk that checks each row finds a page
 * of l in about l x N / S entries of the project's N (its seq span, two seeks
 * of the seq index), ~0.1 µs each along the time index, which holds the
 * address (migration 0038), or a row lookup each (~1-2 µs) along another
 * filter's index (`covered` false) or through the live spans, whose rows
 * have no time index entry (migration 0040: a project with any of them
 * counts as not covered). So, in tenths of a µs: sparse when
 * 9 x S x S <= l x N x (1 or 15). At 1M events and pages of 50: up to ~2,400
 * events of the address alone, ~9,000 with another filter. Evaluated once
 * per statement: it sits in LIMIT clauses.
 */
export function sparseAddressSql(project: string, key: KnownKey, ip: string, limit: string, covered: boolean): string {
  const coveredSql = covered ? `NOT EXISTS (SELECT 1 FROM commit_spans WHERE project_id = ${project} AND live = 1)` : "0";
  return sparseRangesSql(`SELECT last_seq - first_seq + 1 AS n FROM ip_runs WHERE project_id = ${project} AND ip = ${ip}`, project, key, limit, coveredSql);
}

/**
 * The same rule over any rows read by seq in place of index entries
 * (`ranges`: a SELECT of how many rows each names as n, the address's runs
 * or a target type's sets: target-type-sets.ts), reading at most
 * SPARSE_RUNS of them; `covered` (SQL, true or false) picks the 1 or the 15 above.
 */
export function sparseRangesSql(ranges: string, project: string, key: KnownKey, limit: string, covered: string): string {
  const span =
    `(coalesce(${knownSeqEdge(key, project, true)}, 0) - coalesce(${knownSeqEdge(key, project, false)}, 0) + 1)`;
  const page = `(CASE WHEN ${limit} < 0 THEN ${span} ELSE ${limit} END)`;
  const s = "coalesce(sum(n), 0)";
  return `(SELECT count(*) < ${SPARSE_RUNS} AND 9 * ${s} * ${s} <= ${page} * ${span} * (CASE WHEN ${covered} THEN 1 ELSE 15 END) FROM (${ranges} LIMIT ${SPARSE_RUNS}))`;
}

/**
 * SQL: the row_ids of events `e` of the address's runs (all of them, for a
 * caller that applies its own filters, order and limit). A copy that ran
 * twice may leave two runs over a row: IN keeps it once.
 */
export function runRowIdsSql(project: string, key: KnownKey, ip: string): string {
  return (
    `SELECT x.row_id FROM ip_runs r CROSS JOIN events x ${seqIndex(key)} ` +
    `ON ${seqsOn("x", key, "r.project_id", "r.first_seq", "r.last_seq")} ` +
    `WHERE r.project_id = ${project} AND r.ip = ${ip} AND x.ip_run = 1`
  );
}
