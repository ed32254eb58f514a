// .ts extensions: test/migrations/storage-v2.test.mjs runs this file in plain Node.
import { ACTION_SETS, ADDRESS_SETS, liveSetWalkSql, ORGANIZATION_SETS, type LiveSetKind } from "./live-sets.ts";
import { runRowIdsSql, sparseAddressSql } from "./address-runs.ts";
import type { Cursor } from "./cursor.ts";
import { inGroup, inOpenGroup, SEARCH_GROUP, SEARCH_TABLE } from "./search-index.ts";
import { knownKey, knownSeqEdge, seqIndex, seqOrder, seqsOn, type KnownKey } from "./row-keys.ts";
import { setRowIdsSql, sparseTypeSql } from "./target-type-sets.ts";
import type { ArmFacts } from "./periods.ts";

/** The filters of one read, resolved against the credential and reduced to what SQL needs. */
export interface Selection {
  projectId: string;
  organization: string | null;
  actorId: string | null;
  ipAddress: string | null;
  dateFrom: string | null;
  dateTo: string | null;
  /** Exactly these actions, or null for any action. */
  actions: string[] | null;
  /** Actions to leave out; only ever set when actions is null. */
  exclude: string[];
  /** Only events with a target of this type (and this id, when set); optional so selections stored by older jobs still read. */
  targetType?: string | null;
  targetId?: string | null;
  /** Declared metadata fields that must equal these values (src/catalog/metadata-filters.ts); optional, like the target. */
  metadata?: MetadataMatch[] | null;
}

/** One `metadata.<key>=<value>` filter, the value typed as the key's schema declares it. */
export interface MetadataMatch {
  key: string;
  value: string | number | boolean;
}

/** What a row's metadata holds at a top-level key, as SQLite's json_extract and JSON.parse both see it. */
export function metadataMatches(metadata: string, matches: MetadataMatch[]): boolean {
  const object = JSON.parse(metadata) as Record<string, unknown> | null;
  return object !== null && matches.every((m) => Object.hasOwn(object, m.key) && object[m.key] === m.value);
}

/**
 * Who reads, as far as the model cares: the project, and for an embed token
 * the organization it is narrowed to and whether it sees metadata; for a
 * customer's portal session (src/auth/portal.ts), its organization. An
 * authenticated credential (src/auth/credential.ts) is one.
 */
export type Reader =
  | { kind: "api_key"; projectId: string }
  | { kind: "embed"; projectId: string; organization: string | null; includeMetadata: boolean }
  | { kind: "portal"; projectId: string; organization: string };

/** The one organization a reader is narrowed to (an embed token's, a portal session's), or null for the whole project. */
export function narrowedOrganization(reader: Reader): string | null {
  return reader.kind === "api_key" ? null : reader.organization;
}

/** The filters a read may ask for (src/schemas/list-query.ts validates them). */
export interface SelectionFilters {
  organization?: string;
  action?: string;
  actions?: string[];
  actions_exclude?: string[];
  actor_id?: string;
  ip_address?: string;
  date_from?: string;
  date_to?: string;
  target_type?: string;
  target_id?: string;
}

/**
 * Null when nothing can match, so callers answer an empty page without a
 * query. An embed token narrowed to an organization only ever sees that
 * organization: asking for another one finds nothing.
 */
export function selectionFor(credential: Reader, filters: SelectionFilters): Selection | null {
  let organization = filters.organization ?? null;
  const narrowed = narrowedOrganization(credential);
  if (narrowed !== null) {
    if (organization !== null && organization !== narrowed) return null;
    organization = narrowed;
  }
  // action, actions and actions_exclude all apply; folding them into one
  // include list (or one exclude list) keeps every query on a single index
  // and under D1's 100 bound parameters.
  const exclude = new Set(filters.actions_exclude ?? []);
  let actions: string[] | null = filters.action !== undefined ? [filters.action] : null;
  if (filters.actions) actions = actions ? actions.filter((a) => filters.actions!.includes(a)) : filters.actions;
  if (actions) {
    actions = actions.filter((a) => !exclude.has(a));
    if (actions.length === 0) return null;
  }
  return {
    projectId: credential.projectId,
    organization,
    actorId: filters.actor_id ?? null,
    ipAddress: filters.ip_address ?? null,
    dateFrom: filters.date_from ?? null,
    dateTo: filters.date_to ?? null,
    actions,
    exclude: actions ? [] : [...exclude],
    targetType: filters.target_type ?? null,
    targetId: filters.target_id ?? null,
  };
}

/** Whether the selection keeps every event of its date window (exports then copy archived segments whole). */
export function keepsEveryRow(sel: Selection): boolean {
  return (
    sel.organization === null && sel.actorId === null && sel.ipAddress === null && sel.actions === null && sel.exclude.length === 0 &&
    (sel.targetType ?? null) === null && (sel.metadata?.length ?? 0) === 0
  );
}

export interface Statement {
  sql: string;
  params: unknown[];
  /**
   * The same page as one walk of an index read in place (an actor's, or
   * one an arm's facts leave: inPlaceBy), its
   * rows in list order with neither ORDER BY nor LIMIT, and the LIMIT's
   * parameter: what a compound over several arms merges in list order and
   * cuts once (model/periods.ts, orderedOverArms), each arm reading only the
   * rows the page takes from it. Absent for every other walk, which sorts
   * or merges walks of its own.
   */
  ordered?: { term: string; limit: string };
}

export interface SelectOptions {
  /** Columns of `events e` to return. */
  columns: string;
  /** The project's number in its shard when its rows are keyed there, else null (its place: storage/shards.ts): the walks read its rows by seq on that path alone. */
  rowKey: number | null;
  cursor: Cursor | null;
  limit: number;
  /**
   * Walk the full-text matches, not the list index: an FTS5 MATCH expression
   * (searchExpression) and its terms, which each event of
   * a matching group must hold (search-index.ts). `probe`: the hits counted
   * in the same statement, and walked only when at most `probe` (PROBED).
   */
  match?: { expression: string; terms: string[]; probe?: number };
  /**
   * With excluded actions: look at only the next `window` events of the walk
   * and leave out the excluded ones among them, instead of walking on until
   * the page is full (which reads most of the project when nearly every
   * action is excluded). The rows come with a last column, the number of
   * events looked at (one row of nulls and it when none is kept).
   */
  window?: number;
  /**
   * What the arm read holds of the project, when it takes no more rows (a
   * settled arm: model/periods.ts, ArmFacts). A walk of rows it holds none
   * of is left out, which may leave one index read in place (inPlaceBy).
   */
  facts?: ArmFacts;
}

const ORDER = "ORDER BY e.occurred_at DESC, e.seq DESC";

const TIME_INDEX = "events_project_time_idx";
const ACTION_INDEX = ACTION_SETS.index;
const ORG_INDEX = ORGANIZATION_SETS.index;

/**
 * The index to walk, named explicitly: without statistics SQLite may prefer a
 * date range on the time index over an equality filter and then read every
 * event of the range. The narrowest equality filter usually wins: one actor,
 * one organization, one action. An address is walked by addressWalk, which
 * takes this index when the address is common.
 */
function indexFor(sel: Selection, action: boolean): string {
  if (sel.actorId !== null) return "events_actor_time_idx";
  if (sel.organization !== null) return ORG_INDEX;
  return action ? ACTION_INDEX : TIME_INDEX;
}

/**
 * Whether `facts` (an arm's, model/periods.ts) make `sel`'s walk there one
 * index read in place, in list order, where without them it merges several:
 * - one action, alone (its index) and with no set there: the action index's
 *   entries are all its rows there (a set holds the rest: setWalk);
 * - a target id, no event there naming a second target or more: the first
 *   target's (type, id) index holds all its rows there (targetWalk).
 * The statement's values are the same either way, so arms walked each way
 * merge in one statement (orderedOverArms).
 */
export function inPlaceBy(sel: Selection, facts: ArmFacts | undefined): boolean {
  if (facts === undefined || sel.actorId !== null || sel.ipAddress !== null) return false;
  if ((sel.targetType ?? null) !== null) return sel.targetId != null && !facts.laterTargets;
  const action = sel.actions?.length === 1 ? sel.actions[0] : null;
  return action !== null && sel.organization === null && facts.setActions !== null && !facts.setActions.includes(action);
}

/**
 * One page of a selection, newest first (occurred_at, then seq). Each shape
 * walks an index in list order and stops at the limit:
 * - no action or one action: the (project, filter, occurred_at, seq) index of
 *   the narrowest equality filter; without one, the time index and the live
 *   spans, merged (timeWalk); for an action or an organization, its index
 *   and its sets, merged (setWalk);
 * - several actions: one ordered, limited walk per action, merged (SQLite
 *   cannot walk an IN list in index order; it would sort every matching row),
 *   unless the statement would pass D1's length (MAX_STATEMENT_BYTES);
 * - match: the FTS5 hits (groups of events), their events that hold every
 *   term looked up by rowid and sorted (cheap when rare);
 * - window: the next `window` events of the walk without the exclusion,
 *   looked up by rowid, the excluded ones left out, the rest sorted.
 */
export function selectEvents(sel: Selection, options: SelectOptions): Statement {
  const params: unknown[] = [];
  const bind = (value: unknown) => `?${params.push(value)}`;
  const limit = bind(options.limit);
  const project = bind(sel.projectId);
  const key = knownKey(options.rowKey, bind);
  const where = [`e.project_id = ${project}`];
  // The same time bounds on a live span (its rows' occurred_at is its received_at), for timeWalk's seek.
  const spanWhere = [`s.project_id = ${project}`];
  const organization = sel.organization !== null ? bind(sel.organization) : null;
  if (organization !== null) where.push(`e.organization = ${organization}`);
  if (sel.actorId !== null) where.push(`e.actor_id = ${bind(sel.actorId)}`);
  const ip = sel.ipAddress !== null ? bind(sel.ipAddress) : null;
  if (ip !== null) where.push(`e.ip_address = ${ip}`);
  if (sel.dateFrom !== null) {
    const from = bind(sel.dateFrom);
    where.push(`e.occurred_at >= ${from}`);
    spanWhere.push(`s.received_at >= ${from}`);
  }
  // Only the tighter of date_to and the cursor bounds the walk; the other is
  // implied by it, and SQLite would otherwise seek by one and filter by the other.
  const cursor = options.cursor;
  if (cursor && (sel.dateTo === null || cursor.occurredAt <= sel.dateTo)) {
    const at = bind(cursor.occurredAt);
    where.push(cursor.seq === null ? `e.occurred_at < ${at}` : `(e.occurred_at, e.seq) < (${at}, ${bind(cursor.seq)})`);
    spanWhere.push(`s.received_at <= ${at}`);
  } else if (sel.dateTo !== null) {
    const to = bind(sel.dateTo);
    where.push(`e.occurred_at <= ${to}`);
    spanWhere.push(`s.received_at <= ${to}`);
  }
  // Keys are [A-Za-z0-9_-] (src/catalog/schema-document.ts); booleans are 1 and 0 to json_extract.
  for (const m of sel.metadata ?? []) {
    where.push(`json_extract(e.metadata, ${bind(`$."${m.key}"`)}) = ${bind(typeof m.value === "boolean" ? Number(m.value) : m.value)}`);
  }
  const exclude = sel.exclude.length > 0 ? `e.action NOT IN (${sel.exclude.map(bind).join(", ")})` : null;
  // The first `l` events in list order (row_id, occurred_at, seq) that meet `conds`, walking `index`.
  const listWalk: ListWalk = (index, conds, l, action) =>
    index === TIME_INDEX
      ? timeWalk(key, conds, spanWhere, l)
      : index === ACTION_INDEX
        ? setWalk(ACTION_SETS, key, conds, spanWhere, action!, l)
        : index === ORG_INDEX
          ? setWalk(ORGANIZATION_SETS, key, conds, spanWhere, organization!, l)
          : `SELECT e.row_id, e.occurred_at, e.seq FROM events e INDEXED BY ${index} WHERE ${conds.join(" AND ")} ${ORDER} LIMIT ${l}`;
  const targetType = sel.targetType ?? null;
  // What the arm's facts leave out (inPlaceBy); not for a search's or an exclusion's own walks.
  const inPlace = options.match === undefined && options.window === undefined && inPlaceBy(sel, options.facts);
  if (targetType !== null && options.match === undefined && sel.actorId === null && sel.ipAddress === null) {
    return targetWalk(sel, targetType, options, params, bind, where, exclude, limit, project, key, listWalk, inPlace);
  }
  if (targetType !== null) {
    const type = bind(targetType);
    const targetId = sel.targetId != null ? bind(sel.targetId) : null;
    // A check of rows another walk found, which it has read: the later targets from the row's own JSON, which no
    // planted row of event_targets can add to.
    where.push(`(${INDEXED_TARGETS.map((at) => `(${targetAtIs(at, type, targetId)}) OR `).join("")}${namesTarget(type, targetId, INDEXED_TARGETS.length)})`);
  }
  const index = indexFor(sel, (sel.actions?.length ?? 0) > 0);
  // The walk of the events that meet `conds`, to `l`, given the other filters' walk (`walks`, in list order, along
  // `along`). An address without a narrower actor: its rows' index entries, its runs, or `walks` checking each row
  // (addressWalk). Otherwise `walks`, or with `inPlace` the index `along` read in place.
  const pageWalk = (conds: string[], l: string, along: string, walks: (limit: string) => string, inPlace = false): { from: string; where: string } =>
    ip !== null && sel.actorId === null
      ? { from: "FROM events e NOT INDEXED", where: `e.row_id IN (${addressWalk(conds, spanWhere, l, project, key, ip, along === TIME_INDEX, walks)})` }
      : inPlace
        ? { from: `FROM events e INDEXED BY ${along}`, where: conds.join(" AND ") }
        : { from: "FROM events e NOT INDEXED", where: `e.row_id IN (${rowIds(walks(l))})` };
  // The index's walk: a plain index in place, the time index merged with the live spans (timeWalk), the action index
  // (of `action`, bound) or the organization index with the value's sets (setWalk).
  const walk = (conds: string[], l: string, action?: string) =>
    pageWalk(conds, l, index, (lim) => listWalk(index, conds, lim, action), ![TIME_INDEX, ACTION_INDEX, ORG_INDEX].includes(index));
  if (exclude && options.window !== undefined && options.match === undefined) {
    const window = bind(options.window);
    const w = walk(where, window);
    // The walk kept and counted with the page (countedPage): a count under the window says the walk ran out, so the
    // page holds every row left (a short list, or an arm that holds few) and no other walk is needed (event-read.ts).
    const walked = `SELECT e.row_id ${w.from} WHERE ${w.where} ${ORDER} LIMIT ${window}`;
    const page = `SELECT ${options.columns} FROM events e WHERE e.row_id IN (SELECT row_id FROM walked) AND ${exclude} ${ORDER} LIMIT ${limit}`;
    return { sql: countedPage("walked", walked, page), params };
  }
  if (exclude) where.push(exclude);
  const actions = (sel.actions ?? []).map(bind);

  if (options.match !== undefined) {
    if (actions.length > 0) where.push(`e.action IN (${actions.join(", ")})`);
    // A group's entry holds all its events' words; an event is a hit when its own words hold every term
    // (each a prefix of one of its words). Rows with an entry of their own store no words until the daily cron
    // gives them theirs (reindexBacklog): till then the entry is their word.
    const holds = options.match.terms.map((t) => `instr(' ' || e.search_words, ' ' || ${bind(t)}) > 0`);
    where.push(`(e.search_words IS NULL OR (${holds.join(" AND ")}))`);
    // The project's open group has no entry yet (search-index.ts): its events are among the project's 16 newest.
    const newest = knownSeqEdge(key, project, true);
    const open =
      `SELECT * FROM (SELECT e.row_id FROM events e ${seqIndex(key)} WHERE ${seqsOn("e", key, project, `${newest} - ${SEARCH_GROUP - 1}`, newest)} ` +
      `AND ${inOpenGroup("e")} AND ${where.join(" AND ")})`;
    const expression = bind(options.match.expression);
    const probe = options.match.probe;
    // NOT INDEXED: the rowid range is the walk; a filter's index (one organization's every event) would be read per hit.
    const hitWalk = (from: string, entry: string, few = "") =>
      `SELECT * FROM (SELECT e.row_id FROM ${from} CROSS JOIN events e NOT INDEXED ON ${inGroup("e", entry)} ` +
      `WHERE ${few}${where.join(" AND ")} ${ORDER} LIMIT ${limit}) UNION ALL ${open}`;
    const walks =
      probe === undefined
        ? hitWalk(`${SEARCH_TABLE} f`, "f.rowid", `f.${SEARCH_TABLE} MATCH ${expression} AND `)
        : hitWalk("hits f", "f.k", `(SELECT n FROM counted) <= ${probe} AND `);
    const page = `SELECT ${options.columns} FROM events e WHERE e.row_id IN (${walks}) ${ORDER} LIMIT ${limit}`;
    if (probe === undefined) return { sql: page, params };
    // PROBED: FTS5's hits, up to one past `probe`, kept and counted, and the page they give when they are no more
    // than `probe`, in one statement that reads the index once: the page's rows, each with a last column of that
    // count, or one row of nulls and the count when the page has none. Past `probe`, the page holds the open
    // group's rows alone, which the caller sets aside to walk the list instead (event-read.ts, searchEvents).
    const hits = `SELECT rowid AS k FROM ${SEARCH_TABLE} WHERE ${SEARCH_TABLE} MATCH ${expression} LIMIT ${probe + 1}`;
    return { sql: countedPage("hits", hits, page), params };
  }
  if (actions.length <= 1) {
    if (actions.length === 1) where.push(`e.action = ${actions[0]}`);
    // An action with no set in the arm: its index's entries alone (inPlaceBy).
    const w = inPlace ? { from: `FROM events e INDEXED BY ${ACTION_INDEX}`, where: [...where, `e.${ACTION_SETS.mark} = 0`].join(" AND ") } : walk(where, limit, actions[0]);
    const term = `SELECT ${options.columns} ${w.from} WHERE ${w.where}`;
    const ordered = w.from.startsWith("FROM events e INDEXED BY");
    return { sql: `${term} ${ORDER} LIMIT ${limit}`, params, ...(ordered ? { ordered: { term, limit } } : {}) };
  }
  // Several actions: one walk per action, merged (SQLite cannot walk an IN list in index order). With an address, they
  // are its common walk: its sparse walks take the list once, each row checked.
  const some = [...where, `e.action IN (${actions.join(", ")})`];
  const byAction = (lim: string) => mergeWalks(actions.map((action) => listWalk(index, [...where, `e.action = ${action}`], lim, action)), lim);
  const w = pageWalk(some, limit, index, byAction);
  const sql = `SELECT ${options.columns} ${w.from} WHERE ${w.where} ${ORDER} LIMIT ${limit}`;
  if (sql.length <= MAX_STATEMENT_BYTES) return { sql, params };
  // Each walk repeats every other filter: with many actions and many filters (an address, a target, metadata) the
  // statement would pass D1's limit. The list walk of the other filters then checks each row's action instead, as
  // it would check any other filter: slower for rare actions, one statement whatever their number.
  const other = index === ACTION_INDEX ? TIME_INDEX : index;
  const checked = pageWalk(some, limit, other, (lim) => listWalk(other, some, lim));
  return { sql: `SELECT ${options.columns} ${checked.from} WHERE ${checked.where} ${ORDER} LIMIT ${limit}`, params };
}

/**
 * `page` (a statement that reads the rows of `kept`, a CTE of `sql`, kept
 * once and named `name`) with the number of those rows as a last column
 * (`counted`'s n, which the page may read too), or, when it has no row, one
 * row of nulls and that number: what the caller decides its next step by.
 */
function countedPage(name: string, sql: string, page: string): string {
  return `WITH ${name} AS MATERIALIZED (${sql}), counted AS MATERIALIZED (SELECT count(*) AS n FROM ${name}) SELECT page.*, counted.n FROM counted LEFT JOIN (${page}) page`;
}

/** D1 refuses a statement of more SQL than this ("Maximum SQL statement length", developers.cloudflare.com/d1/platform/limits); its text is ASCII, its values bound. */
export const MAX_STATEMENT_BYTES = 100_000;

/** The row_ids of a walk of (row_id, occurred_at, seq), in its order. */
function rowIds(walk: string): string {
  return `SELECT row_id FROM (${walk})`;
}

/** The first `l` in list order of walks of (row_id, occurred_at, seq), each in list order and stopped at `l`: the merge sorts at most `l` rows a walk. */
function mergeWalks(walks: string[], l: string): string {
  return `SELECT row_id, occurred_at, seq FROM (${unionAll(walks.map((w) => `SELECT * FROM (${w})`))}) ORDER BY occurred_at DESC, seq DESC LIMIT ${l}`;
}

/**
 * The row_ids of the first `l` events in list order of an address (bound
 * parameter `ip`) that meet `conds`. A commit's live rows of an address have
 * no index entry but a live set (migration 0043: live-sets.ts), in list
 * order; other batches' rows (written before it, copies, restores, rows with
 * their own occurred_at) have a run (address-runs.ts), keyed by seq. So the
 * walk is one of two, chosen in SQL once (a LIMIT of 0 stops a walk before
 * it reads a row):
 * - sparse: the address's index entries (lone rows, rows from before
 *   migration 0038) and its live sets (`spans`: the walk's bounds on set
 *   `s`), each walked in list order, and its runs' events, read and sorted
 *   (when that reads fewer rows: sparseAddressSql, which counts runs only);
 * - common: the other filters' walk (`common`, a ListWalk's), checking each
 *   row's address; `covered` when its index holds the address (the time
 *   index).
 */
function addressWalk(conds: string[], spans: string[], l: string, project: string, key: KnownKey, ip: string, covered: boolean, common: (limit: string) => string): string {
  const where = conds.join(" AND ");
  const { plan, walks } = guardedWalks("address_plan", sparseAddressSql(project, key, ip, l, covered), l, [
    (limit) => `SELECT e.row_id FROM events e INDEXED BY events_ip_time_idx WHERE ${where} AND e.ip_run = 0 ${ORDER} LIMIT ${limit}`,
    (limit) => rowIds(liveSetWalkSql(ADDRESS_SETS, key, ip, spans, where, limit)),
    (limit) => `SELECT e.row_id FROM events e NOT INDEXED WHERE e.row_id IN (${runRowIdsSql(project, key, ip)}) AND ${where} ${ORDER} LIMIT ${limit}`,
  ], (limit) => rowIds(common(limit)));
  return plan + walks.map((w) => `SELECT * FROM (${w})`).join(" UNION ALL ");
}

/**
 * Walks (in list order) of which one plan runs, chosen by `guard` (SQL: 1
 * for `sparse`, 0 for `common`): each walk's LIMIT is `l` under its plan and
 * 0 under the other, which stops it before it reads a row. Each walk comes
 * as a function of the limit it is given. The guard is read once, in a CTE
 * named `name` that `plan` defines (it reads up to SPARSE_RUNS ranges), not
 * once per walk.
 */
function guardedWalks(
  name: string,
  guard: string,
  l: string,
  sparse: ((limit: string) => string)[],
  common: (limit: string) => string,
): { plan: string; walks: string[] } {
  const only = (plan: 0 | 1) => `(SELECT CASE WHEN sparse = ${plan} THEN ${l} ELSE 0 END FROM ${name})`;
  return {
    plan: `WITH ${name} AS MATERIALIZED (SELECT ${guard} AS sparse) `,
    walks: [...sparse.map((w) => w(only(1))), common(only(0))],
  };
}

/**
 * SQL: the first `l` events in list order (row_id, occurred_at, seq) that
 * meet `conds` (of `events e`), walking `index`; on the action index, of
 * the one action `action` (a bound parameter), which conds name too.
 */
type ListWalk = (index: string, conds: string[], l: string, action?: string) => string;

/**
 * The time index's list walk (migration 0040). A commit of two events or
 * more gives its live rows (occurred_at is the received_at it stamped: one
 * instant for all of them) no time index entry: its span (commit_spans,
 * live) holds them at that instant. So the walk is two, merged:
 * - the index's entries (every other row), in list order;
 * - the project's live spans newest first (`spans`: the walk's time bounds
 *   on span `s`), each span's rows by seq. That is list order too: its rows
 *   share the span's instant, and a project's spans never share rows.
 * Each stops at `l`, so the merge sorts at most 2l rows. A span's rows are
 * read by seq on the project's path (`key`: row-keys.ts), in seq order.
 */
function timeWalk(key: KnownKey, conds: string[], spans: string[], l: string): string {
  const where = conds.join(" AND ");
  // The seq index is unique, as the key is, and a keyed range of row ids is in seq order: SQLite then walks each
  // span's rows in order instead of sorting them.
  // A row is taken only at its own instant: a span that a database writer planted over rows another span holds
  // would otherwise list them twice, out of order, and a page of duplicates comes up short and ends the list.
  const spanned =
    "SELECT e.row_id, e.occurred_at, e.seq FROM commit_spans s INDEXED BY commit_spans_live_time_idx " +
    `CROSS JOIN events e ${seqIndex(key)} ON ${seqsOn("e", key, "s.project_id", "s.first_seq", "s.last_seq")} ` +
    `WHERE ${spans.join(" AND ")} AND s.live = 1 AND ${where} AND e.time_in_span = 1 AND e.occurred_at = s.received_at ` +
    `ORDER BY s.received_at DESC, s.first_seq DESC, ${seqOrder("e", key)} DESC LIMIT ${l}`;
  return mergedWalk(TIME_INDEX, `${where} AND e.time_in_span = 0`, spanned, l);
}

/**
 * The list walk of one action's index (migration 0041) or one
 * organization's (migration 0042), the same way: a commit's live rows that
 * repeat the value have no entry but its set (live-sets.ts), so the walk
 * merges the index's entries with the value's sets newest first, each set's
 * rows by seq (`value`: bound; `spans`: the walk's bounds on set `s`, whose
 * received_at is its rows' occurred_at).
 */
function setWalk(kind: LiveSetKind, key: KnownKey, conds: string[], spans: string[], value: string, l: string): string {
  const where = conds.join(" AND ");
  return mergedWalk(kind.index, `${where} AND e.${kind.mark} = 0`, liveSetWalkSql(kind, key, value, spans, where, l), l);
}

/** The first `l` events in list order (row_id, occurred_at, seq) of `index`'s entries that meet `where`, merged with another walk of them in list order that stops at `l`. */
function mergedWalk(index: string, where: string, other: string, l: string): string {
  return mergeWalks([`SELECT e.row_id, e.occurred_at, e.seq FROM events e INDEXED BY ${index} WHERE ${where} ${ORDER} LIMIT ${l}`, other], l);
}

/** D1 allows at most 5 terms per compound SELECT; nest groups of 5 as subqueries. */
const MAX_COMPOUND = 5;

function unionAll(selects: string[]): string {
  if (selects.length <= MAX_COMPOUND) return selects.join(" UNION ALL ");
  const groups: string[] = [];
  for (let i = 0; i < selects.length; i += MAX_COMPOUND) {
    groups.push(`SELECT * FROM (${unionAll(selects.slice(i, i + MAX_COMPOUND))})`);
  }
  return unionAll(groups);
}

/**
 * The targets the events table indexes itself, by their place in the event's
 * array (migrations 0033 and 0035): each in two partial indexes, (type) and
 * (type, id). event_targets holds every later target.
 */
const INDEXED_TARGETS = [
  { at: 0, holds: "e.targets <> '[]'", byType: "events_first_target_type_idx", byId: "events_first_target_id_idx" },
  { at: 1, holds: "json_array_length(e.targets) > 1", byType: "events_second_target_type_idx", byId: "events_second_target_id_idx" },
] as const;
type IndexedTarget = (typeof INDEXED_TARGETS)[number];

/**
 * SQL: whether event e's target at this place is of this type (and id), both
 * bound parameters, in the expressions of its indexes and with their partial
 * condition (the same ones, or SQLite will not use the index).
 */
function targetAtIs(target: IndexedTarget, type: string, id: string | null): string {
  const at = `'$[${target.at}]`;
  return `${target.holds} AND (e.targets ->> ${at}.type') = ${type}${id !== null ? ` AND (e.targets ->> ${at}.id') = ${id}` : ""}`;
}

/**
 * The walks of a target type alone (`conds`: every other filter), in list
 * order. A batch's rows have no type index entry but a set
 * (target-type-sets.ts), so the walk is one of two, chosen in SQL once per
 * statement (type_plan; a LIMIT of 0 stops a walk before it reads a row):
 * - sparse: each place's index entries (types a batch named once or twice,
 *   rows from before migration 0039), walked in list order, and the rows
 *   the type's sets name at either place, read and sorted (when that reads
 *   fewer rows: sparseTypeSql);
 * - common: the list walk of the other filters (`index`), checking each
 *   row's first and second targets.
 * One guard and one common walk for both places: a statement of two guards
 * and six walks took twice as long to prepare and run.
 */
function typeWalks(conds: string[], l: string, index: string, project: string, key: KnownKey, type: string, listWalk: ListWalk): { plan: string; walks: string[] } {
  const where = conds.join(" AND ");
  const either = `(${INDEXED_TARGETS.map((at) => `(${targetAtIs(at, type, null)})`).join(" OR ")})`;
  return guardedWalks("type_plan", sparseTypeSql(project, key, type, l), l, [
    ...INDEXED_TARGETS.map(
      (at) => (limit: string) =>
        `SELECT e.row_id FROM events e INDEXED BY ${at.byType} WHERE ${where} AND ${targetAtIs(at, type, null)} AND (e.type_sets & ${1 << at.at}) = 0 ${ORDER} LIMIT ${limit}`,
    ),
    // Each row's own targets too: a set a database writer planted over rows of other types lists none of them.
    (limit) => `SELECT e.row_id FROM events e NOT INDEXED WHERE e.row_id IN (${setRowIdsSql(project, key, type)}) AND ${where} AND ${either} ${ORDER} LIMIT ${limit}`,
  ], (limit) => rowIds(listWalk(index, [...conds, either], limit)));
}

/** SQL: whether event `e`'s own targets, from place `from` on, name `type` (and `id`, unless null): SQL values. */
function namesTarget(type: string, id: string | null, from = 0): string {
  const place = from > 0 ? `j.key >= ${from} AND ` : "";
  return `EXISTS (SELECT 1 FROM json_each(e.targets) j WHERE ${place}j.value ->> 'type' = ${type}${id !== null ? ` AND j.value ->> 'id' = ${id}` : ""})`;
}

/**
 * A target filter without a narrower actor or address: walks in list order,
 * merged. An event's first and second targets are in indexes on the events
 * table (migrations 0033, 0035), or for a type alone in a batch's set
 * (migration 0039: typeWalks); every later target is a row of event_targets
 * (kept by triggers), as are the first and second targets of events stored
 * before those migrations. Each walk stops at the limit, and an event found
 * twice (by two walks, or by two of its targets) is listed once.
 */
function targetWalk(
  sel: Selection,
  targetType: string,
  options: SelectOptions,
  params: unknown[],
  bind: (value: unknown) => string,
  eventWhere: string[],
  exclude: string | null,
  limit: string,
  project: string,
  key: KnownKey,
  listWalk: ListWalk,
  inPlace: boolean,
): Statement {
  const type = bind(targetType);
  const targetId = sel.targetId != null ? bind(sel.targetId) : null;
  const actions = (sel.actions ?? []).map(bind);
  const onEvent = [...(exclude ? [exclude] : []), ...(actions.length > 0 ? [`e.action IN (${actions.join(", ")})`] : [])];
  if (inPlace && targetId !== null) {
    // No event of the arm names a second target (inPlaceBy): the first target's (type, id) index, read in place.
    const first = INDEXED_TARGETS[0];
    const term = `SELECT ${options.columns} FROM events e INDEXED BY ${first.byId} WHERE ${[...eventWhere, targetAtIs(first, type, targetId), ...onEvent].join(" AND ")}`;
    return { sql: `${term} ${ORDER} LIMIT ${limit}`, params, ordered: { term, limit } };
  }

  // The first and second targets: the events table's own indexes, with every other filter on the same row.
  // With an id, its (type, id) index holds every event; with a type only, typeWalks.
  const types =
    targetId === null ? typeWalks([...eventWhere, ...onEvent], limit, sel.organization !== null ? ORG_INDEX : TIME_INDEX, project, key, type, listWalk) : null;
  const indexed =
    types?.walks ??
    INDEXED_TARGETS.map(
      (at) => `SELECT e.row_id FROM events e INDEXED BY ${at.byId} WHERE ${[...eventWhere, targetAtIs(at, type, targetId), ...onEvent].join(" AND ")} ${ORDER} LIMIT ${limit}`,
    );
  const plan = types?.plan ?? "";

  // The other targets: the same bounds on the target rows (t.occurred_at and t.seq are the event's own).
  const where = eventWhere.map((w) => w.replaceAll("e.occurred_at", "t.occurred_at").replaceAll("e.seq", "t.seq").replace("e.project_id", "t.project_id"));
  where.push(`t.type = ${type}`);
  if (targetId !== null) where.push(`t.id = ${targetId}`);
  if (targetId === null) {
    // With a type only, an event naming several targets of it is walked once (its row of the smallest id it names:
    // a row planted with a smaller id the event does not name would otherwise stand in for the real one and list nothing).
    where.push(
      "NOT EXISTS (SELECT 1 FROM event_targets d INDEXED BY event_targets_type_time_idx WHERE d.project_id = t.project_id AND d.type = t.type " +
        `AND d.occurred_at = t.occurred_at AND d.seq = t.seq AND d.id < t.id AND ${namesTarget("d.type", "d.id")})`,
    );
  }
  where.push(...onEvent);
  // With an id, the table's own key (project, type, id, occurred_at, seq) is the walk; with a type only, its index.
  const index = targetId !== null ? "" : " INDEXED BY event_targets_type_time_idx";
  const others =
    // The event's own seq too: a row a database writer pointed at another event lists nothing (verify names the event it left).
    // And its own time and targets: the walk is in the rows' order and stops at the limit, so a row a writer planted
    // at another time filled a page out of order (a cursor past it skipped the events between, with verify ok), and
    // one for an event without the target listed that event under it. Either now lists nothing, as a planted set does.
    `SELECT e.row_id FROM event_targets t${index} CROSS JOIN events e ON e.row_id = t.row_id AND e.seq = t.seq AND e.project_id = t.project_id ` +
    `AND e.occurred_at = t.occurred_at AND ${namesTarget("t.type", "t.id")} ` +
    `WHERE ${where.join(" AND ")} ORDER BY t.occurred_at DESC, t.seq DESC LIMIT ${limit}`;

  // IN keeps each row once, so the walks need no merge of their own: the page sorts a few times its rows at most.
  const walks = plan + unionAll([...indexed, others].map((walk) => `SELECT * FROM (${walk})`));
  return {
    sql: `SELECT ${options.columns} FROM events e WHERE e.row_id IN (${walks}) ${ORDER} LIMIT ${limit}`,
    params,
  };
}
