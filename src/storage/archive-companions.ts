import { sha256Hex } from "../lib/crypto";
import { FORMATS } from "../model/export-formats";
import { indexRows, LACKS_IDS } from "./archive-ids";
import { ArchiveDamagedError, companionKey, gzip, readSegment, resealSegment, sealSegment, type ArchivedRow, type CompanionFormat, type Segment } from "./archive-segments";
import type { CompanionRecords } from "./companion-records";
import { EVENT_COLUMNS } from "./shard-copy";

/**
 * Export companions: next to each sealed segment, its rows already rendered
 * the way an export writes them (CSV lines; JSON elements joined by commas,
 * without the array's brackets), newest first exactly as the export orders
 * them, gzip-compressed. Rendering costs the export more than anything else
 * it does with an archived row, so it is done once, when the cron seals the
 * segment (off every request path), and an export that wants the whole
 * segment streams the companion's bytes as they are (archive-export.ts).
 *
 * The segment object stays the source of truth: a companion is only served
 * while its SHA-256 equals the one the project's ledger recorded for the
 * segment the index row names (companion-records.ts); the index row keeps a
 * copy of the hashes for operators. Objects first, then the ledger's record,
 * then the index row.
 */

export interface SealedSegment {
  segment: Segment;
  body: Uint8Array;
  companions: Record<CompanionFormat, Uint8Array>;
}

const SEQ = EVENT_COLUMNS.indexOf("seq");
const OCCURRED = EVENT_COLUMNS.indexOf("occurred_at");
const FORMAT_NAMES: CompanionFormat[] = ["csv", "json"];

/** Rows as arrays in EVENT_COLUMNS order, rendered in the export's order (occurred_at DESC, seq DESC). */
export async function renderCompanions(rows: unknown[][]): Promise<Record<CompanionFormat, Uint8Array>> {
  const ordered = [...rows].sort((a, b) => {
    const x = a[OCCURRED] as string;
    const y = b[OCCURRED] as string;
    return x === y ? (b[SEQ] as number) - (a[SEQ] as number) : x < y ? 1 : -1;
  });
  const out = {} as Record<CompanionFormat, Uint8Array>;
  for (const name of FORMAT_NAMES) {
    const format = FORMATS[name];
    const at = format.columns.map((c) => EVENT_COLUMNS.indexOf(c as (typeof EVENT_COLUMNS)[number]));
    // `first` true: the separator before an element depends on where the companion lands in an export, so the export adds it.
    const text = ordered.map((r) => format.line(at.map((i) => r[i]), true)).join(format.between);
    out[name] = await gzip(text);
  }
  return out;
}

async function withCompanions(sealed: { segment: Segment; body: Uint8Array }, rows: unknown[][]): Promise<SealedSegment> {
  const companions = await renderCompanions(rows);
  const [csv, json] = await Promise.all([sha256Hex(companions.csv), sha256Hex(companions.json)]);
  const segment: Segment = {
    ...sealed.segment,
    csv_sha256: csv,
    csv_bytes: companions.csv.byteLength,
    json_sha256: json,
    json_bytes: companions.json.byteLength,
  };
  return { segment, body: sealed.body, companions };
}

/** sealSegment, plus the companions and their hashes in the index row. */
export async function sealWithCompanions(projectId: string, rows: unknown[][], now: string): Promise<SealedSegment> {
  return withCompanions(await sealSegment(projectId, rows, now), rows);
}

/** resealSegment (erasure rewrites), plus fresh companions: the old ones show what was erased. */
export async function resealWithCompanions(projectId: string, rows: ArchivedRow[], firstSeq: number, now: string): Promise<SealedSegment | null> {
  const sealed = await resealSegment(projectId, rows, firstSeq, now);
  if (!sealed) return null;
  return withCompanions(sealed, rows.map((r) => EVENT_COLUMNS.map((c) => r[c])));
}

/**
 * Writes the segment object and both companions under the segment's
 * object_key. Callers write the index row only after this resolves, so an
 * index row never names a hash whose object was not written.
 */
export async function putSealed(env: Env, sealed: SealedSegment): Promise<void> {
  const s = sealed.segment;
  await Promise.all([env.ARCHIVE.put(s.object_key, sealed.body, { sha256: s.sha256, ...gz("application/x-ndjson") }), putCompanions(env, s, sealed.companions)]);
}

const gz = (contentType: string) => ({ httpMetadata: { contentType, contentEncoding: "gzip" } });

function putCompanions(env: Env, s: Segment, companions: Record<CompanionFormat, Uint8Array>) {
  return Promise.all([
    env.ARCHIVE.put(companionKey(s.object_key, "csv"), companions.csv, { sha256: s.csv_sha256!, ...gz(FORMATS.csv.contentType) }),
    env.ARCHIVE.put(companionKey(s.object_key, "json"), companions.json, { sha256: s.json_sha256!, ...gz(FORMATS.json.contentType) }),
  ]);
}

/** Candidates looked at per step: a damaged segment is skipped (verify reports it), not retried forever in one step. */
const BACKFILL_TRIES = 5;

/**
 * One segment that lacks something the archiver now keeps gets it, so an
 * upgraded archive is as fast and as checkable as a new one; false when none
 * is left. A segment qualifies when the shard's id index has no entry for it
 * (sealed before archive-ids.ts), when the ledger has no record of its
 * companions (sealed before companion-records.ts, or rewritten by an erasure,
 * which cannot reach the ledger's records), or when its index row has no
 * companion hashes. Its companions are rendered again from its rows (nothing
 * stored before is trusted), written, recorded by the ledger, and the index
 * row updated only if it still names the segment that was rendered. Run by
 * the archiver under the ledger's commit lock, so no erasure rewrites the
 * segment meanwhile (a companion written for a segment being replaced would
 * outlive it, personal data included).
 */
export async function backfillSegment(env: Env, db: D1Database, projectId: string, companions: CompanionRecords): Promise<boolean> {
  const { results } = await db
    .prepare(`SELECT s.first_seq, s.sha256, s.csv_sha256 IS NULL OR s.json_sha256 IS NULL OR ${LACKS_IDS} AS lacking FROM archive_segments s WHERE s.project_id = ? ORDER BY s.first_seq`)
    .bind(projectId)
    .all<{ first_seq: number; sha256: string; lacking: number }>();
  const recorded = companions.lookup(results.map((r) => r.sha256));
  companions.keepOnly(results.map((r) => r.sha256));
  const due = results.filter((r) => r.lacking === 1 || !recorded[r.sha256]).slice(0, BACKFILL_TRIES);
  for (const { first_seq } of due) {
    const segment = (await db.prepare("SELECT * FROM archive_segments WHERE project_id = ? AND first_seq = ?").bind(projectId, first_seq).first<Segment>())!;
    let rows: ArchivedRow[];
    try {
      rows = await readSegment(env, segment);
    } catch (error) {
      if (!(error instanceof ArchiveDamagedError)) throw error;
      console.warn(`archive backfill skips a damaged segment: ${error.message}`);
      continue;
    }
    const { segment: rendered, companions: bytes } = await withCompanions({ segment, body: new Uint8Array() }, rows.map((r) => EVENT_COLUMNS.map((c) => r[c])));
    await putCompanions(env, rendered, bytes);
    companions.record(segment.sha256, { csv: rendered.csv_sha256!, json: rendered.json_sha256! });
    await db.batch([
      db
        .prepare("UPDATE archive_segments SET csv_sha256 = ?, csv_bytes = ?, json_sha256 = ?, json_bytes = ? WHERE project_id = ? AND first_seq = ? AND sha256 = ?")
        .bind(rendered.csv_sha256, rendered.csv_bytes, rendered.json_sha256, rendered.json_bytes, projectId, segment.first_seq, segment.sha256),
      indexRows(db, projectId, rows),
    ]);
    return true;
  }
  return false;
}

/** Every object a segment's index row names (deleting a companion that was never written is harmless). */
export function segmentObjects(objectKey: string): string[] {
  return [objectKey, companionKey(objectKey, "csv"), companionKey(objectKey, "json")];
}
