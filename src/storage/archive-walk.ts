import { firstIdOf } from "./archive-ids";
import { checkCompanions, trustedCompanions } from "./companion-check";
import { ArchiveDamagedError, readSegment, segmentsBetween, type ArchivedRow, type Segment, type TimeWindow } from "./archive-segments";
import { EVENT_COLUMNS } from "./shard-copy";
import { locatedTag } from "../model/event-id";
import { rowsBySeq } from "../model/row-keys";
import { mergeBySeq, overArms } from "../model/periods";

/**
 * What the walkers (verify, export) need of the cold tier, bound to one
 * project's shard and the ARCHIVE bucket. Handed to verify through the
 * ledger's view, so verify's own signature stays as it was.
 */
export interface ArchiveTier {
  /** Archived rows with afterSeq < seq < beforeSeq, in seq order, in pages of `size`. */
  between(afterSeq: number, beforeSeq: number, size: number, window?: TimeWindow): AsyncGenerator<ArchivedRow[]>;
  /** The archived row nearest before seq, or null. */
  rowBefore(seq: number): Promise<ArchivedRow | null>;
  /** The archived row nearest after seq, or null (the next row is hot, or there is none). */
  rowAfter(seq: number): Promise<ArchivedRow | null>;
  /**
   * Seqs of rows that `between` read whole and intact but whose segment's index row does not bound them
   * (unbounded): reads between dates or by id skip that segment, so they no longer find the row. Verify reports
   * each as index_damaged.
   */
  readonly misplaced: Set<number>;
}

/**
 * The first row (its seq) that a segment's index row does not bound as the reads need, or null: its time
 * bounds must hold every row's occurred_at (lists, exports and retention between dates skip the segment
 * otherwise), and with an id tag its receive times every row's received_at and the tag the rows' own (a
 * receipt looks the id up by tag and receive time: archive-lookup.ts). A segment without a tag may have
 * receive times that step back, and is found by id otherwise (archive_ids, or read whole), so its receive
 * times are not asked about. Wider bounds only cost a read more.
 */
async function unbounded(segment: Segment, rows: readonly ArchivedRow[]): Promise<number | null> {
  const tagged = segment.id_tag !== null;
  for (const r of rows) {
    if (r.occurred_at < segment.first_occurred_at || r.occurred_at > segment.last_occurred_at) return r.seq;
    if (tagged && (r.received_at < segment.first_received_at || r.received_at > segment.last_received_at)) return r.seq;
  }
  if (tagged && rows.length > 0 && segment.id_tag !== (await locatedTag(segment.project_id, rows))) return rows[0].seq;
  return null;
}

/**
 * Every read of the tier throws ArchiveDamagedError for a damaged segment,
 * naming the segment's first event (verify reports it as archive_damaged).
 * The walk (`between`, verify's) also checks each segment's export companions
 * against the hashes the ledger recorded for it (companion-check.ts).
 */
export function archiveTier(env: Env, db: D1Database, projectId: string): ArchiveTier {
  const misplaced = new Set<number>();
  const named = async (error: ArchiveDamagedError) => ((error.eventId = await firstIdOf(db, error.segment)), error);
  // Rows a walk read (of `segment`, or of what it became meanwhile: readListed) against the index row they belong to.
  const place = async (segment: Segment, rows: ArchivedRow[]): Promise<ArchivedRow[]> => {
    if ((await unbounded(segment, rows)) === null) return rows;
    const now = await changed(db, segment);
    const seq = now === "gone" ? null : await unbounded(now === "same" ? segment : now, rows);
    if (seq !== null) misplaced.add(seq);
    return rows;
  };
  const read = (segment: Segment) =>
    readListed(env, db, segment).catch(async (error) => {
      throw error instanceof ArchiveDamagedError ? await named(error) : error;
    });
  return {
    async *between(afterSeq, beforeSeq, size, window) {
      const segments = await segmentsBetween(db, projectId, afterSeq, beforeSeq, window);
      const trusted = segments.length > 0 ? await trustedCompanions(env, projectId, segments) : {};
      const fetch = async (segment: Segment, tries = 2): Promise<ArchivedRow[]> => {
        const [rows, damage] = await Promise.all([read(segment), checkCompanions(env, segment, trusted[segment.sha256])]);
        if (damage === null) return place(segment, rows);
        const now = await changed(db, segment);
        // Brought back hot meanwhile: its rows were read, its companions are simply gone.
        if (now === "gone") return rows;
        if (now === "same" || tries === 0) throw await named(new ArchiveDamagedError(segment, damage));
        Object.assign(trusted, await trustedCompanions(env, projectId, [now]));
        return fetch(now, tries - 1);
      };
      // The next segment is fetched and unpacked while this one is walked.
      let next = segments.length > 0 ? fetch(segments[0]) : null;
      for (let i = 0; i < segments.length; i++) {
        const rows = await next!;
        next = i + 1 < segments.length ? fetch(segments[i + 1]) : null;
        next?.catch(() => {});
        const inside = rows.filter((r) => r.seq > afterSeq && r.seq < beforeSeq);
        for (let at = 0; at < inside.length; at += size) yield inside.slice(at, at + size);
      }
    },
    async rowBefore(seq) {
      const segment = await db
        .prepare("SELECT * FROM archive_segments WHERE project_id = ? AND first_seq < ? ORDER BY first_seq DESC LIMIT 1")
        .bind(projectId, seq)
        .first<Segment>();
      if (!segment) return null;
      const rows = (await read(segment)).filter((r) => r.seq < seq);
      return rows[rows.length - 1] ?? null;
    },
    async rowAfter(seq) {
      const [segment] = await segmentsBetween(db, projectId, seq);
      if (!segment) return null;
      return (await read(segment)).find((r) => r.seq > seq) ?? null;
    },
    misplaced,
  };
}

/**
 * A walker's hot pages (seq order) with the archived rows they skip put back
 * in place. Reading the archive index after each hot page sees every segment
 * committed before that page was read: a row archived during the walk is
 * met exactly once, in one tier. `convert` may drop rows (a window's filter).
 */
export async function* withArchived<T extends { seq: number }>(
  tier: ArchiveTier | undefined,
  hot: AsyncIterable<T[]>,
  convert: (row: ArchivedRow) => T | null,
  headSeq: number,
  size: number,
  /** Segments wholly outside it are not read (convert still filters their rows). */
  window?: TimeWindow,
): AsyncGenerator<T[]> {
  if (!tier) return yield* hot;
  let after = 0;
  async function* fill(before: number) {
    for await (const rows of tier!.between(after, before, size, window)) {
      after = rows[rows.length - 1].seq;
      const page = rows.flatMap((r) => convert(r) ?? []);
      if (page.length > 0) yield page;
    }
  }
  for await (const page of hot) {
    const first = page[0].seq;
    const last = page[page.length - 1].seq;
    // No seq missing before or inside the page: nothing archived can belong there.
    if (first === after + 1 && last - first + 1 === page.length) yield page;
    else yield* merged(page);
    after = last;
  }
  yield* fill(headSeq + 1);

  /**
   * The hot page with the archived rows that fall before and between its rows
   * (a segment an operator restored can sit between archived ones), in seq
   * order, in pages of `size`. The index is read after the page: a row that
   * was archived since the page was read is in both, and kept from the page.
   */
  async function* merged(page: T[]) {
    let i = 0;
    let out: T[] = [];
    const take = (row: T) => {
      out.push(row);
      if (out.length < size) return null;
      const full = out;
      out = [];
      return full;
    };
    for await (const rows of tier!.between(after, page[page.length - 1].seq, size, window)) {
      for (const row of rows) {
        for (; i < page.length && page[i].seq <= row.seq; i++) {
          const full = take(page[i]);
          if (full) yield full;
        }
        const cold = page[i - 1]?.seq === row.seq ? null : convert(row);
        const full = cold === null ? null : take(cold);
        if (full) yield full;
      }
    }
    for (; i < page.length; i++) {
      const full = take(page[i]);
      if (full) yield full;
    }
    if (out.length > 0) yield out;
  }
}

/**
 * A segment's rows, as readSegment, for a segment listed a moment ago. It may
 * have been rewritten (erasure, retention), retired (retention: its rows are
 * gone and a gap record covers them) or brought back hot (an operator's
 * restore, archive-restore.ts) since, and its
 * old objects deleted: that is not damage, so a failed read looks at the
 * index row again and reads what replaced it (the rows of a segment brought
 * back hot are read from D1). Only a segment still named as it was is damaged.
 */
export async function readListed(env: Env, db: D1Database, segment: Segment, tries = 2): Promise<ArchivedRow[]> {
  try {
    return await readSegment(env, segment);
  } catch (error) {
    if (!(error instanceof ArchiveDamagedError)) throw error;
    const now = await changed(db, segment);
    if (now === "same" || tries === 0) throw error;
    return now === "gone" ? restoredRows(db, segment) : readListed(env, db, now, tries - 1);
  }
}

async function changed(db: D1Database, segment: Segment): Promise<Segment | "same" | "gone"> {
  const now = await db
    .prepare("SELECT * FROM archive_segments WHERE project_id = ? AND first_seq = ?")
    .bind(segment.project_id, segment.first_seq)
    .first<Segment>();
  if (!now) return "gone";
  return now.sha256 === segment.sha256 && now.object_key === segment.object_key ? "same" : now;
}

/** The rows of a segment brought back hot (or retired: none) after the walk listed it, from whichever arms hold them (model/periods.ts). */
async function restoredRows(db: D1Database, segment: Segment): Promise<ArchivedRow[]> {
  const lists = await overArms(db, async (arm) => {
    const { results } = await arm
      .prepare(`SELECT ${EVENT_COLUMNS.join(", ")} FROM ${rowsBySeq({ project: "?1", lo: "?2", hi: "?3" })}`)
      .bind(segment.project_id, segment.first_seq, segment.last_seq)
      .all<ArchivedRow>();
    return results;
  });
  return mergeBySeq(lists);
}

/** Where a walk stopped at a damaged segment: verify reports it as archive_damaged. */
export interface WalkDamage {
  error: ArchiveDamagedError | null;
}

/** A walk's pages until a read of the cold tier finds a damaged segment: the walk then ends, and `damage` says where. */
export async function* untilDamaged<T>(pages: AsyncIterable<T>, damage: WalkDamage): AsyncGenerator<T> {
  try {
    yield* pages;
  } catch (error) {
    stopAt(damage)(error);
  }
}

/** For a single read of the cold tier during a walk (a windowed verify's link to an archived predecessor): null once damaged. */
export function stopAt(damage: WalkDamage) {
  return (error: unknown): null => {
    if (!(error instanceof ArchiveDamagedError)) throw error;
    damage.error ??= error;
    return null;
  };
}

/** The failure verify reports for it: the segment's first event (null when the id index has no entry for it) and the segment's earliest occurred_at. */
export function damageFailure(error: ArchiveDamagedError) {
  return { event_id: error.eventId, reason: "archive_damaged" as const, at: error.segment.first_occurred_at };
}
