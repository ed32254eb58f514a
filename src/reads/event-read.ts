/**
 * src/reads/: reading events without the ledger. Start here: list and search
 * pages of the hot tier (this file); history-read.ts spans the archive too;
 * export-stream.ts and export-part.ts stream GET /v1/exports; rollups.ts keeps
 * the per-day counts behind stats.
 */
import { type Cursor, encodeCursor } from "../model/cursor";
import { eventsByIdStatement } from "../model/event-lookup";
import { inPlaceBy, MAX_STATEMENT_BYTES, selectEvents, type Selection } from "../model/event-query";
import { SHAPE_SELECT, shapeCells, shapeCounted, shapeRows, type ShapeRow } from "../model/event-shape";
import { parsePending, PendingScrub, PENDING_COLUMN, wasScrubbed } from "../model/pending-erasures";
import { searchExpression } from "../model/search-index";
import { matchesAll } from "../model/search-query";
import { orderedOverArms, type Arm, type ArmFacts } from "../model/periods";
import { archivedEvent } from "../storage/archive-lookup";
import { eventsReadDb } from "../storage/shards";
import { firstOverArms } from "./arms";

export interface Page {
  rows: ShapeRow[];
  /** Resumes right after the last row; null on the last page. */
  nextCursor: string | null;
}

export const EMPTY_PAGE: Page = { rows: [], nextCursor: null };

/**
 * rows holds up to limit + 1 rows: the extra one only says that another page
 * exists. keep: rows a pending erasure scrubbed that no longer match the read
 * (the filter or search terms matched only erased values) are left out, as
 * they would be once the erasure's job scrubbed them; the cursor still goes on
 * from the last row looked at, so such a page may hold fewer than limit rows.
 */
function toPage(rows: ShapeRow[], limit: number, keep?: (row: ShapeRow) => boolean): Page {
  const more = rows.length > limit;
  const seen = more ? rows.slice(0, limit) : rows;
  const page = keep ? seen.filter((r) => !wasScrubbed(r) || keep(r)) : seen;
  const last = seen[seen.length - 1];
  return { rows: page, nextCursor: more ? encodeCursor(last.occurred_at, last.seq) : null };
}

/** A scrubbed row still matches a selection unless it filters on a scrubbed field (actor id, IP address). */
const stillMatches = (sel: Selection) => () => sel.actorId === null && sel.ipAddress === null;

/**
 * The project's first action after `a` (SQL): the action index holds every row but a commit's live rows of a
 * repeated action, which their action's sets hold (migration 0041). One seek of each.
 */
const nextAction = (a: string) =>
  `(SELECT min(x) FROM (SELECT min(action) AS x FROM events INDEXED BY events_action_time_idx WHERE project_id = ?1 AND action_in_set = 0 AND action > ${a} ` +
  `UNION ALL SELECT min(action) FROM action_sets WHERE project_id = ?1 AND action > ${a}))`;

/** The distinct actions of a project, in order, at most ?2 of them. */
const DISTINCT_ACTIONS =
  `WITH RECURSIVE acts(a) AS (SELECT ${nextAction("''")} UNION ALL SELECT ${nextAction("a")} FROM acts WHERE a IS NOT NULL LIMIT ?2) ` +
  "SELECT a FROM acts WHERE a IS NOT NULL";
const MAX_DISTINCT_ACTIONS = 50;

/**
 * actions_exclude walks the list skipping excluded events, which reads most
 * of the project when nearly every action is excluded. When the project has
 * few distinct actions, the exclusion becomes the include list of the others,
 * walked one action index range each. Null when nothing is left to match.
 */
export async function narrowExclusions(db: D1Database, sel: Selection): Promise<Selection | null> {
  if (sel.exclude.length === 0) return sel;
  const { results } = await db.prepare(DISTINCT_ACTIONS).bind(sel.projectId, MAX_DISTINCT_ACTIONS + 1).all<{ a: string }>();
  if (results.length > MAX_DISTINCT_ACTIONS) return sel;
  const excluded = new Set(sel.exclude);
  const actions = results.map((r) => r.a).filter((a) => !excluded.has(a));
  return actions.length === 0 ? null : { ...sel, actions, exclude: [] };
}

/** How many events past a page an exclusion first looks at, in pages: enough when up to half are excluded. */
const EXCLUDE_WINDOW_PAGES = 2;

/** `rowKey`: the project's number in its shard when its rows are keyed there, else null (storage/shards.ts, projectRowKey). */
export async function listEvents(db: D1Database, rowKey: number | null, selection: Selection, cursor: Cursor | null, limit: number): Promise<Page> {
  if (selection.exclude.length > 0) {
    // Usually a few noisy actions are excluded and the next events fill the
    // page: one query. So it does when the list ends inside the window. If
    // the excluded actions crowd the window, narrowing to the included
    // actions decides.
    const window = (limit + 1) * EXCLUDE_WINDOW_PAGES;
    const { rows, count: looked } = await shapeCounted(db, selectEvents(selection, { columns: SHAPE_SELECT, rowKey, cursor, limit: limit + 1, window }));
    // A full page, or the walk ran out inside the window: every event left is in it (an arm that holds few: a
    // period's main tables, a small project), and the page is whole.
    if (rows.length > limit || looked < window) return toPage(rows, limit, stillMatches(selection));
  }
  const sel = await narrowExclusions(db, selection);
  if (!sel) return EMPTY_PAGE;
  return toPage(await shapeRows(db, selectEvents(sel, { columns: SHAPE_SELECT, rowKey, cursor, limit: limit + 1 })), limit, stillMatches(sel));
}

/**
 * listEvents in each of `arms` at once, when the selection's page is one
 * walk in list order in some of them (an actor's everywhere; a rare action
 * or a target id where a settled arm's facts allow: event-query.ts,
 * inPlaceBy, Statement.ordered): one statement that merges the arms' walks
 * in list order and stops at the page (orderedOverArms), so each arm walked
 * in place is read only as far as the page takes rows from it, and the
 * others' whole pages merge with them. Its pages, one an arm in `arms`'
 * order, each hold that arm's rows of the merged page; when the merge was
 * cut, each has the merged page's cursor, which every arm's rows below wait
 * for (mergePages then gives the merged page back whole). Null when no arm's
 * walk is in place: read an arm at a time.
 */
export async function listEventsOverArms(
  db: D1Database,
  arms: readonly { arm: Arm; facts?: ArmFacts }[],
  rowKey: number | null,
  sel: Selection,
  cursor: Cursor | null,
  limit: number,
): Promise<Page[] | null> {
  // Excluded actions are read a window at a time (listEvents), not walked to the page. Only an actor's walk is in
  // place in every arm (event-query.ts, indexFor), another's only where facts allow: no list is built in vain.
  if (sel.exclude.length > 0) return null;
  const inPlace = arms.map((a) => inPlaceBy(sel, a.facts));
  if (sel.actorId === null && !inPlace.includes(true)) return null;
  // Two statements at most: facts that leave a walk in place all leave the same one, and it binds the same values as
  // the whole statement (inPlaceBy), so one list of values serves every term.
  const options = { columns: SHAPE_SELECT, rowKey, cursor, limit: limit + 1 };
  const placed = inPlace.includes(true) ? selectEvents(sel, { ...options, facts: arms[inPlace.indexOf(true)].facts }) : null;
  const plain = inPlace.includes(false) ? selectEvents(sel, options) : null;
  const walk = placed?.ordered ?? plain?.ordered;
  if (walk === undefined) return null;
  const terms = inPlace.map((p) => (p ? placed!.ordered!.term : (plain!.ordered?.term ?? plain!.sql)));
  const { params } = (placed ?? plain)!;
  const sql = orderedOverArms(terms, arms.map((a) => a.arm), walk.limit);
  if (sql.length > MAX_STATEMENT_BYTES) return null;
  const cells = await db.prepare(sql).bind(...params).raw();
  const seen = await shapeCells(cells);
  const nextCursor = seen.length > limit ? encodeCursor(seen[limit - 1].occurred_at, seen[limit - 1].seq) : null;
  const keep = stillMatches(sel);
  const pages: Page[] = arms.map(() => ({ rows: [], nextCursor }));
  seen.forEach((row, i) => {
    if (i < limit && (!wasScrubbed(row) || keep())) pages[cells[i].at(-1) as number].rows.push(row);
  });
  return pages;
}

/** Events of the filtered list a search checks itself first: a common term fills its page here. */
export const FIRST_WINDOW = 250;
/**
 * FTS5 hits (of this project's tag) up to which fetching every hit beats walking the list. A hit is a
 * search group (up to 16 consecutive rows of one commit, search-index.ts) whose events SQL checks for the terms.
 */
export const RARE_HITS = 500;
/** RARE_HITS as searches read it: tests make it small, to have a term common in an arm without 8,000 events. */
export const searchTuning = { rareHits: RARE_HITS };
/** Events checked next when the term is neither common in the first window nor rare in the project. */
export const SCAN_WINDOW = 2000;

const CANDIDATE_COLUMNS = `e.row_id, e.occurred_at, e.seq, e.action, e.actor_name, e.actor_email, e.actor_id, e.organization, ${PENDING_COLUMN}`;

/** A row of CANDIDATE_COLUMNS, read as an array: a scan checks up to 2,000 of them. */
type Candidate = [
  rowId: number,
  occurredAt: string,
  seq: number,
  action: string,
  actorName: string | null,
  actorEmail: string | null,
  actorId: string | null,
  organization: string | null,
  pending: string | null,
];

/**
 * FTS5 alone is slow for common terms: a prefix term gathers every hit of
 * the project (its tag's doclists, search-index.ts) and each must be looked
 * up and sorted into list order. Walking the list and checking each event in
 * JavaScript is slow for rare terms instead. So: check the newest
 * FIRST_WINDOW events of the filtered list (a common term fills the page
 * there); if FTS5 has at most RARE_HITS hits, let it find the rest (the
 * count and the rest in one statement: event-query.ts, PROBED); otherwise
 * check SCAN_WINDOW more events, and only then hand the rest (below the last
 * event checked) to FTS5.
 *
 * `rare`: the newer arms of the page ran out short of it (model/periods.ts,
 * pageOverSpans), so the terms are rare there and most likely here too:
 * FTS5 is asked first. A term rare in this arm, or in no event of it, then
 * costs that one statement, not a window and that statement. Past RARE_HITS
 * the statement's page is set aside and the list walked as above: one
 * statement more than without `rare`.
 */
export async function searchEvents(
  db: D1Database,
  rowKey: number | null,
  selection: Selection,
  terms: string[],
  cursor: Cursor | null,
  limit: number,
  rare = false,
): Promise<Page> {
  const sel = await narrowExclusions(db, selection);
  if (!sel) return EMPTY_PAGE;
  const want = limit + 1;
  const { rareHits } = searchTuning;
  const expression = searchExpression(terms, sel.projectId);
  const hits: number[] = [];
  const pending = new PendingScrub();
  let below = cursor;
  /** Checks the next `size` events; true while the list goes on below them. */
  const scan = async (size: number) => {
    const { sql, params } = selectEvents(sel, { columns: CANDIDATE_COLUMNS, rowKey, cursor: below, limit: size });
    const window = await db.prepare(sql).bind(...params).raw<Candidate>();
    for (const [rowId, , seq, action, actorName, actorEmail, actorId, organization, entries] of window) {
      if (hits.length >= want) continue;
      // An event a pending erasure covers is matched on what its scrub leaves: the action.
      const erased = entries !== null && (await pending.covering({ seq, action, organization, actor_id: actorId, actor_email: actorEmail }, parsePending(entries)!)) !== null;
      if (matchesAll(terms, erased ? [action] : [action, actorName, actorEmail, actorId])) hits.push(rowId);
    }
    const last = window[window.length - 1];
    if (last) below = { occurredAt: last[1], seq: last[2] };
    return window.length === size;
  };
  /** Events of `ids` (hits of the scan), shaped, in list order. */
  const shaped = (ids: number[]): Promise<ShapeRow[]> =>
    ids.length === 0
      ? Promise.resolve([])
      : shapeRows(db, {
          sql: `SELECT ${SHAPE_SELECT} FROM events e WHERE e.row_id IN (SELECT value FROM json_each(?)) ORDER BY e.occurred_at DESC, e.seq DESC`,
          params: [JSON.stringify(ids)],
        });
  /**
   * The rest of the page below the last event checked, from FTS5 when the
   * project has at most rareHits hits (none: the open group's events alone),
   * counted and walked in one statement (event-query.ts, PROBED); null when
   * it has more, and the list is walked instead.
   */
  const probedRest = async (): Promise<ShapeRow[] | null> => {
    const { rows, count } = await shapeCounted(db, selectEvents(sel, { columns: SHAPE_SELECT, rowKey, cursor: below, limit: want - hits.length, match: { expression, terms, probe: rareHits } }));
    return count > rareHits ? null : rows;
  };
  const filtered = stillMatches(sel);
  const page = (rows: ShapeRow[]) => toPage(rows, limit, (row) => filtered() && matchesAll(terms, [row.action]));

  /** The scan's hits shaped so far (the first `shapedHits`). */
  let found: ShapeRow[] = [];
  let shapedHits = 0;
  let more: boolean;
  if (rare) {
    const rest = await probedRest();
    if (rest !== null) return page(rest);
    // Common in this arm after all: walked as below, its count known.
    if ((more = await scan(FIRST_WINDOW)) && hits.length < want) more = await scan(SCAN_WINDOW);
  } else {
    more = await scan(FIRST_WINDOW);
    if (more && hits.length < want) {
      // Less than a page in the first window: FTS5 may hold the rest, asked while the window's hits are shaped.
      let rest: ShapeRow[] | null;
      shapedHits = hits.length;
      [rest, found] = await Promise.all([probedRest(), shaped(hits.slice(0, shapedHits))]);
      if (rest !== null) return page(found.concat(rest));
      more = await scan(SCAN_WINDOW);
    }
  }
  const rows = found.concat(await shaped(hits.slice(shapedHits)));
  if (!more || hits.length >= want) return page(rows);
  // Past both windows and still short of a page: the term's hits are many but thin here; FTS5 walks them below.
  const rest = selectEvents(sel, { columns: SHAPE_SELECT, rowKey, cursor: below, limit: want - hits.length, match: { expression, terms } });
  return page(rows.concat(await shapeRows(db, rest)));
}

/** One hot event of the project by id, shaped for reads (model/event-lookup.ts), or null: looked for in each arm (arms.ts). */
export function hotEvent(env: Env, db: D1Database, projectId: string, id: string): Promise<ShapeRow | null> {
  return firstOverArms(env, projectId, db, async (arm) => (await shapeRows(arm, eventsByIdStatement(SHAPE_SELECT, [id], projectId)))[0] ?? null);
}

/** The chain position of one of the project's events, hot or archived; null when it has no such event. */
export async function eventSeq(env: Env, projectId: string, id: string): Promise<number | null> {
  const db = await eventsReadDb(env, projectId);
  const { sql, params } = eventsByIdStatement("e.seq", [id], projectId);
  const hot = await firstOverArms(env, projectId, db, (arm) => arm.prepare(sql).bind(...params).first<{ seq: number }>());
  return (hot ?? (await archivedEvent(env, db, projectId, id)))?.seq ?? null;
}
