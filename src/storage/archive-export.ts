import type { EventRow } from "../db/schema";
import type { Cursor } from "../reads/cursor";
import type { Selection } from "../reads/event-query";
import { archivedThrough, companionKey, readSealed, readSegment, type ArchivedRow, type CompanionFormat, type Segment } from "./archive-segments";
import { trustedCompanions } from "./companion-check";
import type { TrustedCompanions } from "./companion-records";

/**
 * The pages of an export across both tiers: the hot events newest first (the
 * export's own keyset walk, `readHot`), then the archived ones, segment by
 * segment from the newest, each segment's matching rows newest first. So the
 * order is exact within each tier, and across them it follows receive order.
 *
 * A segment sealed while the export runs holds rows the hot walk may already
 * have written: every hot seq above what was archived at the start is
 * remembered (one bit each), and such rows are not written twice.
 *
 * A segment the selection takes whole (no filter but a date window that
 * covers its whole occurred_at range) and none of whose rows the hot walk
 * wrote is yielded as its export companion's bytes (archive-companions.ts),
 * already rendered in `companion`'s format and in this same order, but only
 * when its bytes hash to what the project's ledger recorded for that segment
 * (companion-records.ts): D1 and R2 alone cannot make an export serve other
 * rows. Any other segment, one the ledger has no record for yet, or one whose
 * companion is missing or differs goes row by row from the segment itself.
 */
export async function* exportPages(
  db: D1Database,
  env: Env,
  sel: Selection,
  columns: ReadonlyArray<keyof EventRow>,
  readHot: (cursor: Cursor | null) => Promise<unknown[][]>,
  batch: number,
  companion: CompanionFormat | null = null,
): AsyncGenerator<unknown[][] | Uint8Array> {
  const archivedAtStart = await archivedThrough(db, sel.projectId);
  const seqAt = columns.indexOf("seq");
  const occurredAt = columns.indexOf("occurred_at");
  let seen = new Uint8Array(1024);
  const mark = (seq: number) => {
    const bit = seq - archivedAtStart;
    if (bit <= 0) return;
    if (bit >> 3 >= seen.length) {
      const grown = new Uint8Array(Math.max(seen.length * 2, (bit >> 3) + 1));
      grown.set(seen);
      seen = grown;
    }
    seen[bit >> 3] |= 1 << (bit & 7);
  };
  const wasSeen = (seq: number) => {
    const bit = seq - archivedAtStart;
    return bit > 0 && bit >> 3 < seen.length && (seen[bit >> 3] & (1 << (bit & 7))) !== 0;
  };

  let cursor: Cursor | null = null;
  for (;;) {
    const rows = await readHot(cursor);
    for (const row of rows) mark(row[seqAt] as number);
    if (rows.length > 0) yield rows;
    if (rows.length < batch) break;
    const last = rows[rows.length - 1];
    cursor = { occurredAt: last[occurredAt] as string, seq: last[seqAt] as number };
  }

  const { results } = await db
    .prepare(
      "SELECT * FROM archive_segments WHERE project_id = ?1 AND (?2 IS NULL OR last_occurred_at >= ?2) AND (?3 IS NULL OR first_occurred_at <= ?3) ORDER BY first_seq DESC",
    )
    .bind(sel.projectId, sel.dateFrom, sel.dateTo)
    .all<Segment>();
  const trusted: TrustedCompanions = companion !== null && results.length > 0 ? await trustedCompanions(env, sel.projectId, results) : {};
  const unfiltered = sel.organization === null && sel.actorId === null && sel.ipAddress === null && sel.actions === null && sel.exclude.length === 0;
  const whole = (s: Segment) => {
    if (!unfiltered || companion === null) return false;
    if ((sel.dateFrom !== null && sel.dateFrom > s.first_occurred_at) || (sel.dateTo !== null && sel.dateTo < s.last_occurred_at)) return false;
    for (let seq = Math.max(s.first_seq, archivedAtStart + 1); seq <= s.last_seq; seq++) if (wasSeen(seq)) return false;
    return true;
  };
  const fetch = async (s: Segment): Promise<ArchivedRow[] | Uint8Array> =>
    (whole(s) ? await companionBytes(env, s, companion!, trusted[s.sha256]?.[companion!] ?? null) : null) ?? readSegment(env, s);
  // The next segment is fetched while this one is written out.
  let next = results.length > 0 ? fetch(results[0]) : null;
  for (let i = 0; i < results.length; i++) {
    const rows = await next!;
    next = i + 1 < results.length ? fetch(results[i + 1]) : null;
    next?.catch(() => {});
    if (rows instanceof Uint8Array) {
      yield rows;
      continue;
    }
    const matching = rows
      .filter((r) => matches(sel, r) && !wasSeen(r.seq))
      .sort((a, b) => (a.occurred_at === b.occurred_at ? b.seq - a.seq : a.occurred_at < b.occurred_at ? 1 : -1));
    for (let at = 0; at < matching.length; at += batch) yield matching.slice(at, at + batch).map((r) => columns.map((c) => r[c as keyof ArchivedRow]));
  }
}

/** The selection's filters, as selectEvents applies them in SQL. */
export function matches(sel: Selection, r: ArchivedRow): boolean {
  if (sel.organization !== null && r.organization !== sel.organization) return false;
  if (sel.actorId !== null && r.actor_id !== sel.actorId) return false;
  if (sel.ipAddress !== null && r.ip_address !== sel.ipAddress) return false;
  if (sel.dateFrom !== null && r.occurred_at < sel.dateFrom) return false;
  if (sel.dateTo !== null && r.occurred_at > sel.dateTo) return false;
  if (sel.actions !== null && !sel.actions.includes(r.action)) return false;
  return !sel.exclude.includes(r.action);
}

/**
 * A segment's companion, decompressed; null when the ledger recorded none for
 * the segment (`expected` null) or it is missing or its SHA-256 is not the
 * recorded one (an interrupted rewrite, or tampering): the caller then reads
 * the segment itself, whose own hash is checked, so a stale or planted
 * companion is never served.
 */
async function companionBytes(env: Env, segment: Segment, format: CompanionFormat, expected: string | null): Promise<Uint8Array | null> {
  if (!expected) return null;
  const key = companionKey(segment.object_key, format);
  const bytes = await readSealed(env, key, expected);
  if (bytes === "missing") console.warn(`archive companion ${key} is missing; exporting its segment row by row`);
  if (bytes === "hash_differs") console.warn(`archive companion ${key}: its SHA-256 differs from the ledger's record; exporting its segment row by row`);
  return typeof bytes === "string" ? null : bytes;
}
