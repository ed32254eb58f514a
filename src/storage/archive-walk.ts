import { readSegment, segmentsBetween, type ArchivedRow, type TimeWindow } from "./archive-segments";

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
}

export function archiveTier(env: Env, db: D1Database, projectId: string): ArchiveTier {
  return {
    async *between(afterSeq, beforeSeq, size, window) {
      const segments = await segmentsBetween(db, projectId, afterSeq, beforeSeq, window);
      // The next segment is fetched and unpacked while this one is walked.
      let next = segments.length > 0 ? readSegment(env, segments[0]) : null;
      for (let i = 0; i < segments.length; i++) {
        const rows = await next!;
        next = i + 1 < segments.length ? readSegment(env, segments[i + 1]) : null;
        next?.catch(() => {});
        const inside = rows.filter((r) => r.seq > afterSeq && r.seq < beforeSeq);
        for (let at = 0; at < inside.length; at += size) yield inside.slice(at, at + size);
      }
    },
    async rowBefore(seq) {
      const segment = await db
        .prepare("SELECT * FROM archive_segments WHERE project_id = ? AND first_seq < ? ORDER BY first_seq DESC LIMIT 1")
        .bind(projectId, seq)
        .first<Parameters<typeof readSegment>[1]>();
      if (!segment) return null;
      const rows = (await readSegment(env, segment)).filter((r) => r.seq < seq);
      return rows[rows.length - 1] ?? null;
    },
    async rowAfter(seq) {
      const [segment] = await segmentsBetween(db, projectId, seq);
      if (!segment) return null;
      return (await readSegment(env, segment)).find((r) => r.seq > seq) ?? null;
    },
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
    if (page[0].seq > after + 1) yield* fill(page[0].seq);
    yield page;
    after = page[page.length - 1].seq;
  }
  yield* fill(headSeq + 1);
}
