import type { EventRow } from "../db/schema";
import { sha256Hex } from "../lib/crypto";
import { EVENT_COLUMNS } from "./shard-copy";
import { segmentBounds } from "./segment-bounds";

/**
 * The cold tier: sealed segments in R2 (ARCHIVE), each one contiguous seq
 * range of one project's events as gzip-compressed JSON lines (one stored row
 * per line, every column but row_id), with an index row on the project's
 * shard (archive_segments). A segment is only rewritten by an erasure or a
 * purge, through the ledger, which also updates its index row.
 *
 * The archive's entry point. The ledger seals segments (archive-run.ts, on its
 * alarm: archive-upkeep.ts), found by id through the ids themselves or, for
 * older ids, the id index (archive-lookup.ts, archive-ids.ts), with summaries
 * (archive-summary.ts, summary-*.ts) and export companions
 * (archive-companions.ts, companion-*.ts); reads walk them with the hot rows
 * (archive-walk.ts, archive-lookup.ts, archive-export.ts); erasure rewrites
 * them (archive-erase.ts), retention through src/chain/retention-archive.ts;
 * archive-restore.ts, archive-sweep.ts and archive-check.ts repair and watch.
 */
export type ArchivedRow = Omit<EventRow, "row_id">;

export interface Segment {
  project_id: string;
  first_seq: number;
  last_seq: number;
  first_received_at: string;
  last_received_at: string;
  first_occurred_at: string;
  last_occurred_at: string;
  count: number;
  bytes: number;
  sha256: string;
  object_key: string;
  created_at: string;
  /** The export companions (archive-companions.ts); null on segments sealed before them. */
  csv_sha256: string | null;
  csv_bytes: number | null;
  json_sha256: string | null;
  json_bytes: number | null;
  /**
   * The project's id tag when every row's id is located (model/event-id.ts):
   * lookups by id find the segment by tag and receive time, and it has no
   * archive_ids rows. Null on segments with older ids, which keep theirs.
   */
  id_tag: number | null;
  /** Its first row's id (names the segment in an archive_damaged failure); null on segments sealed before it was kept. */
  first_id: string | null;
}

export type CompanionFormat = "csv" | "json";

/** A companion sits next to its segment and is renamed with it: an erasure rewrite gives all three new keys. */
export function companionKey(objectKey: string, format: CompanionFormat): string {
  return objectKey.replace(/\.jsonl\.gz$/, `.${format}.gz`);
}

/** One object per first seq: a re-run after a crash writes the same key again instead of a second copy. */
export function segmentKey(projectId: string, firstSeq: number): string {
  return `archive/${projectId}/${String(firstSeq).padStart(12, "0")}.jsonl.gz`;
}

/** Stored rows as arrays in EVENT_COLUMNS order (as D1's raw() gives them) to a sealed segment. */
export async function sealSegment(projectId: string, rows: unknown[][], now: string): Promise<{ segment: Segment; body: Uint8Array }> {
  const at = (name: (typeof EVENT_COLUMNS)[number]) => EVENT_COLUMNS.indexOf(name);
  const lines = rows.map((r) => JSON.stringify(Object.fromEntries(EVENT_COLUMNS.map((c, i) => [c, r[i]])))).join("\n");
  const body = await gzip(lines);
  const first = rows[0];
  const last = rows[rows.length - 1];
  const { id_tag, ...times } = await segmentBounds(
    projectId,
    rows.map((r) => ({ id: r[at("id")] as string, occurred_at: r[at("occurred_at")] as string, received_at: r[at("received_at")] as string })),
  );
  const segment: Segment = {
    project_id: projectId,
    first_seq: first[at("seq")] as number,
    last_seq: last[at("seq")] as number,
    ...times,
    count: rows.length,
    bytes: body.byteLength,
    sha256: await sha256Hex(body),
    object_key: segmentKey(projectId, first[at("seq")] as number),
    created_at: now,
    csv_sha256: null,
    csv_bytes: null,
    json_sha256: null,
    json_bytes: null,
    id_tag,
    first_id: first[at("id")] as string,
  };
  return { segment, body };
}

/** Re-seals rewritten rows (erasure, purge) into the segment's own key; null when no row is left. */
export async function resealSegment(projectId: string, rows: ArchivedRow[], firstSeq: number, now: string) {
  if (rows.length === 0) return null;
  const sealed = await sealSegment(projectId, rows.map((r) => EVENT_COLUMNS.map((c) => r[c])), now);
  // The key stays the segment's original first seq, even when a purge removed its first rows.
  sealed.segment.object_key = segmentKey(projectId, firstSeq);
  return sealed;
}

/** How every archive object (segments and their export companions) is stored. */
export async function gzip(text: string): Promise<Uint8Array> {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/**
 * An archive object with its gzip undone, once its SHA-256 is the one its
 * index row recorded; otherwise why not, for the caller to decide (a segment
 * must be there; a companion can fall back to its segment).
 */
export async function readSealed(env: Env, key: string, sha256: string): Promise<Uint8Array | "missing" | "hash_differs"> {
  const object = await env.ARCHIVE.get(key);
  if (!object) return "missing";
  const bytes = new Uint8Array(await object.arrayBuffer());
  if ((await sha256Hex(bytes)) !== sha256) return "hash_differs";
  return new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).arrayBuffer());
}

/**
 * The archived copy of a segment cannot be used: its object (or an export
 * companion the ledger vouches for) is missing, or its bytes are not the ones
 * recorded. Retrying does not help; verify reports it as `archive_damaged`,
 * get and receipts answer ARCHIVE_DAMAGED. `eventId` is the segment's first
 * event, when the shard's id index knows it (archive-ids.ts).
 */
export class ArchiveDamagedError extends Error {
  eventId: string | null = null;
  constructor(
    readonly segment: Segment,
    why: string,
  ) {
    super(`archive segment ${segment.object_key} (seq ${segment.first_seq}-${segment.last_seq}): ${why}`);
    this.name = "ArchiveDamagedError";
  }
}

const UTF8 = new TextDecoder();

/**
 * A segment's rows in seq order, checked against the SHA-256 its index row recorded. With
 * `keep`, only the rows whose stored line it keeps are parsed: a sparse filter then pays a
 * substring scan, not a JSON parse, for each row it does not want (keep must never drop a
 * row the caller would want: it is a necessary condition, see fieldNeedle).
 */
export async function readSegment(env: Env, segment: Segment, keep?: (line: string) => boolean): Promise<ArchivedRow[]> {
  const bytes = await readSealed(env, segment.object_key, segment.sha256);
  if (bytes === "missing") throw new ArchiveDamagedError(segment, "missing from the archive bucket");
  if (bytes === "hash_differs") throw new ArchiveDamagedError(segment, "its SHA-256 differs from its index row");
  const text = UTF8.decode(bytes);
  if (text === "") return [];
  const lines = text.split("\n");
  return (keep ? lines.filter(keep) : lines).map(parseLine);
}

/** A stored line as a row; lines sealed before the catalog's columns (migration 0021) lack them, which means null. */
function parseLine(line: string): ArchivedRow {
  const row = JSON.parse(line) as ArchivedRow;
  row.changes ??= null;
  row.schema_version ??= null;
  row.schema_valid ??= null;
  return row;
}

/** What a stored line holds when its `column` is exactly `value` (sealSegment writes JSON.stringify of the row, keys as named). */
export function fieldNeedle(column: keyof ArchivedRow, value: string): string {
  return `${JSON.stringify(column)}:${JSON.stringify(value)}`;
}

const SEGMENT_SELECT = "SELECT * FROM archive_segments WHERE project_id = ?";

/** Inclusive occurred_at bounds; null is open. */
export interface TimeWindow {
  from: string | null;
  to: string | null;
}

/** Segments holding seqs in (afterSeq, beforeSeq), in seq order; with a window, only those whose events may fall in it. */
export async function segmentsBetween(db: D1Database, projectId: string, afterSeq: number, beforeSeq = Number.MAX_SAFE_INTEGER, window?: TimeWindow): Promise<Segment[]> {
  const { results } = await db
    .prepare(`${SEGMENT_SELECT} AND last_seq > ? AND first_seq < ? AND (?4 IS NULL OR last_occurred_at >= ?4) AND (?5 IS NULL OR first_occurred_at <= ?5) ORDER BY first_seq`)
    .bind(projectId, afterSeq, beforeSeq, window?.from ?? null, window?.to ?? null)
    .all<Segment>();
  return results;
}

/** The highest archived seq (0 when nothing is archived): archiving continues after it. */
export async function archivedThrough(db: D1Database, projectId: string): Promise<number> {
  const row = await db.prepare("SELECT coalesce(max(last_seq), 0) AS s FROM archive_segments WHERE project_id = ?").bind(projectId).first<{ s: number }>();
  return row!.s;
}

/**
 * Archived rows with afterSeq < seq < beforeSeq, in seq order, at most `limit`.
 * The walkers (verify, export) call it for the seqs their hot page skipped:
 * read after the hot page, it sees every segment committed before that page
 * was read, so a row being archived meanwhile is seen once, in one tier.
 */
export async function archivedRows(env: Env, db: D1Database, projectId: string, afterSeq: number, limit: number, beforeSeq?: number): Promise<ArchivedRow[]> {
  const out: ArchivedRow[] = [];
  for (const segment of await segmentsBetween(db, projectId, afterSeq, beforeSeq)) {
    for (const row of await readSegment(env, segment)) {
      if (row.seq <= afterSeq || (beforeSeq !== undefined && row.seq >= beforeSeq)) continue;
      out.push(row);
      if (out.length >= limit) return out;
    }
  }
  return out;
}

/**
 * For list and search, which read the hot tier only: the receive time of the
 * newest archived event, or null when nothing is archived. Events received
 * after it are hot; older ones answer get, export and verify only.
 */
export async function hotSince(db: D1Database, projectId: string): Promise<string | null> {
  const row = await db
    .prepare("SELECT last_received_at AS t FROM archive_segments WHERE project_id = ? ORDER BY last_seq DESC LIMIT 1")
    .bind(projectId)
    .first<{ t: string }>();
  return row?.t ?? null;
}
