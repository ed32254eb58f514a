import { projectRowKey } from "../storage/shards";
import type { EventRow } from "../db/schema";
import type { Selection } from "../model/event-query";
import { EXPORT_BATCH } from "../reads/export-stream";
import { parsePending, PendingScrub, PENDING_AS, PENDING_FOR_SEGMENT, scrubObjects, wasScrubbed, type ErasableRow } from "../model/pending-erasures";
import { matches } from "../storage/archive-export";
import { readSegment, type ArchivedRow, type Segment } from "../storage/archive-segments";
import { joinedSummary, SUMMARY_JOIN_COLUMNS, summaryJoin, type SummaryJoined } from "../storage/archive-summary";
import { segmentProbe } from "../reads/segment-probe";
import { hotPage } from "../reads/export-part";

/**
 * GET /v1/exports' walk (src/storage/archive-export.ts), cut into parts that
 * each resume from a small state instead of one request's memory: the hot
 * events newest first, then the archived segments newest first, each
 * segment's matching rows newest first. Same rows, same order.
 *
 * Archiving may seal hot rows while a job runs. Each hot page is read in one
 * D1 batch (a transaction) with the project's archived-through seq, and the
 * walk remembers where that value moved (`marks`). An archived row was
 * written by the hot walk exactly when its seq was above the value in force
 * when the walk passed its position: the archive walk writes only the others,
 * so no row is written twice or missed, whatever gets sealed meanwhile.
 */
export interface Position {
  o: string;
  s: number;
}

export interface WalkState {
  phase: "hot" | "archive" | "done";
  /** The export's filters, applied to archived rows. */
  sel: Selection;
  /** The same, narrowed for the hot reads; null when no hot event can match. */
  hot: Selection | null;
  cursor: Position | null;
  /** Archived-through seq at the plan. */
  base: number;
  /** From each `after` on (walk order, null: the start), hot pages were read with archived-through `a`. */
  marks: Array<{ after: Position | null; a: number }>;
  /** The archive walk reads the newest segment with first_seq below this (null: the newest). */
  segBefore: number | null;
  /** Matching rows of that segment already written. */
  skip: number;
}

/** Segments one part may read: bounds a step's subrequests when filters match few archived rows. */
const SEGMENTS_PER_PART = 50;
/** Stands for "nothing was hot": every archived row is the archive walk's. */
const ALL = Number.MAX_SAFE_INTEGER;

const before = (p: Position, q: Position) => p.o < q.o || (p.o === q.o && p.s < q.s);

function archivedWhenPassed(state: WalkState, p: Position): number {
  for (let i = state.marks.length - 1; i >= 0; i--) {
    const mark = state.marks[i];
    if (mark.after === null || before(p, mark.after)) return mark.a;
  }
  return state.base;
}

// With the pending erasures that may cover the segment's rows (src/model/pending-erasures.ts), in the same query.
const NEXT_SEGMENT =
  `SELECT s.*, ${PENDING_FOR_SEGMENT} AS _pending, ${SUMMARY_JOIN_COLUMNS} FROM archive_segments s ` +
  summaryJoin() +
  "WHERE s.project_id = ?1 AND (?2 IS NULL OR s.last_occurred_at >= ?2) " +
  "AND (?3 IS NULL OR s.first_occurred_at <= ?3) AND (?4 IS NULL OR s.first_seq < ?4) ORDER BY s.first_seq DESC LIMIT 1";
/** Segments one part may pass over on their summaries alone: one D1 query each, no R2 read. */
const SKIPS_PER_PART = 400;
/** Columns a pending erasure needs to decide whether it covers a row, read besides the export's. */
const ERASURE_KEYS = ["seq", "organization", "actor_id", "actor_email"] as const;

export interface Part {
  rows: unknown[][];
  state: WalkState;
  /** No row follows this part's. */
  last: boolean;
}

/**
 * The next up to `max` rows from `start`, as arrays of `columns`. It reads one
 * row past them (when there is one) so a part knows whether it is the last.
 */
export async function nextPart(env: Env, db: D1Database, start: WalkState, columns: ReadonlyArray<keyof EventRow>, max: number): Promise<Part> {
  let s: WalkState = { ...start, marks: [...start.marks] };
  const rows: unknown[][] = [];
  let snapshot: WalkState | null = null;
  const push = (row: unknown[], after: () => WalkState) => {
    rows.push(row);
    if (rows.length === max) snapshot = after();
  };
  const selectColumns = `${[...new Set([...columns, ...ERASURE_KEYS])].map((c) => `e.${c}`).join(", ")}, ${PENDING_AS}`;
  const rowKey = s.phase === "hot" ? await projectRowKey(env, s.sel.projectId) : null;

  while (s.phase === "hot" && rows.length <= max) {
    const limit = Math.min(EXPORT_BATCH, max + 1 - rows.length);
    let page: Array<{ cells: unknown[] | null; at: Position }> = [];
    let archived = ALL;
    let next: Position | null = null;
    if (s.hot !== null) {
      const found = await hotPage(env, db, s.hot, selectColumns, rowKey, s.cursor, limit);
      archived = found.archived;
      next = found.next;
      // A row a pending erasure covers goes out scrubbed, or not at all (cells null) when the filter matched it only by an erased field.
      const rows = (await scrubObjects(found.rows as unknown as ErasableRow[])) as unknown as Array<Record<string, unknown>>;
      const kept = (r: object) => !wasScrubbed(r) || (s.hot!.actorId === null && s.hot!.ipAddress === null);
      page = rows.map((r) => ({ cells: kept(r) ? columns.map((c) => r[c]) : null, at: { o: r.occurred_at as string, s: r.seq as number } }));
    }
    const lastMark = s.marks.length > 0 ? s.marks[s.marks.length - 1].a : s.base;
    if (archived !== lastMark) s.marks.push({ after: s.cursor, a: archived });
    for (const { cells, at } of page) {
      const marks = [...s.marks];
      if (cells) push(cells, () => ({ ...s, cursor: at, marks }));
    }
    // The next page starts where this one ended: past its last row, or above it where it ended at arms left unread.
    if (next !== null) s.cursor = next;
    else s.phase = "archive";
  }

  let segments = 0;
  let skipped = 0;
  const probe = segmentProbe(env, s.sel);
  while (s.phase === "archive" && rows.length <= max && segments < SEGMENTS_PER_PART && skipped < SKIPS_PER_PART) {
    const segment = await db.prepare(NEXT_SEGMENT).bind(s.sel.projectId, s.sel.dateFrom, s.sel.dateTo, s.segBefore).first<Segment & SummaryJoined>();
    if (!segment) {
      s.phase = "done";
      break;
    }
    // Its summary proves no row of it matches (src/storage/archive-summary.ts): passed over unread.
    if (probe && !(await probe.admits(joinedSummary(segment)))) {
      skipped++;
      s = { ...s, segBefore: segment.first_seq, skip: 0 };
      continue;
    }
    segments++;
    const entries = parsePending((segment as Segment & { _pending?: unknown })._pending);
    const read = await readSegment(env, segment);
    const matching = (entries ? await new PendingScrub().rows(read, () => entries) : read)
      .filter((r) => matches(s.sel, r) && r.seq <= archivedWhenPassed(s, { o: r.occurred_at, s: r.seq }))
      .sort((a, b) => (a.occurred_at === b.occurred_at ? b.seq - a.seq : a.occurred_at < b.occurred_at ? 1 : -1));
    const from = s.skip;
    for (let i = from; i < matching.length && rows.length <= max; i++) {
      const taken = i + 1;
      const here = s;
      push(
        columns.map((c) => matching[i][c as keyof ArchivedRow]),
        () => (taken === matching.length ? { ...here, segBefore: segment.first_seq, skip: 0 } : { ...here, skip: taken }),
      );
    }
    if (rows.length > max) break;
    s = { ...s, segBefore: segment.first_seq, skip: 0 };
  }

  if (rows.length > max) return { rows: rows.slice(0, max), state: snapshot!, last: false };
  return { rows, state: s, last: s.phase === "done" };
}
