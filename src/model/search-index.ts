import { KEY_SPAN, keyBase, OLDER_TOP, rowIdOf, rowIdsOf, rowsBySeq, seqEdge, seqsOn, type KnownKey } from "./row-keys.ts";
import { ftsExpression, words } from "./search-query.ts";

/**
 * The full-text index, scoped per project (migrations/0004_search_per_project.sql).
 *
 * One FTS5 index over all projects let one project's common terms make every
 * other project's search read their doclists. So every indexed word carries
 * its project's tag (`<tag><word>`), and a search asks only for `"<tag><term>"*`:
 * it reads its own project's terms and no one else's. The text is made here,
 * with the same words() the JavaScript matcher uses, so the table is
 * contentless and its tokenizer (ascii) only splits at the spaces between
 * words: FTS5 and matchesAll() see exactly the same words.
 *
 * An entry is one group of up to SEARCH_GROUP events, not one event
 * (migrations/0031_search_groups.sql): D1 bills each entry as a row
 * written, at insert and again at delete, whatever its text. A commit's
 * events go on in the group the project's last commit left open, so commits
 * of one event share an entry too (commitInsertSql, closedGroupsStatement).
 * Each event's words carry the tag of its slot in the group (slotTag: the
 * project's tag with its last character standing for the slot), and a search
 * asks for all its terms within one slot (searchExpression), so an entry
 * matches only when one of its events holds every term, as a per-event entry did. Each event
 * also keeps its own words (search_words), so that SQL finds which events of
 * a matching group they are (event-query.ts). Rows with search_words NULL
 * (written before migration 0031, or by older code) have an entry each, under
 * the project's own tag, until the daily cron gives them their words and an
 * entry as a group of one (reindexBacklog).
 *
 * Who writes it:
 * - ingest: insertEventsStatements() stores each event's words, numbers its
 *   row for its group (commitInsertSql: a keyed project's row at its key, in
 *   its block of 16 seqs, row-keys.ts) and appends closedGroupsStatement(),
 *   so the entries of the groups it closed commit in the same D1 batch as the
 *   events; the project's open group has none until then, and a search reads
 *   its events among the project's newest (inOpenGroup);
 * - shard copies and restores: the same columns and groupIndexStatement()
 *   (storage/shard-copy.ts), so a moved or restored project keeps an entry per
 *   group, and its rows from before 0031 get their words on the way;
 * - delete (retention, shard moves): a trigger drops a group's entry with the
 *   last of its events;
 * - erasure: the scrub rewrites the rows' words, a trigger drops their groups'
 *   entries, and groupReindexStatement() (same batch) makes them again from
 *   the stored words; compactSearchIndex() then makes the erased words leave
 *   the index's data pages (a delete only hides them until a merge);
 * - rows written before this index existed, or before search groups: the
 *   daily cron's reindexBacklog().
 */
export const SEARCH_TABLE = "events_search";

/** Base-36 characters of a tag; the table's prefix indexes are built for tag + 2 and tag + 3 characters. */
export const TAG_LENGTH = 6;
const TAG_SPACE = 36 ** TAG_LENGTH;

/**
 * A project's tag: FNV-1a of its id, 6 base-36 characters. Two projects with
 * the same tag only share doclists (every read still filters on project_id).
 */
export function searchTag(projectId: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < projectId.length; i++) {
    hash ^= projectId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return ((hash >>> 0) % TAG_SPACE).toString(36).padStart(TAG_LENGTH, "0");
}

export interface SearchableFields {
  action: string;
  actor_name: string | null;
  actor_email: string | null;
  actor_id: string | null;
}

/** One event's distinct searchable words, as stored in its search_words. */
export function searchWords(row: SearchableFields): string[] {
  const all = new Set<string>();
  for (const text of [row.action, row.actor_name, row.actor_email, row.actor_id]) {
    if (text) for (const w of words(text)) all.add(w);
  }
  return [...all];
}

/** The indexed text of one event: its distinct words, each behind the project's tag. */
export function indexText(tag: string, row: SearchableFields): string {
  return searchWords(row).map((w) => tag + w).join(" ");
}

/**
 * Events per index entry. Each entry is a billed row at insert and at delete;
 * a search reads up to this many events per matching entry (one b-tree page
 * or two of consecutive rows) and keeps those holding every term.
 */
export const SEARCH_GROUP = 16;

/** Where each row of a commit sits in its search group: 0 starts one. Rows are in insert order, per project. */
export function searchLeads(rows: ReadonlyArray<{ project_id: string }>): number[] {
  const leads: number[] = [];
  for (let i = 0; i < rows.length; i++) {
    const prev = i > 0 ? leads[i - 1] : -1;
    leads.push(i > 0 && rows[i - 1].project_id === rows[i].project_id && prev + 1 < SEARCH_GROUP ? prev + 1 : 0);
  }
  return leads;
}

/** SQL: a keyed project's row's search lead from its seq (SQL): its block of SEARCH_GROUP seqs is its group (row-keys.ts). */
export function keyedLead(seq: string): string {
  return `(${seq} - 1) % ${SEARCH_GROUP}`;
}

/** One character per slot of a group: SEARCH_GROUP of them. */
const SLOTS = "0123456789abcdef";

/** What a project's slot tags share: its tag less the last character, which stands for the slot. */
function slotBase(tag: string): string {
  return tag.slice(0, TAG_LENGTH - 1);
}

/** The tag of the words of a group's slot-th event: the project's tag with its last character standing for the slot. */
export function slotTag(tag: string, slot: number): string {
  return slotBase(tag) + SLOTS[slot];
}

/**
 * The MATCH expression of a search: every term within one event, that is
 * within one entry of the project's own (a row indexed alone) or within one
 * slot of a group. Two projects whose tags share the first five characters
 * share doclists, as two with the same tag do: every read filters on project_id.
 */
export function searchExpression(terms: string[], projectId: string): string {
  const tag = searchTag(projectId);
  const tags = new Set([tag, ...Array.from(SLOTS, (_, slot) => slotTag(tag, slot))]);
  return [...tags].map((t) => `(${ftsExpression(terms, t)})`).join(" OR ");
}

/** SQL: whether row `e` (an events alias) belongs to the group whose entry is `key` (a rowid expression). */
export function inGroup(e: string, key: string): string {
  return `${e}.row_id BETWEEN ${key} AND ${key} + ${SEARCH_GROUP - 1} AND ${e}.row_id - ${e}.search_lead = ${key}`;
}

/** The slot's tag of a row, in SQL: ?1 is the project's tag less its last character. */
const ROW_TAG = `(?1 || substr('${SLOTS}', e.search_lead + 1, 1))`;
/** The tagged text of a group, from its rows' stored words (' ' separates words, so the tag goes before each). */
const GROUP_TEXT = `group_concat(${ROW_TAG} || replace(e.search_words, ' ', ' ' || ${ROW_TAG}), ' ')`;

/**
 * The entries of a copy's or a restore's groups, made from the words its rows
 * store: one statement for the project's rows of seqs [first, last], after
 * their inserts, in the same batch. A keyed project's groups are blocks of
 * seqs (row-keys.ts), which a batch may start or end inside: each block it
 * touches gets its entry from all the block's rows there, replacing the one
 * an earlier batch made (INSERT OR REPLACE: FTS5's contentless_delete table
 * adds a plain INSERT's words to an entry already there).
 */
export function groupIndexStatement(db: D1Database, projectId: string, first: number, last: number): D1PreparedStatement {
  const keyed = `${keyBase("?2")} IS NOT NULL`;
  const lo = `?3 - CASE WHEN ${keyed} THEN ${keyedLead("?3")} ELSE 0 END`;
  const hi = `?4 + CASE WHEN ${keyed} THEN ${SEARCH_GROUP - 1} - ${keyedLead("?4")} ELSE 0 END`;
  return db
    .prepare(
      `INSERT OR REPLACE INTO ${SEARCH_TABLE} (rowid, words) SELECT e.row_id - e.search_lead, ${GROUP_TEXT} ` +
        `FROM ${rowsBySeq({ project: "?2", lo, hi, where: "e.search_words IS NOT NULL AND e.search_words <> ''" })} e ` +
        "GROUP BY e.row_id - e.search_lead",
    )
    .bind(slotBase(searchTag(projectId)), projectId, first, last);
}

/**
 * A commit's groups go on across commits: a commit of one event wrote an
 * entry of its own, a billed row at insert and again at delete, where sixteen
 * such commits now share one. A group's entry is written once, by the commit
 * that closes it: the one that fills it, or the project's next one when that
 * cannot go on in it. Until then the group is open and a search finds its
 * events by reading the project's newest rows (inOpenGroup).
 *
 * A group's events must be at row_id key..key+15 (inGroup), yet other
 * projects' commits come in between. So a commit numbers its rows itself: a
 * new group takes the next 16 row_ids above every row of the shard and puts
 * its first event at the top one (lead 15), so every later insert, whoever
 * makes it, is numbered above the block (SQLite gives max(row_id) + 1); the
 * group's later events take key, key + 1, ... (leads 0 to 14). A commit goes
 * on in the project's open group when its newest row (seq ?3 - 1) is in one:
 * no entry, not full (lead 14 is the 16th event), its top row still there
 * and every place after its newest row free. So no insert can ever meet a
 * row_id taken: a block is above every row when it is made, nothing else is
 * numbered inside it while its top row stands, and a group whose places are
 * not all free (groups written before this scheme, numbered consecutively, or
 * a block an insert reached after its top row went) is closed, not continued.
 */
const OPEN_GROUP =
  "SELECT p.search_lead AS lead, p.row_id - p.search_lead AS base FROM events p " +
  `WHERE p.row_id = ${rowIdOf("?2", "?3 - 1")} AND p.project_id = ?2 AND p.search_lead <> ${SEARCH_GROUP - 2} AND p.search_words IS NOT NULL ` +
  `AND EXISTS (SELECT 1 FROM events t WHERE t.row_id = p.row_id - p.search_lead + ${SEARCH_GROUP - 1} AND t.project_id = ?2) ` +
  `AND NOT EXISTS (SELECT 1 FROM events s WHERE s.row_id BETWEEN CASE WHEN p.search_lead = ${SEARCH_GROUP - 1} THEN p.row_id - ${SEARCH_GROUP - 1} ELSE p.row_id + 1 END ` +
  `AND p.row_id - p.search_lead + ${SEARCH_GROUP - 2}) ` +
  `AND NOT EXISTS (SELECT 1 FROM ${SEARCH_TABLE} f WHERE f.rowid = p.row_id - p.search_lead)`;

/**
 * The INSERT of a commit's rows: JSON ?1 (arrays of `columns`' values, in seq
 * order), all of project ?2, the first with seq ?3; row_id and search_lead
 * are made here. `free`: the places left in the open group (0 with none);
 * the rows past them fill new blocks above `top`, the shard's highest row_id
 * before this statement (materialized first: the rows inserted do not change it).
 */
export function commitInsertSql(columns: readonly string[]): string {
  const last = SEARCH_GROUP - 1;
  const seq = `(x.v ->> ${columns.indexOf("seq")})`;
  // A keyed project's row (row-keys.ts) is at its key's row id for its seq, and its group is its block of 16 seqs.
  const values = columns.map((c, i) => (c === "search_lead" ? `CASE WHEN x.keyed IS NULL THEN x.slead ELSE ${keyedLead(seq)} END` : `x.v ->> ${i}`)).join(", ");
  return (
    `WITH o AS MATERIALIZED (${OPEN_GROUP}), ` +
    `g AS MATERIALIZED (SELECT ${keyBase("?2")} AS keyed, (SELECT lead FROM o) AS lead, (SELECT base FROM o) AS base, ` +
    `coalesce((SELECT CASE WHEN lead = ${last} THEN ${last} ELSE ${last - 1} - lead END FROM o), 0) AS free, ` +
    // The highest older row id: keyed ones (row-keys.ts) are each project's own, far above.
    `${OLDER_TOP} AS top), ` +
    "x AS (SELECT j.key AS i, j.value AS v, g.keyed, g.free, g.base, g.top, " +
    `CASE WHEN j.key < g.free THEN (CASE WHEN g.lead = ${last} THEN j.key ELSE g.lead + 1 + j.key END) ` +
    `WHEN (j.key - g.free) % ${SEARCH_GROUP} = 0 THEN ${last} ELSE (j.key - g.free) % ${SEARCH_GROUP} - 1 END AS slead ` +
    "FROM json_each(?1) j, g) " +
    `INSERT INTO events (row_id, ${columns.join(", ")}) ` +
    `SELECT CASE WHEN x.keyed IS NOT NULL THEN x.keyed + ${seq} WHEN x.i < x.free THEN x.base + x.slead ` +
    `ELSE x.top + 1 + ${SEARCH_GROUP} * ((x.i - x.free) / ${SEARCH_GROUP}) + x.slead END, ${values} ` +
    "FROM x ORDER BY x.i"
  );
}

/**
 * After a commit's rows (project ?2, seqs [first, last]): the entries of the
 * groups it closed, made from their rows' stored words. That is every group
 * among its rows and the open group before them, except the group of its
 * last row when that one is not full (its last row's lead is not 14, or for
 * a keyed project's block of seqs not 15: it stays open). A group whose entry
 * is there already (an erasure may have made it) is left as it is, unless it
 * is a keyed project's block, which this commit's rows joined: its entry is
 * made again with them.
 */
export function closedGroupsStatement(db: D1Database, projectId: string, first: number, last: number): D1PreparedStatement {
  return db
    .prepare(
      missingEntriesSql(
        `${rowsBySeq({ project: "?2", lo: "?3", hi: "?4", where: "e.search_words IS NOT NULL" })} x`,
        `g.k IS NOT (SELECT y.row_id - y.search_lead FROM events y WHERE y.row_id = ${rowIdOf("?2", "?4")} ` +
          `AND y.search_lead <> CASE WHEN y.row_id < ${KEY_SPAN} THEN ${SEARCH_GROUP - 2} ELSE ${SEARCH_GROUP - 1} END)`,
        // A keyed project's block whose entry an erasure or a restore made before it filled: this commit's rows
        // belong in it too (an older group with an entry is never continued: commitInsertSql). Only a block that
        // holds some of them (?3 is the commit's first seq less 15): the block before is left as it is.
        `g.k >= ${KEY_SPAN} AND g.k >= (SELECT f.row_id - f.search_lead FROM events f WHERE f.row_id = ${rowIdOf("?2", `?3 + ${SEARCH_GROUP - 1}`)})`,
      ),
    )
    .bind(slotBase(searchTag(projectId)), projectId, first - (SEARCH_GROUP - 1), last);
}

/**
 * An INSERT of the entries, made from their rows' stored words, of the groups
 * of project ?2's rows `rows` (a table aliased x; ?1: the project's slot tag base)
 * and `keep` (on the group's key g.k), leaving out a group whose entry is
 * there already, and a group whose every row's words are empty (its text is
 * NULL), as at ingest. With `refresh`, the groups among them it names whose
 * entry is there are made again from all their rows (INSERT OR REPLACE).
 */
function missingEntriesSql(rows: string, keep = "1", refresh?: string): string {
  const missing = `${keep} AND NOT EXISTS (SELECT 1 FROM ${SEARCH_TABLE} s WHERE s.rowid = g.k)`;
  return (
    `INSERT${refresh ? " OR REPLACE" : ""} INTO ${SEARCH_TABLE} (rowid, words) SELECT k, text FROM (SELECT g.k, (SELECT ${GROUP_TEXT} FROM events e ` +
    `WHERE ${inGroup("e", "g.k")} AND e.search_words <> '') AS text ` +
    `FROM (SELECT DISTINCT x.row_id - x.search_lead AS k FROM ${rows}) g ` +
    `WHERE ${refresh ? `(${missing}) OR (${refresh} AND EXISTS (SELECT 1 FROM ${SEARCH_TABLE} s WHERE s.rowid = g.k))` : missing}) WHERE text IS NOT NULL`
  );
}

/**
 * SQL: whether row `e`, one of its project's newest rows (newestRows), is in
 * its project's open group, whose events no entry holds yet: with stored
 * words and no entry for its group.
 */
export function inOpenGroup(e: string): string {
  return `${e}.search_words IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ${SEARCH_TABLE} o WHERE o.rowid = ${e}.row_id - ${e}.search_lead)`;
}

/** SQL: a table of project `project`'s SEARCH_GROUP newest rows (an open group has at most 15, the newest), for inOpenGroup. */
export function newestRows(project: string): string {
  return rowsBySeq({ project, lo: `${seqEdge(project, true)} - ${SEARCH_GROUP - 1}`, hi: null });
}

/**
 * For erasure, right after the scrub in the same batch: the entries of the
 * groups holding these seqs (which the update trigger dropped), made again
 * from every row's stored words, the scrubbed rows' included. A group whose
 * entry is already there is left as it is, so a repeat adds nothing.
 */
export function groupReindexStatement(db: D1Database, projectId: string, seqs: number[]): D1PreparedStatement {
  return db
    .prepare(missingEntriesSql(`(SELECT * FROM events e WHERE e.row_id IN (${rowIdsOf("?2", "?3")})) x`))
    .bind(slotBase(searchTag(projectId)), projectId, JSON.stringify(seqs));
}

/**
 * SQL: whether row `r` (of `events`) needs its group's entry in the index: it has words, and its group is
 * closed, which a row SEARCH_GROUP seqs after it shows (the open group is among the project's 16 newest rows).
 * Rows with search_words NULL (before migration 0031) have entries of their own, which the daily cron's
 * reindexBacklog may still be making, so they are not asked about. `project`: r's project (a bound parameter
 * where there is one, so that SQLite looks its key up once); `key`, its layout when the caller knows it.
 */
export function needsGroupEntry(r: string, project = `${r}.project_id`, key?: KnownKey): string {
  const later = `${r}.seq + ${SEARCH_GROUP}`;
  return `${r}.search_words <> '' AND EXISTS (SELECT 1 FROM events n WHERE ${key === undefined ? `n.row_id = ${rowIdOf(project, later)}` : seqsOn("n", key, project, later)})`;
}

/** SQL: whether the index holds row `r`'s group entry (the contentless table's docsize row, one per entry). */
export function hasGroupEntry(r: string): string {
  return `EXISTS (SELECT 1 FROM ${SEARCH_TABLE}_docsize f WHERE f.id = ${r}.row_id - ${r}.search_lead)`;
}

/**
 * For an operator's repair (projects:reindex), its values written in: the entries, made from their rows'
 * stored words, of the closed groups of project `projectId`'s rows of seqs [from, to] that the index lacks.
 */
export function missingGroupsSql(projectId: string, from: number, to: number): string {
  const text = (value: string) => `'${value.replaceAll("'", "''")}'`;
  return missingEntriesSql(`${rowsBySeq({ project: "?2", lo: String(from), hi: String(to), where: `e.search_words IS NOT NULL AND ${needsGroupEntry("e", "?2")}` })} x`)
    .replaceAll("?1", text(slotBase(searchTag(projectId))))
    .replaceAll("?2", text(projectId));
}

/** D1 caps one bound value at 2 MB; keep each statement's JSON well under it. */
const MAX_PARAM_BYTES = 1_000_000;

/** JSON arrays of the entries, each under MAX_PARAM_BYTES: one statement each. */
function chunks(entries: string[]): string[] {
  const out: string[] = [];
  let chunk: string[] = [];
  let bytes = 0;
  for (const json of entries) {
    if (chunk.length > 0 && bytes + json.length > MAX_PARAM_BYTES) {
      out.push(`[${chunk.join(",")}]`);
      chunk = [];
      bytes = 0;
    }
    chunk.push(json);
    bytes += json.length;
  }
  if (chunk.length > 0) out.push(`[${chunk.join(",")}]`);
  return out;
}

/**
 * Gives rows their words (JSON ?1: arrays of row_id, words, the four fields the words were made from, the
 * entry's text), only where the row still holds those fields and has none: a row erased meanwhile keeps its
 * scrubbed words. search_words is in events_search_after_update, so each row's entry of its own goes with it.
 */
const GIVE_WORDS =
  "UPDATE events SET search_words = j.value ->> 1 FROM json_each(?1) j WHERE events.row_id = j.value ->> 0 " +
  "AND events.search_words IS NULL AND events.search_lead = 0 AND events.action IS j.value ->> 2 " +
  "AND events.actor_name IS j.value ->> 3 AND events.actor_email IS j.value ->> 4 AND events.actor_id IS j.value ->> 5";
/** Then each such row's entry, as a group of one: its words under its slot's tag (slot 0). */
const GROUP_OF_ONE =
  `INSERT INTO ${SEARCH_TABLE} (rowid, words) SELECT e.row_id, j.value ->> 6 FROM json_each(?1) j ` +
  "CROSS JOIN events e ON e.row_id = j.value ->> 0 AND e.search_lead = 0 AND e.search_words = j.value ->> 1 " +
  `WHERE j.value ->> 1 <> '' AND NOT EXISTS (SELECT 1 FROM ${SEARCH_TABLE} s WHERE s.rowid = e.row_id)`;

function wordsStatements(db: D1Database, rows: ReadonlyArray<SearchableFields & { row_id: number; project_id: string }>) {
  const entries = rows.map((r) =>
    JSON.stringify([r.row_id, searchWords(r).join(" "), r.action, r.actor_name, r.actor_email, r.actor_id, indexText(slotTag(searchTag(r.project_id), 0), r)]),
  );
  return chunks(entries).flatMap((json) => [db.prepare(GIVE_WORDS).bind(json), db.prepare(GROUP_OF_ONE).bind(json)]);
}

/** The FTS5 structure record (rowid 10 of the data table): it changes whenever a merge does any work. */
const STRUCTURE = `SELECT hex(block) AS s FROM ${SEARCH_TABLE}_data WHERE id = 10`;

/**
 * For erasure, after the scrub and groupReindexStatement(): merges the index until every
 * segment is rewritten, so deleted entries (tombstones) and their words leave
 * the data pages. Done in steps of `pages` pages ('merge' with a negative
 * count is an incremental 'optimize'), so other queries of the shard run
 * between steps instead of waiting for one long rewrite (measured: 6 steps
 * of at most 94 ms at 1M events). Stops when a step changes nothing. Appends
 * meanwhile add segments and restart the rewrite, so the work is capped at
 * twice the index's size: done is false when the cap ended it (call again).
 */
export async function compactSearchIndex(db: D1Database, pages = 1000, stepCap = Number.POSITIVE_INFINITY): Promise<{ steps: number; done: boolean }> {
  const size = await db.prepare(`SELECT count(*) AS n FROM ${SEARCH_TABLE}_data`).first<{ n: number }>();
  // stepCap: an erasure job's step stops there, well inside one invocation's queries (two per step), and calls again.
  const maxSteps = Math.min(Math.ceil((2 * size!.n) / pages) + 2, stepCap);
  const merge = db.prepare(`INSERT INTO ${SEARCH_TABLE} (${SEARCH_TABLE}, rank) VALUES ('merge', ?)`).bind(-pages);
  const structure = db.prepare(STRUCTURE);
  let before = (await structure.first<{ s: string }>())?.s ?? null;
  for (let steps = 1; steps <= maxSteps; steps++) {
    const [, read] = await db.batch<{ s: string }>([merge, structure]);
    const after = read.results[0]?.s ?? null;
    if (after === before) return { steps, done: true };
    before = after;
  }
  return { steps: maxSteps, done: false };
}

interface BacklogRow extends SearchableFields {
  row_id: number;
  project_id: string;
}

/** Rows the backlog looks at in one step at most, whatever it finds: each is read for its words (no index holds them). */
const BACKLOG_SCAN = 100_000;

/**
 * For the daily cron: gives up to `limit` events without stored words
 * (search_words NULL: written before migration 0031, or before the
 * per-project index, or by older code) their words and an entry of their
 * own as a group of one (lead 0, their words under slot 0's tag), in place
 * of the entry under the project's tag that older code gave each, or none.
 * A search then checks them against their own words as it does every other
 * row, so an entry a database writer plants at such a row's id no longer
 * lists it under words it lacks; and verify asks that a closed group's
 * entry is there. Once, at three rows written for such an event (its
 * update, its old entry's delete, the new entry). search_backlog holds the
 * row_id range still to look at: [next_row_id, last_row_id]; last_row_id
 * is fixed at the first call (max(row_id) then), so rows written by older
 * code between the migration and the deploy are covered too; a step reads
 * at most BACKLOG_SCAN rows of it. Cheap once done: one read of the state row.
 */
export async function reindexBacklog(db: D1Database, limit = 2000): Promise<{ indexed: number; done: boolean }> {
  const state = await db.prepare("SELECT next_row_id AS next, last_row_id AS last FROM search_backlog WHERE id = 1")
    .first<{ next: number; last: number | null }>();
  if (!state) return { indexed: 0, done: true };
  let last = state.last;
  if (last === null) {
    // Keyed rows (row-keys.ts) are written with their words: only the older row ids need looking at.
    last = (await db.prepare(`SELECT coalesce(max(row_id), 0) AS m FROM events WHERE row_id < ${KEY_SPAN}`).first<{ m: number }>())!.m;
    await db.prepare("UPDATE search_backlog SET last_row_id = ? WHERE id = 1 AND last_row_id IS NULL").bind(last).run();
  }
  if (state.next > last) return { indexed: 0, done: true };
  const through = Math.min(last, state.next + BACKLOG_SCAN - 1);
  const { results } = await db
    .prepare(
      "SELECT e.row_id, e.project_id, e.action, e.actor_name, e.actor_email, e.actor_id " +
        "FROM events e WHERE e.row_id BETWEEN ? AND ? AND e.search_words IS NULL AND e.search_lead = 0 ORDER BY e.row_id LIMIT ?",
    )
    .bind(state.next, through, limit)
    .all<BacklogRow>();
  const next = results.length < limit ? through + 1 : results[results.length - 1].row_id + 1;
  await db.batch([...wordsStatements(db, results), db.prepare("UPDATE search_backlog SET next_row_id = ? WHERE id = 1").bind(next)]);
  return { indexed: results.length, done: next > last };
}
