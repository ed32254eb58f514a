// .ts extensions: test/bench/sqlite-floor.mjs runs this file in plain Node (through chain/event-insert.ts).
import { addressRunStatement, addressRuns, type AddressedRow, type AddressRun } from "./address-runs.ts";
import { foundBySpan, seqRanges, spanKey, spanStatements, type NamedAppend, type SpannedRow } from "./commit-spans.ts";
import { foundAtInstant, projectTagStatements, type InstantRow } from "./event-lookup.ts";
import { LIVE_SET_KINDS, liveSets, liveSetStatement, type LiveSet, type SettableRow } from "./live-sets.ts";
import { closedGroupsStatement, groupIndexStatement, searchLeads, searchWords, type SearchableFields } from "./search-index.ts";
import { targetTypeSets, targetTypeSetStatement, type TargetTypeSet, type TypedRow } from "./target-type-sets.ts";

/**
 * How storage finds the event rows it writes, beyond their own columns: by id
 * through a commit span instead of an id index entry (commit-spans.ts), by
 * search through one entry per group of events (search-index.ts), by
 * address through one run per request's events (address-runs.ts) or, for a
 * commit's live rows, one set per address they share (live-sets.ts), by
 * target type through one set per type a batch shares (target-type-sets.ts),
 * in time order, a commit's live rows through its span (event-query.ts,
 * timeWalk), and by action or organization, those of a repeated one through
 * one set per action or organization a commit's live rows share
 * (live-sets.ts). placeRows decides it all for a batch, afterInserts writes
 * what it decided.
 * Every writer of new rows does them all the same way: commits
 * (chain/event-insert.ts), shard copies and archive restores
 * (storage/shard-copy.ts), so a moved or restored row is stored as the commit
 * that first wrote it stored it.
 */

/** What storage reads of a row to place it. */
export type IndexedRow = SpannedRow & InstantRow & SearchableFields & AddressedRow & TypedRow & SettableRow;

/** The columns storage adds to a row, in this order. */
export const INDEXING_COLUMNS = ["id_indexed", "search_lead", "search_words", "append_name", "ip_run", "type_sets", "time_in_span", "action_in_set", "org_in_set"] as const;

/** A row's values of INDEXING_COLUMNS. */
export type RowIndexing = [idIndexed: 0 | 1 | 2, searchLead: number, searchWords: string, appendName: string | null, ipRun: 0 | 1 | 2, typeSets: number, timeInSpan: 0 | 1, actionInSet: 0 | 1, orgInSet: 0 | 1];

/** Who writes the rows: a commit (and the appends it answers) or a copy (shard moves, archive restores). */
export interface PlaceOptions {
  appends?: readonly NamedAppend[];
  copy?: boolean;
}

/**
 * Where storage puts a batch's rows: each row's INDEXING_COLUMNS, and the
 * rows that stand in for their index entries, which afterInserts writes
 * (the same ones the marks name), with the rows and the writer it was made
 * for, so that what follows the inserts cannot be told otherwise.
 */
export interface Placement {
  rows: readonly IndexedRow[];
  options: PlaceOptions;
  indexing: RowIndexing[];
  runs: AddressRun[];
  typeSets: TargetTypeSet[];
  /** The live sets of LIVE_SET_KINDS, in its order. */
  live: LiveSet[][];
}

/**
 * The placement of rows about to be inserted in this order, in one
 * batch: one transaction numbers them consecutively, which a search group
 * needs to find its entry at row_id - search_lead. (A commit numbers its rows
 * and makes their leads itself, to go on in the project's open group:
 * search-index.ts, commitInsertSql.) A row's words are made from
 * its fields: what ingest stores, and for a scrubbed row what the erasure
 * left (its action's words).
 *
 * A span pays off for two rows or more: alone in its commit (the batch's
 * rows of its project and received_at), a row keeps its id index entry, a
 * row at ingest and none at archive, where a span is one at each
 * (migration 0036), or none at all when it is live: the time index holds
 * it at its id's instant (event-lookup.ts, migration 0037). Its append's
 * name (`appends`, a commit's) then goes on the row, as no span carries it
 * (chain/landed-appends.ts).
 *
 * A commit's live rows in its span (occurred_at is the received_at it
 * stamped) are in time order through the span instead of the time index
 * (time_in_span, migration 0040; event-query.ts, timeWalk). A `copy` marks
 * none: it may put back rows inside a span still there, or write spans that
 * overlap, and the walk reads each span's whole seq range. Those live rows
 * that repeat an action are in its sets instead of the action index
 * (action_in_set, migration 0041), and those that repeat an organization in
 * its sets instead of the organization index (org_in_set, migration 0042:
 * live-sets.ts), and those that share an address in its sets instead of an
 * address run (ip_run = 2, migration 0043); the rest of a batch's rows of one
 * address, consecutive, still make runs.
 */
export function placeRows(rows: readonly IndexedRow[], options: PlaceOptions = {}): Placement {
  const appends = options.appends ?? [];
  const leads = searchLeads(rows);
  const types = targetTypeSets(rows);
  const keys = rows.map((r) => (foundBySpan(r) ? spanKey(r) : null));
  const spanned = new Map<string, number>();
  for (const key of keys) if (key !== null) spanned.set(key, (spanned.get(key) ?? 0) + 1);
  const bySpan = keys.map((key) => key !== null && spanned.get(key)! > 1);
  const timeInSpan = rows.map((r, i) => (bySpan[i] && !options.copy && r.occurred_at === r.received_at ? 1 : 0));
  const [actions, organizations, addresses] = LIVE_SET_KINDS.map((kind) => liveSets(kind, rows, timeInSpan));
  const { runs, ipRun } = addressRuns(rows, addresses.inSet);
  const indexing: RowIndexing[] = rows.map((r, i) => {
    const name = bySpan[i] ? null : (appends.find((a) => a.first === r.seq && a.last === r.seq)?.token ?? null);
    return [
      bySpan[i] ? 0 : foundAtInstant(r) ? 2 : 1, leads[i], searchWords(r).join(" "), name, addresses.inSet[i] || ipRun[i], types.typeSets[i], timeInSpan[i],
      actions.inSet[i] as 0 | 1, organizations.inSet[i] as 0 | 1,
    ];
  });
  return { rows, options, indexing, runs, typeSets: types.sets, live: [actions.sets, organizations.sets, addresses.sets] };
}

/** The rows' INDEXING_COLUMNS alone (placeRows). */
export function rowIndexing(rows: readonly IndexedRow[], options: PlaceOptions = {}): RowIndexing[] {
  return placeRows(rows, options).indexing;
}

/**
 * What follows the rows' inserts in the same batch: their commit spans (live
 * when they give their rows' time), the
 * project tags of rows found at their instant (event-lookup.ts), their
 * address runs, target type sets, action, organization and address sets (the same
 * ones placeRows marked: address-runs.ts, target-type-sets.ts,
 * live-sets.ts), and
 * the search entries of each project's seq range (made from the words the
 * rows store). A commit writes the entries of the groups it closed, the
 * project's open group staying without one (search-index.ts,
 * closedGroupsStatement). A copy's rows (placeRows' `copy`), which a commit first wrote
 * (commit-spans.ts), put back in groups of their own, whose leads placeRows
 * made: every group gets its entry.
 */
export function afterInserts(db: D1Database, placement: Placement): D1PreparedStatement[] {
  const { rows, options, indexing } = placement;
  const spans = spanStatements(db, rows, indexing.map(([idIndexed]) => idIndexed === 0), indexing.map(([, , , , , , timeInSpan]) => timeInSpan === 1), options);
  const tags = projectTagStatements(db, rows, indexing.map(([idIndexed]) => idIndexed === 2));
  const entries = options.copy ? groupIndexStatement : closedGroupsStatement;
  const groups = [...seqRanges(rows, (r) => r.project_id)].map(([projectId, { first, last }]) => entries(db, projectId, first, last));
  const ranges = [
    addressRunStatement(db, placement.runs),
    targetTypeSetStatement(db, placement.typeSets),
    ...LIVE_SET_KINDS.map((kind, k) => liveSetStatement(db, kind, placement.live[k])),
  ];
  return [...spans, ...tags, ...ranges.filter((s) => s !== null), ...groups];
}
