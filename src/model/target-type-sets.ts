// .ts extensions: test/bench/sqlite-floor.mjs runs this file in plain Node (through chain/event-insert.ts).
import { keyedSets, sparseRangesSql } from "./address-runs.ts";
import { setOffsets } from "./live-sets.ts";
import { seqIndex, seqsOn, type KnownKey } from "./row-keys.ts";

/**
 * Target type sets (migration 0039): how a filter on a target type finds a
 * batch's events without an index entry per event. An application names few
 * types of target (document, user, project), so the events of one batch
 * mostly share them: the batch's rows whose first (or second) target has one
 * type, three or more, are one target_type_sets row (the seq range from the
 * first of them to the last, and their seqs), and those rows take no entry
 * in that place's type index (bit 1 << at of type_sets). Unlike an address
 * run, the rows of a set need not be consecutive, so the set names them
 * (unless it holds every row of its range): a reader looks up exactly its
 * rows, however sparse in the range (a type on 3 rows of a commit of
 * 1,000). A type that a batch names once or twice keeps its entries, as
 * every row written before 0039 does. The (type, id) indexes are untouched:
 * an id is rarely repeated within a batch.
 *
 * Writers: commits (chain/event-insert.ts) and shard copies and restores
 * (storage/shard-copy.ts), through row-indexing.ts. Deletes: the migration's
 * trigger drops a set once none of its rows is left (erasure never changes
 * targets). Readers: event-query.ts (targetWalk).
 */

/** What a set needs of a row: targets is the stored JSON text of the event's array. */
export interface TypedRow {
  project_id: string;
  seq: number;
  targets: string;
}

/** The places of the target array that take sets: the ones the events table indexes (event-query.ts, INDEXED_TARGETS). */
export const SET_PLACES = [0, 1] as const;
export type SetPlace = (typeof SET_PLACES)[number];

export interface TargetTypeSet {
  projectId: string;
  at: SetPlace;
  type: string;
  first: number;
  last: number;
  /** The seqs of its rows, as offsets from first. */
  offsets: number[];
}

/**
 * The sets of rows in this order: per project, place and type, MIN_RUN rows
 * or more (a set costs what an address run does: a row at ingest, its delete
 * at archive), spanning fewer than MAX_RUN seqs (the trigger's bounded seek).
 * `typeSets`: each row's bits, 1 << at for each place a set holds it by.
 */
export function targetTypeSets(rows: readonly TypedRow[]): { sets: TargetTypeSet[]; typeSets: number[] } {
  const sets: TargetTypeSet[] = [];
  const typeSets = rows.map(() => 0);
  const types = rows.map((r) => placedTypes(r.targets));
  for (const at of SET_PLACES) {
    for (const members of keyedSets(rows, (row, i) => (types[i][at] === undefined ? undefined : `${row.project_id}\u0000${types[i][at]}`))) {
      const first = rows[members[0]];
      const offsets = members.map((i) => rows[i].seq - first.seq);
      sets.push({ projectId: first.project_id, at, type: types[members[0]][at]!, first: first.seq, last: rows[members.at(-1)!].seq, offsets });
      for (const i of members) typeSets[i] |= 1 << at;
    }
  }
  return { sets, typeSets };
}

/** The types of a stored targets array at the set places (undefined where it names none). */
function placedTypes(targets: string): (string | undefined)[] {
  if (targets === "[]") return [];
  const parsed = JSON.parse(targets) as { type?: unknown }[];
  return SET_PLACES.map((at) => (typeof parsed[at]?.type === "string" ? (parsed[at].type as string) : undefined));
}

/** Whether a set holds every row of its range (a batch of one type): it is then stored without offsets (seqs NULL). */
function denseSet(s: TargetTypeSet): boolean {
  return s.offsets.length === s.last - s.first + 1;
}

/** One statement for all the sets; a set already there is kept (a copy may run again over rows it put back). */
export function targetTypeSetStatement(db: D1Database, sets: readonly TargetTypeSet[]): D1PreparedStatement | null {
  if (sets.length === 0) return null;
  return db
    .prepare(
      "INSERT INTO target_type_sets (project_id, at, type, last_seq, first_seq, members, seqs) " +
        "SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 4, j.value ->> 3, j.value ->> 5, j.value ->> 6 " +
        "FROM json_each(?1) j WHERE true ON CONFLICT DO NOTHING",
    )
    .bind(JSON.stringify(sets.map((s) => [s.projectId, s.at, s.type, s.first, s.last, s.offsets.length, denseSet(s) ? null : s.offsets])));
}

/**
 * SQL: 1 when the type's sets (at either place) hold few enough rows to
 * read whole (sparseRangesSql, counting the rows they name: each a lookup
 * by seq), else 0, for the other walk, which looks up each row along the
 * list index (not covered: no index holds a target's type but its own).
 */
export function sparseTypeSql(project: string, key: KnownKey, type: string, limit: string): string {
  return sparseRangesSql(`SELECT members AS n FROM target_type_sets WHERE project_id = ${project} AND at IN (${SET_PLACES.join(", ")}) AND type = ${type}`, project, key, limit, "0");
}

/**
 * SQL: the row_ids of events the type's sets name, at either place (the
 * caller applies its own filters): a set that holds every row of its range
 * (seqs NULL) by the range, any other by its offsets.
 */
export function setRowIdsSql(project: string, key: KnownKey, type: string): string {
  const sets = `s.project_id = ${project} AND s.at IN (${SET_PLACES.join(", ")}) AND s.type = ${type}`;
  const rows = (lo: string, hi?: string) => `CROSS JOIN events x ${seqIndex(key)} ON ${seqsOn("x", key, "s.project_id", lo, hi)}`;
  return (
    `SELECT x.row_id FROM target_type_sets s ${rows("s.first_seq", "s.last_seq")} WHERE ${sets} AND s.seqs IS NULL UNION ALL ` +
    `SELECT x.row_id FROM target_type_sets s CROSS JOIN ${setOffsets("s")} o ${rows("s.first_seq + o.value")} WHERE ${sets} AND s.seqs IS NOT NULL`
  );
}
