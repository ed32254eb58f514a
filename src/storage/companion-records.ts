import type { CompanionFormat } from "./archive-segments";

/**
 * What the ledger vouches for about export companions, kept in its own SQLite
 * storage (like its erasure records): for a segment object's SHA-256, the
 * SHA-256 of each companion rendered from exactly those rows. Someone who can
 * write D1 and R2 can replace a companion and the hash in its index row, but
 * not this record, so an export serves a companion only when its bytes hash
 * to what the ledger recorded for the segment the index row names, and verify
 * checks the stored companions against it. A record is written only by code
 * that rendered the companions itself from the segment's rows, under the
 * ledger's commit lock (sealing, and the archiver's backfill). Keyed by the
 * segment's hash, so a record never speaks for another version of a segment
 * (an erasure rewrite, an interrupted step).
 */
export type TrustedCompanions = Record<string, Record<CompanionFormat, string>>;

/**
 * The export line formats' version. Companions rendered in an older one (before
 * the catalog's columns, issue 35) are not served: their segments export row by
 * row, in today's columns, until the archiver renders them again.
 */
export const COMPANION_FORMAT = 2;

export class CompanionRecords {
  constructor(private readonly sql: SqlStorage) {
    sql.exec("CREATE TABLE IF NOT EXISTS archive_companions (segment_sha256 TEXT PRIMARY KEY, csv_sha256 TEXT NOT NULL, json_sha256 TEXT NOT NULL)");
    const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('archive_companions')").toArray();
    if (!columns.some((c) => c.name === "format")) sql.exec("ALTER TABLE archive_companions ADD COLUMN format INTEGER NOT NULL DEFAULT 1");
  }

  record(segmentSha256: string, hashes: Record<CompanionFormat, string>): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO archive_companions (segment_sha256, csv_sha256, json_sha256, format) VALUES (?, ?, ?, ?)",
      segmentSha256, hashes.csv, hashes.json, COMPANION_FORMAT,
    );
  }

  /** The recorded companion hashes of these segment hashes (absent: none recorded). */
  lookup(segmentSha256s: string[]): TrustedCompanions {
    const out: TrustedCompanions = {};
    if (segmentSha256s.length === 0) return out;
    const cursor = this.sql.exec<{ segment_sha256: string; csv_sha256: string; json_sha256: string }>(
      "SELECT segment_sha256, csv_sha256, json_sha256 FROM archive_companions WHERE segment_sha256 IN (SELECT value FROM json_each(?)) AND format = ?",
      JSON.stringify(segmentSha256s), COMPANION_FORMAT,
    );
    for (const row of cursor) out[row.segment_sha256] = { csv: row.csv_sha256, json: row.json_sha256 };
    return out;
  }

  /** Drops the records of segment versions no index row names any more (rewritten, retired, or brought back hot). */
  keepOnly(segmentSha256s: string[]): void {
    this.sql.exec("DELETE FROM archive_companions WHERE segment_sha256 NOT IN (SELECT value FROM json_each(?))", JSON.stringify(segmentSha256s));
  }
}
