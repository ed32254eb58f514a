import { decodeCursor, encodeCursor, type Cursor } from "../model/cursor";
import type { Selection } from "../model/event-query";
import { listEvents, listEventsOverArms, searchEvents, type Page } from "./event-read";
import { pageOverArms } from "./arms";
import type { ShapeRow } from "../model/event-shape";
import { scrubArchived, wasScrubbed } from "../model/pending-erasures";
import { matchesAll } from "../model/search-query";
import { matches } from "../storage/archive-export";
import { fieldNeedle, readSegment, type ArchivedRow, type Segment } from "../storage/archive-segments";
import { joinedSummary, SUMMARY_JOIN_COLUMNS, summaryJoin, type SummaryJoined } from "../storage/archive-summary";
import type { SummaryProbe } from "../storage/summary-probe";
import { segmentProbe } from "./segment-probe";
import { projectRowKey } from "../storage/shards";

/**
 * GET /v1/events and /v1/events/search across both tiers, one order and one cursor: every event of
 * the project, hot or archived, newest occurred_at first (then seq), so the
 * cursor stays `<occurred_at>~<seq>` and means the same whichever tier a row
 * is in, or moves to between two pages (the archiver seals while a client
 * pages: a position, unlike a tier, never changes). Each page merges the hot
 * page with the archived segments whose occurred_at range reaches into it
 * (archive_segments keeps each segment's earliest and latest occurred_at).
 *
 * At most SEGMENTS_PER_PAGE segments are read per page. When a sparse filter
 * would need more, the page ends early, at a position every row above which
 * was looked at (the newest occurred_at of the first segment not read): the
 * page may then hold fewer rows than asked, even none, with a nextCursor.
 */
export const SEGMENTS_PER_PAGE = 10;
/** Above every seq: a cursor `<t>~MAX_SEQ` resumes with every event at t still to come. */
const MAX_SEQ = 999_999_999_999_999;

/** Index rows (with summaries) per query: a summary is up to 11 KB, so a query answers a few MB at most. */
export const SUMMARIES_PER_QUERY = 400;
/** Segments read at once: each is an R2 read and ~1 MB unpacked. */
const READS_AT_ONCE = 16;

/**
 * Segments that may hold rows of the page, newest last_occurred_at first, after the keyset `after`.
 * With a probe, those whose summary proves no row matches are passed over unread.
 */
const SEGMENTS =
  `SELECT s.*, ${SUMMARY_JOIN_COLUMNS} FROM archive_segments s INDEXED BY archive_segments_occurred_idx ` +
  summaryJoin("?7") +
  "WHERE s.project_id = ?1 " +
  "AND (?2 IS NULL OR s.last_occurred_at >= ?2) AND (?3 IS NULL OR s.first_occurred_at <= ?3) " +
  "AND (?4 IS NULL OR s.last_occurred_at >= ?4) AND (?5 IS NULL OR s.first_occurred_at <= ?5) " +
  "AND (?8 IS NULL OR s.last_occurred_at < ?8 OR (s.last_occurred_at = ?8 AND s.first_seq < ?9)) " +
  "ORDER BY s.last_occurred_at DESC, s.first_seq DESC LIMIT ?6";

type Listed = Segment & SummaryJoined;

const listOrder = (a: ShapeRow, b: ShapeRow) => (a.occurred_at === b.occurred_at ? b.seq - a.seq : a.occurred_at < b.occurred_at ? 1 : -1);

/** `archived`: whether the project has archived events at all (hot_since, read beside the page); without, no segment is looked for. */
export function listHistory(env: Env, db: D1Database, sel: Selection, cursor: Cursor | null, limit: number, archived: Promise<boolean>): Promise<Page> {
  // An actor's events likely lie a page or so to each period: the first read takes the next period down too
  // (pageOverSpans' `reach`: the newest two, a week's current period one of them), where the page most likely
  // goes on. Other filters mostly fill their page in the first, where the next period's page would be read for
  // nothing (an organization, an action, an address, a target type: 1.2-1.4 times the floor at p50 reaching
  // two), or hold so few a period that it takes several more anyway (a target id: slower reaching two).
  // Measured: test/bench/README.md, "A rare actor's page". A filter whose last page needed more arms than that
  // (a rare action, a target id) reads as many at once (`filter`: pageOverArms' ReachMemory). Searches
  // choose their walk by whether the arms before ran out (searchEvents), so they read as before.
  const reach = sel.actorId !== null ? 2 : 1;
  // First pages apart: they start where deep ones never do, and need what they need every time.
  const filter = `list ${limit} ${cursor === null ? "first" : "after"} ${JSON.stringify(sel)}`;
  // An actor's walk is read in every arm at once where several are, merged as SQLite walks them (listEventsOverArms).
  const hot = projectRowKey(env, sel.projectId).then((rowKey) =>
    pageOverArms(env, sel.projectId, db, cursor, limit, (arm) => listEvents(arm, rowKey, sel, cursor, limit), sel, reach, filter, (shard, arms) =>
      listEventsOverArms(shard, arms, rowKey, sel, cursor, limit),
    ),
  );
  return historyPage(env, db, sel, [], cursor, limit, hot, () => true, archived, segmentProbe(env, sel));
}

/**
 * Search across both tiers: the hot part through the index (searchEvents), archived rows checked
 * with the same JavaScript matcher the hot search uses for common terms; a row an erasure covers
 * matches on what its scrub leaves (its action), as a hot one does.
 */
export function searchHistory(env: Env, db: D1Database, sel: Selection, terms: string[], cursor: Cursor | null, limit: number, archived: Promise<boolean>): Promise<Page> {
  const found = (r: ArchivedRow) => matchesAll(terms, [r.action, r.actor_name, r.actor_email, r.actor_id]);
  const hot = projectRowKey(env, sel.projectId).then((rowKey) => pageOverArms(env, sel.projectId, db, cursor, limit, (arm, ranOut) => searchEvents(arm, rowKey, sel, terms, cursor, limit, ranOut), sel));
  return historyPage(env, db, sel, terms, cursor, limit, hot, found, archived, segmentProbe(env, sel, terms));
}

async function historyPage(
  env: Env,
  db: D1Database,
  sel: Selection,
  terms: string[],
  cursor: Cursor | null,
  limit: number,
  hotPage: Promise<Page>,
  found: (r: ArchivedRow) => boolean,
  archived: Promise<boolean>,
  probe: SummaryProbe | null,
): Promise<Page> {
  const hot = await hotPage;
  if (!(await archived)) return hot;
  // Where the hot page stopped: archived rows below it belong to later pages (null: the hot rows ran out).
  const floor = hot.nextCursor ? decodeCursor(hot.nextCursor) : null;
  const page = await mergePage(env, db, sel, terms, cursor, floor, hot, limit, SEGMENTS_PER_PAGE, found, probe);
  if (page !== "stuck") return page;
  // Every segment the budget allowed overlaps the cursor's instant, so no row below the cursor is
  // known final: a page could only stand still. This one reads every segment that may match and
  // overlaps the cursor instead (clients that send one fixed occurred_at for many events, or a
  // backfill that spread each segment over months, make such runs), up to what one request may.
  const most = historySegmentReads(env);
  const whole = await mergePage(env, db, sel, terms, cursor, floor, hot, limit, most, found, probe);
  if (whole === "stuck") throw new TooManySegmentsError(most);
  return whole;
}

/** HISTORY_SEGMENT_READS (wrangler.toml), or DEFAULT_SEGMENT_READS when unset or not a whole number from 11 up. */
export const DEFAULT_SEGMENT_READS = 4000;
export function historySegmentReads(env: Pick<Env, "HISTORY_SEGMENT_READS">): number {
  const n = Number(env.HISTORY_SEGMENT_READS);
  return Number.isInteger(n) && n > SEGMENTS_PER_PAGE ? n : DEFAULT_SEGMENT_READS;
}

/**
 * A page that cannot be answered within one request: more than `most` archived segments that may
 * match overlap its cursor, and none of their rows is final until all are read. Each is an R2 read
 * (a subrequest), so reading them all would pass the platform's per-invocation limit.
 */
export class TooManySegmentsError extends Error {
  constructor(readonly most: number) {
    super(`the page would read more than ${most} archived segments`);
  }
}

async function mergePage(
  env: Env,
  db: D1Database,
  sel: Selection,
  terms: string[],
  cursor: Cursor | null,
  floor: Cursor | null,
  hot: Page,
  limit: number,
  budget: number,
  found: (r: ArchivedRow) => boolean,
  probe: SummaryProbe | null,
): Promise<Page | "stuck"> {
  const { toRead, frontier, none } = await segmentsToRead(db, sel, cursor, floor, budget, probe);
  if (none) return hot;
  // The newest occurred_at no unread segment can exceed: rows above it are final. At or above the cursor, none is.
  if (frontier !== null && cursor !== null && frontier >= cursor.occurredAt) return "stuck";
  const inHot = new Set(hot.rows.map((r) => r.seq));
  const keep = linesWorthParsing(sel, terms);
  // Only the newest limit + 1 archived rows can be on this page: memory stays flat however many segments are read.
  let archived: ShapeRow[] = [];
  for (let at = 0; at < toRead.length; at += READS_AT_ONCE) {
    const candidates: ArchivedRow[] = [];
    for (const rows of await Promise.all(toRead.slice(at, at + READS_AT_ONCE).map((segment) => readSegment(env, segment, keep)))) {
      for (const row of rows) {
        if (inHot.has(row.seq) || (frontier !== null && row.occurred_at <= frontier)) continue;
        if (matches(sel, row) && (!cursor || isBelow(row, cursor)) && (!floor || !isBelow(row, floor))) candidates.push(row);
      }
    }
    if (candidates.length === 0) continue;
    // As hot rows: shown scrubbed while an erasure is pending, left out where a filter matched only an erased field.
    const shown = (await scrubArchived(db, sel.projectId, candidates)).filter((r) => (!wasScrubbed(r) || (sel.actorId === null && sel.ipAddress === null)) && found(r));
    archived = [...archived, ...(shown as unknown as ShapeRow[])].sort(listOrder).slice(0, limit + 1);
  }
  // A row sealed between the hot read and the segment read is in both: once (the hot copy).
  const merged = [...hot.rows, ...archived].sort(listOrder);
  const final = frontier === null ? merged : merged.filter((r) => r.occurred_at > frontier);
  if (final.length > limit) {
    const rows = final.slice(0, limit);
    const last = rows[rows.length - 1];
    return { rows, nextCursor: encodeCursor(last.occurred_at, last.seq) };
  }
  if (frontier !== null) return { rows: final, nextCursor: encodeCursor(frontier, MAX_SEQ) };
  return { rows: final, nextCursor: hot.nextCursor };
}

/**
 * The segments a page reads (at most `budget` that may match, in list order of their newest
 * row) and the frontier: the newest occurred_at of the first one left unread (null: none left).
 * `none`: no segment reaches into the page at all.
 */
async function segmentsToRead(db: D1Database, sel: Selection, cursor: Cursor | null, floor: Cursor | null, budget: number, probe: SummaryProbe | null) {
  const toRead: Segment[] = [];
  const per = probe ? SUMMARIES_PER_QUERY : Math.min(budget + 1, SUMMARIES_PER_QUERY);
  let after = null as Listed | null;
  let seen = 0;
  for (;;) {
    const { results }: { results: Listed[] } = await db
      .prepare(SEGMENTS)
      .bind(sel.projectId, floor?.occurredAt ?? null, cursor?.occurredAt ?? null, sel.dateFrom, sel.dateTo, per, probe !== null ? 1 : 0, after?.last_occurred_at ?? null, after?.first_seq ?? null)
      .all<Listed>();
    seen += results.length;
    for (const segment of results) {
      if (probe && !(await probe.admits(joinedSummary(segment)))) continue;
      if (toRead.length === budget) return { toRead, frontier: segment.last_occurred_at, none: false };
      // Without its summary (up to 11 KB): a stuck page may hold thousands of these.
      const { m_version: _v, m_filter: _f, m_mac: _m, ...plain } = segment;
      toRead.push(plain);
    }
    if (results.length < per) return { toRead, frontier: null, none: seen === 0 };
    after = results[results.length - 1];
  }
}

const ASCII = /^[\x00-\x7f]*$/;

/**
 * Which stored lines of a segment are worth parsing for this page, or undefined for all: a line
 * must hold each equality filter's value as its field (fieldNeedle), and, for a search, each term
 * in its lowercased text. A term is folded (search-query.ts); an ASCII line's words fold by
 * lowercasing alone, so the test is only made on ASCII lines (any other line is parsed).
 */
function linesWorthParsing(sel: Selection, terms: string[]): ((line: string) => boolean) | undefined {
  const needles = [
    ...(sel.actorId !== null ? [fieldNeedle("actor_id", sel.actorId)] : []),
    ...(sel.organization !== null ? [fieldNeedle("organization", sel.organization)] : []),
    ...(sel.ipAddress !== null ? [fieldNeedle("ip_address", sel.ipAddress)] : []),
  ];
  if (needles.length === 0 && terms.length === 0) return undefined;
  return (line) => {
    if (!needles.every((n) => line.includes(n))) return false;
    if (terms.length === 0 || !ASCII.test(line)) return true;
    const lower = line.toLowerCase();
    return terms.every((t) => lower.includes(t));
  };
}

/** Strictly after (older than) position c in list order: what a page from cursor c may hold. */
function isBelow(r: { occurred_at: string; seq: number }, c: Cursor): boolean {
  return r.occurred_at < c.occurredAt || (r.occurred_at === c.occurredAt && (c.seq === null ? false : r.seq < c.seq));
}
