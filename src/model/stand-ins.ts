import { MAX_RUN } from "./address-runs.ts";
import { LIVE_SET_KINDS, setOffsets } from "./live-sets.ts";
import { hasGroupEntry, needsGroupEntry } from "./search-index.ts";
import { rowIdOf, rowsBySeq, seqsOn, type KnownKey, type SeqRead } from "./row-keys.ts";

/**
 * Storage v2 replaced index entries per event with rows per batch: a commit's
 * span (found by id, 0029; in time order, 0040), an address run (0038), a
 * target type set (0039), an action set (0041), an organization set
 * (0042) and an address set (0043); and a lone live row is
 * found at its instant in the time index, by a receipt that names no project
 * through its project's tag row (0037). Each row is marked for
 * the ones that stand in for its entries (id_indexed = 0 or 2, time_in_span,
 * ip_run, type_sets, action_in_set, org_in_set), and its partial indexes
 * leave it out.
 * An event's targets past the second are rows of event_targets (0035), and a
 * closed group of events has one entry in the search index (0031): rows of
 * the same kind, asked about the same way.
 *
 * An index entry cannot be deleted without its row, but a stand-in can: a
 * database writer who deletes or alters one hides intact, verifiable events
 * from the lists that read it, or from reads by id. So verify also asks, of
 * every hot row it walks, whether each stand-in its marks name is there and
 * holds it as the reads require (the same keys, instant and offsets), and
 * reports the first row it finds without one as `index_damaged`.
 *
 * A live span planted over rows another holds hides events too: the time
 * walk stops at the page's size, a row named twice fills two places, the
 * page keeps it once and comes up short, and a short page ends the list. So
 * a live span must be the only one to hold its row. A live set (of an
 * action, an organization or an address) need not: the set walk takes each
 * row once and in list order, whichever of a value's sets at its instant
 * names it (live-sets.ts, liveSetWalkSql), so a second set over its rows, or
 * a set split in two out of order, lists every row once, where they once
 * hid rows from pages with verify ok.
 * (Address runs and type sets may overlap after a shard copy ran twice, and
 * their readers take a row once.) Planted over rows it should not hold, a
 * stand-in lists nothing more: the walks also test each row's own fields
 * (a live set's rows for its value, a run's for their address, a type
 * set's for their targets, an event_targets row's event for its time and
 * that target, and a live span's or a live set's rows for its instant, so
 * one planted at another instant lists nothing).
 * The search index is checked only for an entry per closed group: it is
 * contentless, and checking the words an entry holds costs more than the
 * rest of verify. A writer who rewrites an entry with fewer words hides
 * events from search, and from nothing else.
 */

/** How far past a row's seq the stand-in holding it ends at most: runs and sets span fewer than MAX_RUN seqs, so a seek is bounded. */
const MAX_SPAN = MAX_RUN - 1;

/**
 * SQL: whether target type set `s`'s offsets (a JSON array of integers, as
 * the writers store it: JSON.stringify, no spaces) name row `r` as the walks
 * read them, one by one with json_each. Two tests of the text, not
 * json_each: this runs for every row a type set holds, and parsing the array
 * for each made the whole check a fifth slower (3.9 against 3.2 µs a row).
 * (Live sets are checked a page at a time, checkedRowsSql.)
 * - Where every offset before the row's is there too (a request's rows, one
 *   after another), the row's offset is at a known place in the text
 *   ("[0,1,...": each offset its digits and a comma), and is there: one
 *   comparison of bytes. A writer who changed any character up to it broke
 *   the place of some offset, which then takes the second test.
 * - Else a search of the text, which must then hold nothing but numbers
 *   under its brackets: an offset put inside a string or a nested array is
 *   found by a search and missed by the walk (`[0,",1,",2]` hid offset 1
 *   from the list with verify ok).
 * A CASE, so it stops at its first answer wherever it stands: SQLite
 * evaluates both sides of an OR that is a value.
 * (test/bench/set-check-sqlite.mjs, against the search alone: 0.32 against
 * 1.07 µs a row in a set of 200 consecutive rows, 0.34 against 0.20 in one
 * of 4; 1.81 against 0.64 in one of 100 rows apart, where every row takes
 * the search.)
 */
export function holds(s: string): string {
  const k = `(r.seq - ${s}.first_seq)`;
  const place = `(2 + 2 * ${k} + max(${k} - 10, 0) + max(${k} - 100, 0) + max(${k} - 1000, 0))`;
  const atPlace = `CAST(substr(CAST(${s}.seqs AS BLOB), ${place} - 1, length(${k}) + 2) AS TEXT) IN ('[' || ${k} || ',', ',' || ${k} || ',', ',' || ${k} || ']', '[' || ${k} || ']')`;
  const flat = `instr(${s}.seqs, '"') = 0 AND instr(substr(${s}.seqs, 2), '[') = 0`;
  const anywhere = `instr(',' || substr(${s}.seqs, 2, length(${s}.seqs) - 2) || ',', ',' || ${k} || ',') > 0`;
  return `(CASE WHEN ${atPlace} THEN 1 WHEN ${flat} THEN ${anywhere} ELSE 0 END)`;
}

/** SQL: whether target type set place `at` (0 or 1) holds row `r` as marked. */
function inTypeSet(at: 0 | 1): string {
  return (
    `((r.type_sets & ${1 << at}) = 0 OR EXISTS (SELECT 1 FROM target_type_sets t WHERE t.project_id = r.project_id AND t.at = ${at} ` +
    `AND t.type = (r.targets ->> '$[${at}].type') AND t.last_seq BETWEEN r.seq AND r.seq + ${MAX_SPAN} AND t.first_seq <= r.seq ` +
    `AND (t.seqs IS NULL OR ${holds("t")})))`
  );
}

/**
 * SQL: the project tag a located id ends with (event-id.ts, tagOfId: its last 8 hex digits), as the integer
 * project_tags keeps. SQLite reads no hex number, so each digit's place in the alphabet, shifted into place.
 */
export function tagOfIdSql(id: string): string {
  const digits = Array.from({ length: 8 }, (_, i) => `((instr('0123456789abcdef', lower(substr(${id}, ${i - 8}, 1))) - 1) << ${4 * (7 - i)})`);
  return `(${digits.join(" | ")})`;
}

/** SQL: whether a commit's span holds row `r` for reads by id: at the row's received_at (the id's millisecond). */
export const ID_SPAN_HOLDS =
  "EXISTS (SELECT 1 FROM commit_spans s WHERE s.received_at = r.received_at AND s.project_id = r.project_id AND s.first_seq <= r.seq AND s.last_seq >= r.seq)";

/**
 * SQL: each way row `r` of project `project` (a bound parameter; `key`, its layout when the caller knows it) may
 * be found without its index entry, true when the row is not marked for it or its stand-in holds it.
 */
const standsIn = (project: string, key?: KnownKey) => [
  // By id; for a live row, the span the next line asks for holds it for both.
  `(r.id_indexed <> 0 OR (r.time_in_span = 1 AND r.received_at = r.occurred_at) OR ${ID_SPAN_HOLDS})`,
  // By id alone (a public receipt names no project), a lone live row: its project's row for its id's tag (0037).
  `(r.id_indexed <> 2 OR EXISTS (SELECT 1 FROM project_tags t WHERE t.tag = ${tagOfIdSql("r.id")} AND t.project_id = r.project_id))`,
  // In time order: one live span at its occurred_at (commits' seq ranges never overlap).
  "(r.time_in_span = 0 OR (SELECT count(*) FROM commit_spans s INDEXED BY commit_spans_live_time_idx WHERE s.project_id = r.project_id " +
    "AND s.received_at = r.occurred_at AND s.live = 1 AND s.first_seq <= r.seq AND s.last_seq >= r.seq) = 1)",
  // By address: a run of its address over its seq (an erased row has none: its address is gone, and so is its run).
  `(r.ip_run <> 1 OR r.ip_address IS NULL OR EXISTS (SELECT 1 FROM ip_runs u WHERE u.project_id = r.project_id AND u.ip = r.ip_address ` +
    `AND u.last_seq BETWEEN r.seq AND r.seq + ${MAX_SPAN} AND u.first_seq <= r.seq))`,
  // By target type, at either place.
  inTypeSet(0),
  inTypeSet(1),
  // By a target past the second (type, or type and id): its row of event_targets (0035), pointing at this row.
  "(json_array_length(r.targets) < 3 OR NOT EXISTS (SELECT 1 FROM json_each(r.targets) j WHERE j.key > 1 AND NOT EXISTS (SELECT 1 FROM event_targets t " +
    "WHERE t.project_id = r.project_id AND t.type = (j.value ->> 'type') AND t.id = (j.value ->> 'id') AND t.occurred_at = r.occurred_at AND t.seq = r.seq " +
    "AND t.row_id = r.row_id)))",
  // By search: its group's entry, once the group is closed. That it is there, not what it holds: the index is
  // contentless, and checking its words costs more than the rest of verify (test/bench/README.md). Asked of a
  // group's last row only: a row edited in D1 makes a trigger drop its group's entry, and verify must name that
  // row for its hash (the integrity suites' answers), not an intact row before it in the same group.
  `(r.search_words IS NULL OR EXISTS (SELECT 1 FROM events n WHERE ${key === undefined ? `n.row_id = ${rowIdOf(project, "r.seq + 1")}` : seqsOn("n", key, project, "r.seq + 1")} ` +
    `AND n.row_id - n.search_lead = r.row_id - r.search_lead) OR NOT (${needsGroupEntry("r", project, key)}) OR ${hasGroupEntry("r")})`,
  // By action, by organization, and a live row by address: checked a page at a time (checkedRowsSql).
];

/**
 * SQL: the rows `read` names (row-keys.ts: a project's seq range, on both
 * paths, and terms on its rows, alias `e`) in seq order, up to `limit`, each
 * with `columns` (plain column names of events) and
 * `unlisted`: 1 when a stand-in the row's marks name does not hold it, else
 * 0. Verify reads its pages this way (verify-range.ts), and
 * projects:reindex finds the rows to put back.
 *
 * Each row is asked of its span, runs, type sets, targets and search group
 * (standsIn) on its own, and of its live sets (by action, organization and
 * address) a page at a time: some set of the row's value and instant must
 * name its seq. The sets the page's rows can be in are read once each and
 * their offsets expanded as the list walks expand them (setOffsets, then
 * first_seq + offset: live-sets.ts, liveSetWalkSql), so the check asks
 * exactly what the walks read: row by row it sought only sets starting at
 * most MAX_SPAN seqs before the row, and a second set keyed far from the
 * rows it names listed them twice with verify ok. A scrubbed address is no
 * value (erasure took the row out of its set: 0043's trigger drops the set
 * with its last). Asked row by row, the live sets cost a seek of the set's
 * key and a search of its text for every row and kind: in workerd's D1, 9.4
 * of the 40 µs verify spent on an event at 1M live events (the whole check
 * 14); a page at a time, 4.4 (test/bench/README.md). Still one statement a
 * page (a chunk of a 1B-event project walks 250 pages in one invocation of
 * 1,000 queries), and none for archived pages.
 */
export function checkedRowsSql(columns: string, read: SeqRead, limit: number): string {
  const keys = LIVE_SET_KINDS.map((k, i) => `r.${k.column} AS v${i}, r.${k.mark} AS m${i}`).join(", ");
  // +r.seq: a value with no affinity, as the expanded offsets are, so SQLite's index of `held` can take the comparison.
  const page =
    `SELECT ${columns}, NOT (${standsIn(read.project, read.key).join(" AND ")}) AS each_unlisted, r.project_id AS c_project, +r.seq AS c_seq, r.occurred_at AS c_at, ${keys} ` +
    `FROM ${rowsBySeq({ ...read, limit: String(limit) })} r`;
  // Each kind's sets (LIVE_SET_KINDS, sets0 to sets2) that the page's rows can be in, once each, and their offsets
  // expanded (held0 to held2: a table SQLite indexes once).
  const sets = LIVE_SET_KINDS.map(
    (k, i) =>
      `sets${i} AS MATERIALIZED (SELECT a.${k.column} AS v, a.received_at AS at, a.first_seq AS f, a.seqs ` +
      `FROM (SELECT DISTINCT c_project, v${i}, c_at FROM page WHERE +m${i} = ${k.inSet} AND v${i} IS NOT NULL) k ` +
      `CROSS JOIN ${k.table} a ON a.project_id = k.c_project AND a.${k.column} = k.v${i} AND a.received_at = k.c_at)`,
  );
  const held = LIVE_SET_KINDS.map((_, i) => `held${i} AS MATERIALIZED (SELECT a.v, a.at, a.f + o.value AS seq FROM sets${i} a CROSS JOIN ${setOffsets("a")} o)`);
  // Some set of the row's value and instant names it: none hides it from the walk. A second that names it too, or
  // sets that interleave, hide nothing: the walk takes a row once, in list order (live-sets.ts, liveSetWalkSql).
  const whens = LIVE_SET_KINDS.map(
    (k, i) => `WHEN p.m${i} = ${k.inSet} AND p.v${i} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM held${i} h WHERE h.seq = p.c_seq AND h.v = p.v${i} AND h.at = p.c_at) THEN 1`,
  );
  // A CASE: each WHEN stops at its first answer (an AND that is a value runs all its sides).
  return (
    `WITH page AS MATERIALIZED (${page}), ${sets.join(", ")}, ${held.join(", ")} ` +
    `SELECT ${columns}, CASE WHEN p.each_unlisted THEN 1 ${whens.join(" ")} ELSE 0 END AS unlisted FROM page p ORDER BY p.c_seq`
  );
}
