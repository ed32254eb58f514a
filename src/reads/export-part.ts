import { keepsEveryRow, selectEvents, type Selection } from "../model/event-query";
import { narrowExclusions } from "./event-read";
import { exportFormat, type ExportFormatName } from "../model/export-formats";
import { catalogFor } from "../catalog/catalog-cache";
import { parsePending, PendingScrub, PENDING_AS, PENDING_FOR_SEGMENT, scrubObjects, wasScrubbed, type ErasableRow } from "../model/pending-erasures";
import { companionBytes, matches } from "../storage/archive-export";
import { archivedThrough, type ArchivedRow, type Segment } from "../storage/archive-segments";
import { readListed } from "../storage/archive-walk";
import { joinedSummary, SUMMARY_JOIN_COLUMNS, summaryJoin, type SummaryJoined } from "../storage/archive-summary";
import { segmentProbe } from "./segment-probe";
import { trustedCompanions } from "../storage/companion-check";
import { eventsReadDb, projectRowKey, withProjectArms, withProjectArmSpans } from "../storage/shards";
import { armDb, overArms, pageOverSpans, SEQ_ABOVE_ALL, type Arm, type ListPage, type Listed } from "../model/periods";
import { decodeCursor, encodeCursor } from "../model/cursor";
import { stagedKey } from "../storage/staged-exports";

/**
 * GET /v1/exports' walk cut into
 * parts, each run in its own invocation (an ExportPart object) from a small
 * state, so the request only coordinates. The batches are the same: one
 * keyset page of EXPORT_BATCH hot rows, staged; a whole archived segment's
 * companion, not staged; or up to EXPORT_BATCH matching rows of a segment,
 * staged. Hot rows a segment sealed mid-walk also holds are left out of the
 * archive walk the way src/jobs/export-walk.ts does (`marks`), since a part
 * cannot keep the walk's seen-bits in memory.
 */
export interface ExportPartState {
  exportId: string;
  projectId: string;
  format: ExportFormatName;
  phase: "plan" | "hot" | "archive" | "done";
  sel: Selection | null;
  /** The selection narrowed for the hot reads; null when no hot event can match. */
  hot: Selection | null;
  cursor: { o: string; s: number } | null;
  /** Archived-through seq at the plan. */
  base: number;
  /** From each `after` on (walk order, null: the start), hot pages were read with archived-through `a`. */
  marks: Array<{ after: { o: string; s: number } | null; a: number }>;
  segBefore: number | null;
  /** Matching rows of the segment below segBefore already written. */
  skip: number;
  /** Batches so far (staged objects are numbered by it). */
  n: number;
  /** The last batch, when it was staged: the tail is appended to it once the walk ends. */
  lastStaged: number | null;
  /** Rows per batch and batches per part; tests make them small. */
  batch: number;
  pages: number;
}

export interface ExportPartResult {
  chunks: Uint8Array[];
  state: ExportPartState;
  last: boolean;
}

/** A part stops adding batches past this many bytes (companions can be large). */
const PART_BYTES = 8 * 1024 * 1024;
const SEGMENTS_PER_PART = 50;
const ALL = Number.MAX_SAFE_INTEGER;

const ARCHIVED_THROUGH = "SELECT coalesce(max(last_seq), 0) AS s FROM archive_segments WHERE project_id = ?";
// With the pending erasures that may cover each segment's rows (src/model/pending-erasures.ts): no extra query.
const NEXT_SEGMENTS =
  `SELECT s.*, ${PENDING_FOR_SEGMENT} AS _pending, ${SUMMARY_JOIN_COLUMNS} FROM archive_segments s ` +
  summaryJoin("?6") +
  "WHERE s.project_id = ?1 AND (?2 IS NULL OR s.last_occurred_at >= ?2) " +
  "AND (?3 IS NULL OR s.first_occurred_at <= ?3) AND (?4 IS NULL OR s.first_seq < ?4) ORDER BY s.first_seq DESC LIMIT ?5";

/** Columns a pending erasure needs to decide whether it covers a row, read besides the format's. */
const ERASURE_KEYS = ["seq", "organization", "actor_id", "actor_email"] as const;

const before = (p: { o: string; s: number }, q: { o: string; s: number }) => p.o < q.o || (p.o === q.o && p.s < q.s);

function archivedWhenPassed(s: ExportPartState, p: { o: string; s: number }): number {
  for (let i = s.marks.length - 1; i >= 0; i--) if (s.marks[i].after === null || before(p, s.marks[i].after!)) return s.marks[i].a;
  return s.base;
}

const pendingIn = (g: Segment) => parsePending((g as Segment & { _pending?: unknown })._pending);

/**
 * narrowExclusions over every arm: the included actions of all of them, or
 * the selection as it is when one arm holds too many to narrow. One arm's
 * actions alone would leave out the events of an action only another holds.
 */
export async function narrowOverArms(env: Env, db: D1Database, sel: Selection): Promise<Selection | null> {
  if (sel.exclude.length === 0) return sel;
  const each = await withProjectArms(env, sel.projectId, (arms) => overArms(db, (arm) => narrowExclusions(arm, sel), arms));
  if (each.length === 1) return each[0];
  if (each.some((n) => n !== null && n.exclude.length > 0)) return sel;
  const actions = [...new Set(each.flatMap((n) => n?.actions ?? []))].sort();
  return actions.length === 0 ? null : { ...sel, actions, exclude: [] };
}

/** How many hot events the (narrowed) selection holds, in every arm. */
export async function hotCount(env: Env, db: D1Database, hot: Selection, rowKey: number | null): Promise<number> {
  const count = selectEvents(hot, { columns: "e.seq", rowKey, cursor: null, limit: -1 });
  // A period's rows the archive sealed are counted with the archive (hotPage leaves them out).
  const counts = await withProjectArms(env, hot.projectId, async (arms) => {
    const archived = arms.length === 1 ? 0 : ((await db.prepare(ARCHIVED_THROUGH).bind(hot.projectId).first<{ s: number }>())?.s ?? 0);
    return overArms(
      db,
      async (arm, n) => (await arm.prepare(`SELECT count(*) AS n FROM (${count.sql})${n === null ? "" : ` WHERE seq > ${Number(archived)}`}`).bind(...count.params).first<{ n: number }>())!.n,
      arms,
    );
  });
  return counts.reduce((a, b) => a + b, 0);
}

/** An export's page of hot rows (columns as asked), and the project's archived-through seq read in the same transaction. */
export interface HotPage {
  archived: number;
  rows: Array<Record<string, unknown>>;
  /**
   * Where the next page starts (null: no hot row follows these): after the
   * last row, or above it, where the page ended at arms left unread
   * (pageOverSpans), which may leave a page short or empty. The walk goes on
   * from here, not from its last row.
   */
  next: { o: string; s: number } | null;
}

/**
 * Up to `limit` hot rows after `cursor` in list order, from the arms that can
 * hold them (pageOverSpans: a settled period whose rows all lie below the page
 * is not read), merged (mergePages). Each read of arms is one D1 batch with
 * the archived-through seq: one transaction, so the walks' marks hold
 * whichever arm a row is in. `columns` must hold e.occurred_at and e.seq.
 */
export async function hotPage(env: Env, db: D1Database, hot: Selection, columns: string, rowKey: number | null, cursor: { o: string; s: number } | null, limit: number): Promise<HotPage> {
  const after = cursor ? { occurredAt: cursor.o, seq: cursor.s } : null;
  const statement = selectEvents(hot, { columns, rowKey, cursor: after, limit });
  let archived: number | null = null;
  const page = await withProjectArmSpans(env, hot.projectId, db, (spans) => {
    archived = null;
    return pageOverSpans(spans, after, limit, async (arms: Arm[]) => {
      const [through, ...found] = await db.batch<Record<string, unknown>>([
        db.prepare(ARCHIVED_THROUGH).bind(hot.projectId),
        ...arms.map((n) => armDb(db, n).prepare(statement.sql).bind(...statement.params)),
      ]);
      // A second read of arms (periods only, settled or past their end, which keep sealed rows till they are dropped)
      // keeps to the first read's seq: the page is the one a single transaction at the first read would have given.
      archived ??= (through.results[0] as { s: number }).s;
      const sealed = archived;
      // Each arm read at most `limit` rows: one that read that many looked no further than its last. A period keeps the
      // rows the archive sealed until it is dropped (model/periods.ts): those are the archive's to write, so left out here,
      // as the rows of a segment sealed mid-walk are (the marks); the main tables hold no sealed row.
      return found.map((f, i): ListPage<Listed & Record<string, unknown>> => {
        const rows = f.results as Array<Listed & Record<string, unknown>>;
        const last = rows[rows.length - 1];
        return { rows: arms[i] === null ? rows : rows.filter((r) => r.seq > sealed), nextCursor: rows.length < limit ? null : encodeCursor(last.occurred_at, last.seq) };
      });
    }, hot);
  });
  // A page that read no arm (none can hold a row of it) has not read the archived-through seq.
  archived ??= (await db.prepare(ARCHIVED_THROUGH).bind(hot.projectId).first<{ s: number }>())?.s ?? 0;
  const next = page.nextCursor === null ? null : decodeCursor(page.nextCursor);
  return { archived, rows: page.rows, next: next === null ? null : { o: next.occurredAt, s: next.seq ?? SEQ_ABOVE_ALL } };
}

export async function exportPart(env: Env, start: ExportPartState): Promise<ExportPartResult> {
  const s: ExportPartState = { ...start, marks: [...start.marks] };
  const format = exportFormat(s.format, s.format === "ocsf" ? (await catalogFor(env, s.projectId)).ocsfView() : undefined);
  const encoder = new TextEncoder();
  const db = await eventsReadDb(env, s.projectId);
  const chunks: Uint8Array[] = [];
  const puts: Promise<unknown>[] = [];
  let size = 0;
  let batches = 0;
  // The last staged batch of this part is put once the next batch (or the walk's end) shows whether it takes the tail.
  let pending = null as { n: number; bytes: Uint8Array } | null;
  const put = (n: number, bytes: Uint8Array) => puts.push(env.EXPORTS.put(stagedKey(s.projectId, s.exportId, n), bytes, { httpMetadata: { contentType: format.contentType } }));
  const flush = () => {
    if (pending) put(pending.n, pending.bytes);
    pending = null;
  };
  const emit = (bytes: Uint8Array, staged: boolean) => {
    flush();
    chunks.push(bytes);
    size += bytes.length;
    batches++;
    if (staged) pending = { n: s.n, bytes };
    s.lastStaged = staged ? s.n : null;
    s.n++;
  };
  const emitRows = (rows: unknown[][]) => {
    let text = s.n === 0 ? format.head : "";
    rows.forEach((row, i) => {
      text += format.line(row, s.n === 0 && i === 0);
    });
    emit(encoder.encode(text), true);
  };
  const room = () => batches < s.pages && size < PART_BYTES;

  if (s.phase === "plan") {
    if (!s.sel) s.phase = "done";
    else {
      s.hot = await narrowOverArms(env, db, s.sel);
      s.base = await archivedThrough(db, s.projectId);
      s.phase = "hot";
    }
  }
  const columns = format.columns;
  const rowKey = s.phase === "hot" ? await projectRowKey(env, s.projectId) : null;

  while (s.phase === "hot" && room()) {
    let shown: unknown[][] = [];
    let archived = ALL;
    let next: HotPage["next"] = null;
    if (s.hot !== null) {
      const read = [...new Set([...columns, ...ERASURE_KEYS])].map((c) => `e.${c}`);
      const found = await hotPage(env, db, s.hot, `${read.join(", ")}, ${PENDING_AS}`, rowKey, s.cursor, s.batch);
      archived = found.archived;
      next = found.next;
      // Rows a pending erasure covers go out scrubbed; left out when the filter matched them only by an erased field.
      const rows = await scrubObjects(found.rows as unknown as ErasableRow[]);
      const keep = (r: ErasableRow) => !wasScrubbed(r) || (s.hot!.actorId === null && s.hot!.ipAddress === null);
      shown = rows.filter(keep).map((r) => columns.map((c) => (r as unknown as Record<string, unknown>)[c]));
    }
    const lastMark = s.marks.length > 0 ? s.marks[s.marks.length - 1].a : s.base;
    if (archived !== lastMark) s.marks.push({ after: s.cursor, a: archived });
    if (shown.length > 0) emitRows(shown);
    // The next page starts where this one ended: past its last row, or above it where it ended at arms left unread.
    if (next !== null) s.cursor = next;
    else s.phase = "archive";
  }

  // Looks once even when the part is full: a walk that ends here ends in this part, not in one more call.
  let looked = false;
  while (s.phase === "archive" && (room() || !looked)) {
    looked = true;
    const sel = s.sel!;
    const probe = segmentProbe(env, sel);
    const { results: segments } = await db
      .prepare(NEXT_SEGMENTS)
      .bind(s.projectId, sel.dateFrom, sel.dateTo, s.segBefore, room() ? SEGMENTS_PER_PART : 1, probe ? 1 : 0)
      .all<Segment & SummaryJoined>();
    if (segments.length === 0) {
      s.phase = "done";
      break;
    }
    if (!room()) break;
    const unfiltered = keepsEveryRow(sel);
    const firstMark = Math.min(s.base, ...s.marks.map((m) => m.a));
    // Whole, and none of its rows was hot when the walk started (so none was written); a segment sealed mid-walk goes row by row, the same bytes.
    // A segment a pending erasure may cover goes row by row, scrubbed: its companion was rendered before the erasure.
    const whole = (g: Segment) =>
      unfiltered && s.skip === 0 && pendingIn(g) === null && g.last_seq <= firstMark && (sel.dateFrom === null || sel.dateFrom <= g.first_occurred_at) && (sel.dateTo === null || sel.dateTo >= g.last_occurred_at);
    const trusted = segments.some(whole) ? await trustedCompanions(env, s.projectId, segments) : {};
    for (const g of segments) {
      if (!room()) break;
      // Its summary proves no row of it matches (src/storage/archive-summary.ts): passed over unread.
      if (probe && !(await probe.admits(joinedSummary(g)))) {
        s.segBefore = g.first_seq;
        s.skip = 0;
        continue;
      }
      // OCSF has no companions: its segments are written row by row.
      const expected = whole(g) && s.format !== "ocsf" ? (trusted[g.sha256]?.[s.format] ?? null) : null;
      const companion = s.format === "ocsf" ? null : await companionBytes(env, g, s.format, expected);
      if (companion !== null) {
        const head = encoder.encode(s.n === 0 ? format.head : format.between);
        const bytes = new Uint8Array(head.length + companion.length);
        bytes.set(head);
        bytes.set(companion, head.length);
        emit(bytes, false);
      } else {
        const entries = pendingIn(g);
        // Listed a moment ago: an erasure or retention may have rewritten it since, or a restore brought it back hot.
        const read = await readListed(env, db, g);
        const matching = (entries ? await new PendingScrub().rows(read, () => entries) : read)
          .filter((r) => matches(sel, r) && r.seq <= archivedWhenPassed(s, { o: r.occurred_at, s: r.seq }))
          .sort((a, b) => (a.occurred_at === b.occurred_at ? b.seq - a.seq : a.occurred_at < b.occurred_at ? 1 : -1));
        while (s.skip < matching.length && room()) {
          emitRows(matching.slice(s.skip, s.skip + s.batch).map((r) => columns.map((c) => r[c as keyof ArchivedRow])));
          s.skip += s.batch;
        }
        if (s.skip < matching.length) break;
      }
      s.segBefore = g.first_seq;
      s.skip = 0;
    }
  }

  if (s.phase === "done") {
    if (s.n === 0) {
      // Nothing matched: one staged batch with the head and tail only.
      emit(encoder.encode(format.head + format.tail), true);
    } else if (format.tail !== "") {
      const tail = encoder.encode(format.tail);
      if (s.lastStaged !== null) {
        const previous = pending?.n === s.lastStaged ? pending.bytes : new Uint8Array(await (await env.EXPORTS.get(stagedKey(s.projectId, s.exportId, s.lastStaged)))!.arrayBuffer());
        const whole = new Uint8Array(previous.length + tail.length);
        whole.set(previous);
        whole.set(tail, previous.length);
        pending = null;
        put(s.lastStaged, whole);
      }
      chunks.push(tail);
    }
  }
  flush();
  await Promise.all(puts);
  return { chunks, state: s, last: s.phase === "done" };
}
