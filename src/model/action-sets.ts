// .ts extensions: test/bench/sqlite-floor.mjs runs this file in plain Node (through chain/event-insert.ts).
import { keyedSets } from "./address-runs.ts";

/**
 * Action sets (migration 0041): how a filter on an action finds a commit's
 * live events in list order without an index entry per event. An
 * application sends a few dozen actions, so the events of one batch mostly
 * repeat a handful of them. A commit's live rows (time_in_span: they share
 * the instant the commit stamped, migration 0040) that share an action,
 * three or more, are one action_sets row: the commit's instant, the seq of
 * the first of them, and their seqs as offsets. Those rows take no entry in
 * the action index (action_in_set = 1).
 *
 * Keyed (project, action, received_at, first_seq), the sets are in list
 * order: a set's rows share its instant, and are listed by seq. So a walk by
 * action is two, merged, each stopped at the page (event-query.ts,
 * actionWalk): the index's entries, and the action's sets newest first, each
 * set's rows by seq.
 *
 * Only a commit's live rows join a set: a row with its own occurred_at has
 * its own place in time, and shard copies and restores mark no row live.
 * Writers: commits (chain/event-insert.ts), through row-indexing.ts.
 * Deletes: the migration's trigger drops a set with the last of its rows
 * (erasure never changes an action).
 */

/** What a set needs of a row. */
export interface ActionedRow {
  project_id: string;
  seq: number;
  action: string;
  received_at: string;
}

export interface ActionSet {
  projectId: string;
  action: string;
  receivedAt: string;
  first: number;
  /** The seqs of its rows, as offsets from first, ascending. */
  offsets: number[];
}

/**
 * The sets of rows in this order, among the rows `live` marks (a commit's
 * rows in its live span): per project, instant and action, MIN_RUN rows or
 * more (a set costs what an address run does: a row at ingest, its delete at
 * archive), spanning fewer than MAX_RUN seqs (the trigger's bounded seek).
 * `inSet`: each row's action_in_set.
 */
export function actionSets(rows: readonly ActionedRow[], live: readonly (0 | 1)[]): { sets: ActionSet[]; inSet: (0 | 1)[] } {
  const sets: ActionSet[] = [];
  const inSet: (0 | 1)[] = rows.map(() => 0);
  for (const members of keyedSets(rows, (row, i) => (live[i] === 1 ? `${row.project_id}\u0000${row.received_at}\u0000${row.action}` : undefined))) {
    const first = rows[members[0]];
    sets.push({ projectId: first.project_id, action: first.action, receivedAt: first.received_at, first: first.seq, offsets: members.map((i) => rows[i].seq - first.seq) });
    for (const i of members) inSet[i] = 1;
  }
  return { sets, inSet };
}

/** One statement for all the sets. */
export function actionSetStatement(db: D1Database, sets: readonly ActionSet[]): D1PreparedStatement | null {
  if (sets.length === 0) return null;
  return db
    .prepare(
      "INSERT INTO action_sets (project_id, action, received_at, first_seq, last_seq, seqs) " +
        "SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5 FROM json_each(?1) j",
    )
    .bind(JSON.stringify(sets.map((s) => [s.projectId, s.action, s.receivedAt, s.first, s.first + s.offsets.at(-1)!, s.offsets])));
}

/**
 * SQL: the walk in list order of an action's sets (bound parameter `action`;
 * `spans`: the walk's project and time bounds on set `s`, whose received_at
 * is its rows' occurred_at), each set's rows by seq, that meet `where` (of
 * `events e`), up to `l`. A row put back inside a set still there (an
 * archive restore) is not in it (action_in_set = 0): the index has it. A row
 * is taken only at its own instant, so a set planted at another one over
 * rows a set holds lists nothing twice (verify's check, stand-ins.ts, looks
 * only at the sets of the row's instant).
 */
export function actionSetWalkSql(action: string, spans: readonly string[], where: string, l: string): string {
  return (
    "SELECT e.row_id, e.occurred_at, e.seq FROM action_sets s CROSS JOIN json_each(s.seqs) o " +
    "CROSS JOIN events e INDEXED BY events_project_seq_idx ON e.project_id = s.project_id AND e.seq = s.first_seq + o.value " +
    `WHERE ${spans.join(" AND ")} AND s.action = ${action} AND ${where} AND e.action_in_set = 1 AND e.occurred_at = s.received_at ` +
    `ORDER BY s.received_at DESC, s.first_seq DESC, e.seq DESC LIMIT ${l}`
  );
}
