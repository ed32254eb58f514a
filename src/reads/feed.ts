import { hmacHex, timingSafeEqual } from "../lib/crypto";
import { PENDING_AT, SHAPE_SELECT, shapeRowOf, type ShapeRow } from "../model/event-shape";
import type { Selection } from "../model/event-query";
import { scrubArchived, scrubByColumn } from "../model/pending-erasures";
import { loadKeyring } from "../sealing/signing-keys";
import { matches } from "../storage/archive-export";
import { archivedRows, readSegment, type Segment } from "../storage/archive-segments";
import { rowsBySeq, seqEdge } from "../model/row-keys";
import { mergeBySeq } from "../model/periods";
import { inProjectArms } from "../storage/shards";

/**
 * The pull feed (GET /v1/events/feed): a project's events in chain order,
 * oldest first, for SIEM collectors that poll. Its cursor is a seq, signed
 * and bound to the project, so a collector that saves it resumes exactly
 * where it stopped: every event once, in order, whatever it was backdated
 * to, hot or archived. A page reads at most SCAN seqs past the cursor and
 * moves the cursor past all of them, matching or not, so a selective filter
 * costs bounded reads per request; seqs with no event are reported as gaps:
 * `retention` when a signed retention record covers them, `missing`
 * otherwise (verify says why).
 */

export const MAX_FEED_LIMIT = 1000;
/** Seqs one request reads at most: a page of MAX_FEED_LIMIT unfiltered events. */
const SCAN = 1000;
const CURSOR_PREFIX = "wf1";

function cursorText(projectId: string, seq: number): string {
  return `witness.feed.cursor.v1\n${projectId}\n${seq}`;
}

/** `wf1.<seq>.<key version>.<HMAC>`: the HMAC binds it to the project, with the chain's signing keys. */
export async function encodeFeedCursor(env: Env, projectId: string, seq: number): Promise<string> {
  const ring = await loadKeyring(env.SIGNING_KEYS);
  const mac = await hmacHex(ring.keys.get(ring.newest)!, cursorText(projectId, seq));
  return `${CURSOR_PREFIX}.${seq}.${ring.newest}.${mac.slice(0, 32)}`;
}

/** The seq a cursor points past, or why it cannot be used (another project's, altered, or another format). */
export async function decodeFeedCursor(env: Env, projectId: string, cursor: string): Promise<number | string> {
  const match = /^wf1\.(0|[1-9]\d{0,15})\.(\d{1,6})\.([0-9a-f]{32})$/.exec(cursor);
  if (!match) return "is not a cursor this feed gave (nextCursor of an earlier answer)";
  const ring = await loadKeyring(env.SIGNING_KEYS);
  const key = ring.keys.get(Number(match[2]));
  if (!key) return "was signed with a key this deployment no longer holds";
  const seq = Number(match[1]);
  const mac = await hmacHex(key, cursorText(projectId, seq));
  return timingSafeEqual(mac.slice(0, 32), match[3]) ? seq : "was altered, or belongs to another project";
}

export interface FeedGap {
  first_seq: number;
  last_seq: number;
  /** retention: purged under a signed retention record; missing: no record covers it (GET /v1/events/verify says why). */
  kind: "retention" | "missing";
}

export interface FeedPage {
  events: string[];
  gaps: FeedGap[];
  /** The last seq this page covered: the next page starts after it. */
  through: number;
  /** Nothing was left to read past `through` when the page was read. */
  atHead: boolean;
}

/** SQL: the newest seq in any tier, or purged (a retention record's end); in an arm, the newest of its rows' and the others'. */
const HEAD_SQL =
  `SELECT max(v) AS head FROM (SELECT ${seqEdge("?1", true)} AS v UNION ALL ` +
  "SELECT max(last_seq) FROM archive_segments WHERE project_id = ?1 UNION ALL SELECT max(last_seq) FROM retention_gaps WHERE project_id = ?1)";

/** One page after `after`: at most `limit` matching events among the next SCAN seqs. */
export async function readFeed(env: Env, db: D1Database, sel: Selection | null, projectId: string, after: number, limit: number, write: (row: ShapeRow) => string): Promise<FeedPage> {
  // The head first: every seq up to it was committed before the rows are read, so a seq up to it that
  // the rows lack is a hole (purged, or deleted), never an event still being written.
  const heads = await inProjectArms(env, projectId, db, (arm) => arm.prepare(HEAD_SQL).bind(projectId).first<{ head: number | null }>());
  const head = Math.max(0, ...heads.map((r) => r?.head ?? 0));
  // Each arm's rows of the scan in seq order, merged: an event is in one arm.
  const lists = await inProjectArms(env, projectId, db, async (arm) => {
    const cells = await arm.prepare(`SELECT ${SHAPE_SELECT} FROM ${rowsBySeq({ project: "?1", lo: "?2 + 1", hi: "?3" })} e`).bind(projectId, after, after + SCAN).raw();
    // An erasure still being applied is applied here too (src/model/pending-erasures.ts).
    return scrubByColumn(cells.map(shapeRowOf), cells, PENDING_AT);
  });
  let rows: ShapeRow[] = mergeBySeq(lists);
  // Archived seqs are always a prefix: look there only when the hot rows do not start right after the cursor.
  if (rows.length === 0 || rows[0].seq > after + 1) {
    const before = rows.length > 0 ? rows[0].seq : after + SCAN + 1;
    const cold = await scrubArchived(db, projectId, await archivedRows(env, db, projectId, after, SCAN, before));
    if (cold.length > 0) rows = [...(cold as ShapeRow[]), ...rows];
  }
  const events: string[] = [];
  let through = after;
  let full = false;
  for (const row of rows) {
    const wanted = sel === null ? false : matches(sel, row as Parameters<typeof matches>[1]);
    if (wanted && events.length >= limit) {
      full = true;
      break;
    }
    if (wanted) events.push(write(row));
    through = row.seq;
  }
  // Every row of the scan was taken: the seqs after the last one, up to the head (within the scan), hold no event.
  if (!full) through = Math.max(through, Math.min(head, after + SCAN));
  const gaps = await gapsIn(db, projectId, after, through, rows);
  return { events, gaps, through, atHead: !full && through >= head };
}

/** The holes in (after, through] among `rows`, each named by the retention records that cover it. */
async function gapsIn(db: D1Database, projectId: string, after: number, through: number, rows: ShapeRow[]): Promise<FeedGap[]> {
  const holes: Array<[number, number]> = [];
  let expected = after + 1;
  for (const row of rows) {
    if (row.seq > through) break;
    if (row.seq > expected) holes.push([expected, row.seq - 1]);
    expected = row.seq + 1;
  }
  if (through >= expected) holes.push([expected, through]);
  if (holes.length === 0) return [];
  const { results: records } = await db
    .prepare("SELECT first_seq, last_seq FROM retention_gaps WHERE project_id = ? AND last_seq >= ? AND first_seq <= ? ORDER BY first_seq")
    .bind(projectId, after + 1, through)
    .all<{ first_seq: number; last_seq: number }>();
  const gaps: FeedGap[] = [];
  for (const [first, last] of holes) {
    let at = first;
    for (const r of records) {
      if (r.last_seq < at || r.first_seq > last) continue;
      if (r.first_seq > at) gaps.push({ first_seq: at, last_seq: r.first_seq - 1, kind: "missing" });
      gaps.push({ first_seq: Math.max(at, r.first_seq), last_seq: Math.min(last, r.last_seq), kind: "retention" });
      at = Math.min(last, r.last_seq) + 1;
    }
    if (at <= last) gaps.push({ first_seq: at, last_seq: last, kind: "missing" });
  }
  return gaps;
}

/**
 * The cursor `since` starts at: just before the first event committed at or
 * after that time. Commits are in seq order, so received_at never decreases
 * along the chain: a binary search over the hot seqs, or the archive's index
 * and one segment when the time lies before the hot window.
 */
export async function seqBefore(env: Env, db: D1Database, projectId: string, since: string): Promise<number> {
  // The project's first and last hot seqs, each arm's edges combined.
  const edges = await inProjectArms(env, projectId, db, (arm) =>
    arm.prepare(`SELECT ${seqEdge("?1", false)} AS lo, ${seqEdge("?1", true)} AS hi`).bind(projectId).first<{ lo: number | null; hi: number | null }>(),
  );
  const los = edges.flatMap((e) => (e?.lo == null ? [] : [e.lo]));
  const his = edges.flatMap((e) => (e?.hi == null ? [] : [e.hi]));
  const bounds = { lo: los.length > 0 ? Math.min(...los) : null, hi: his.length > 0 ? Math.max(...his) : null };
  // The first hot row at or after seq, in whichever arm it is.
  const receivedAt = async (seq: number) => {
    const firsts = await inProjectArms(env, projectId, db, async (arm) => {
      const row = await arm
        .prepare(`SELECT seq, received_at FROM ${rowsBySeq({ project: "?1", lo: "?2", hi: null, limit: "1", columns: "e.seq, e.received_at" })}`)
        .bind(projectId, seq)
        .first<{ seq: number; received_at: string }>();
      return row === null ? [] : [row];
    });
    return mergeBySeq(firsts, 1)[0]!;
  };
  if (bounds.lo !== null && bounds.hi !== null) {
    const first = await receivedAt(bounds.lo);
    if (first.received_at < since) {
      let lo = bounds.lo; // received before since
      let hi = bounds.hi + 1; // received at or after since (hi.seq past the head: nothing is)
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        const row = await receivedAt(mid);
        if (row.received_at < since) lo = row.seq;
        else hi = mid;
      }
      return hi - 1;
    }
  }
  const segment = await db
    .prepare("SELECT * FROM archive_segments WHERE project_id = ? AND last_received_at >= ? ORDER BY first_seq LIMIT 1")
    .bind(projectId, since)
    .first<Segment>();
  if (!segment) return Math.max(0, (bounds.lo ?? 1) - 1);
  const found = (await readSegment(env, segment)).find((r) => r.received_at >= since);
  return (found?.seq ?? segment.first_seq) - 1;
}
