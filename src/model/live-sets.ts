// .ts extensions: test/bench/sqlite-floor.mjs runs this file in plain Node (through chain/event-insert.ts).
import { keyedSets } from "./address-runs.ts";
import { seqIndex, seqsOn, type KnownKey } from "./row-keys.ts";

/**
 * Live sets: how a filter on an action (migration 0041), an organization
 * (migration 0042) or an address (migration 0043) finds a commit's live
 * events in list order without an index entry per event. An application
 * sends a few dozen actions, so the events of one batch mostly repeat a
 * handful of them; a batch of one tenant's events, or of a bulk operation,
 * names one organization again and again; and an event's address is its
 * request's, so a commit's events of one request share one. A commit's live
 * rows (time_in_span: they share the instant the commit stamped, migration
 * 0040) that share a value, three or more, are one row of the value's table:
 * the commit's instant, the seq of the first of them, and their seqs as
 * offsets. Those rows take no entry in the value's index (their mark,
 * action_in_set, org_in_set or ip_run, says so).
 *
 * Keyed (project, value, received_at, first_seq), the sets are in the
 * order of their instants: a set's rows share its instant, and are listed by
 * seq. So a walk by the value is two, merged, each stopped at the page
 * (event-query.ts, setWalk and addressWalk): the index's entries, and the
 * value's sets newest instant first, the rows of an instant by seq. (An
 * address's runs, address-runs.ts, are keyed by seq, not time: read whole
 * and sorted, or past a few, the list walked checking each row's address; a
 * live set of an address takes a run's place.)
 *
 * Only a commit's live rows join a set: a row with its own occurred_at has
 * its own place in time, and shard copies and restores mark no row live.
 * Writers: commits (chain/event-insert.ts), through row-indexing.ts.
 * Deletes: each migration's trigger drops a set with the last of its rows
 * (erasure never changes an action or an organization; it scrubs an
 * address, and 0043's second trigger drops the set with the last of its
 * rows that holds it).
 */

/**
 * One kind of live set: its table, the events column its sets share, the
 * events column that marks a row in one and its value there (an address's
 * mark is ip_run, whose 1 is a run's), and the partial index of the rows in
 * none (which leaves out every row whose mark is not 0).
 */
export interface LiveSetKind {
  table: "action_sets" | "organization_sets" | "address_sets";
  column: "action" | "organization" | "ip_address";
  mark: "action_in_set" | "org_in_set" | "ip_run";
  inSet: 1 | 2;
  index: "events_action_time_idx" | "events_org_time_idx" | "events_ip_time_idx";
}

export const ACTION_SETS: LiveSetKind = { table: "action_sets", column: "action", mark: "action_in_set", inSet: 1, index: "events_action_time_idx" };
export const ORGANIZATION_SETS: LiveSetKind = { table: "organization_sets", column: "organization", mark: "org_in_set", inSet: 1, index: "events_org_time_idx" };
export const ADDRESS_SETS: LiveSetKind = { table: "address_sets", column: "ip_address", mark: "ip_run", inSet: 2, index: "events_ip_time_idx" };

/** Every kind of live set: an action's and an organization's, in the order of their marks among a row's indexing columns (row-indexing.ts), then an address's (its mark is ip_run's 2). */
export const LIVE_SET_KINDS = [ACTION_SETS, ORGANIZATION_SETS, ADDRESS_SETS] as const;

/** What a set needs of a row. */
export interface SettableRow {
  project_id: string;
  seq: number;
  action: string;
  organization: string | null;
  ip_address: string | null;
  received_at: string;
}

export interface LiveSet {
  projectId: string;
  /** The action, organization or address its rows share. */
  value: string;
  receivedAt: string;
  first: number;
  /** The seqs of its rows, as offsets from first, ascending. */
  offsets: number[];
}

/**
 * The sets of one kind of rows in this order, among the rows `live` marks (a
 * commit's rows in its live span): per project, instant and value, MIN_RUN
 * rows or more (a set costs what an address run does: a row at ingest, its
 * delete at archive), spanning fewer than MAX_RUN seqs (the trigger's
 * bounded seek). A row without the value (no organization, no address) joins
 * none. `inSet`: each row's mark, the kind's value or 0.
 */
export function liveSets(kind: LiveSetKind, rows: readonly SettableRow[], live: readonly (0 | 1)[]): { sets: LiveSet[]; inSet: (0 | 1 | 2)[] } {
  const sets: LiveSet[] = [];
  const inSet: (0 | 1 | 2)[] = rows.map(() => 0);
  const keyOf = (row: SettableRow, i: number) => {
    const value = row[kind.column];
    return live[i] === 1 && value !== null ? `${row.project_id}\u0000${row.received_at}\u0000${value}` : undefined;
  };
  for (const members of keyedSets(rows, keyOf)) {
    const first = rows[members[0]];
    sets.push({ projectId: first.project_id, value: first[kind.column]!, receivedAt: first.received_at, first: first.seq, offsets: members.map((i) => rows[i].seq - first.seq) });
    for (const i of members) inSet[i] = kind.inSet;
  }
  return { sets, inSet };
}

/** One statement for all the sets of a kind. */
export function liveSetStatement(db: D1Database, kind: LiveSetKind, sets: readonly LiveSet[]): D1PreparedStatement | null {
  if (sets.length === 0) return null;
  return db
    .prepare(
      `INSERT INTO ${kind.table} (project_id, ${kind.column}, received_at, first_seq, last_seq, seqs) ` +
        "SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5 FROM json_each(?1) j",
    )
    .bind(JSON.stringify(sets.map((s) => [s.projectId, s.value, s.receivedAt, s.first, s.first + s.offsets.at(-1)!, s.offsets])));
}

/**
 * SQL: the offsets of set `s` (a table of json_each) as every walk of a set
 * and verify's check read them; none when its text is no JSON, so a writer's
 * garbage there hides the set's rows (verify names the first) instead of
 * failing every read that walks the set.
 */
export function setOffsets(s: string): string {
  return `json_each(CASE WHEN json_valid(${s}.seqs) THEN ${s}.seqs ELSE '[]' END)`;
}

/**
 * SQL: the walk in list order of a value's sets (bound parameter `value`;
 * `spans`: the walk's project and time bounds on set `s`, whose received_at
 * is its rows' occurred_at), each set's rows by seq, that meet `where` (of
 * `events e`, which names the value too), up to `l`. A row put back inside a
 * set still there (an archive restore) is not in it (its mark is 0): the
 * index has it. A row is taken only at its own instant, so a set planted at
 * another instant over rows a set holds lists nothing twice (verify's check,
 * stand-ins.ts, looks only at the sets of the row's instant). The walk
 * takes a row once, whichever sets of its instant name it and however often
 * (DISTINCT over the row), and orders an instant's rows by their own seq,
 * not by the key of the set naming them. A commit writes one set a value at
 * its instant, so for its sets the two orders are one; but a row named twice
 * filled two places of the walk's page, the page kept it once and came up
 * short, and a short page ends the list (`[0,1,3,5,5,5,6,7]` hid the rows
 * below offset 5 from pages of 5, and so did a second set over rows a set
 * holds), and a set split in two, read by key, listed its rows out of order,
 * so a page's cursor passed over rows between them. Neither can now hide a
 * row, so verify need only ask that some set names it.
 */
export function liveSetWalkSql(kind: LiveSetKind, key: KnownKey, value: string, spans: readonly string[], where: string, l: string): string {
  return (
    "SELECT row_id, occurred_at, seq FROM (" +
    `SELECT DISTINCT e.row_id, e.occurred_at, e.seq, s.received_at AS set_at FROM ${kind.table} s CROSS JOIN ${setOffsets("s")} o ` +
    `CROSS JOIN events e ${seqIndex(key)} ON ${seqsOn("e", key, "s.project_id", "s.first_seq + o.value")} ` +
    `WHERE ${spans.join(" AND ")} AND s.${kind.column} = ${value} AND ${where} AND e.${kind.mark} = ${kind.inSet} AND e.occurred_at = s.received_at ` +
    `ORDER BY set_at DESC, e.seq DESC LIMIT ${l})`
  );
}
