import { canonicalize } from "../sealing/canonical";
import { RunningErasures, type ErasureBy } from "./erasure-running";
import { sign, type SigningKeyring } from "../sealing/signing-keys";

/**
 * Erasure records, kept in the ledger's own SQLite storage: D1 only holds the
 * scrubbed rows. Verify accepts an anonymized row only when a record here
 * covers its seq with the same anonymized_at, so nulling a row's personal data
 * in D1 and setting anonymized_at is no longer a way to hide an edit.
 * The subject (actor id or e-mail) is kept only as a SHA-256, so the record of
 * an erasure does not keep the personal data it erased.
 */

export interface ErasureRecord {
  id: number;
  by: ErasureBy;
  subject_sha256: string;
  organization: string | null;
  erased_at: string;
  count: number;
  /** `v<N>:` HMAC of the record's canonical form, for copies that leave the ledger. */
  signature: string | null;
}

export class ErasureRecords {
  /** Erasures whose job is still applying them (src/chain/erasure-running.ts). */
  readonly running: RunningErasures;

  constructor(private readonly sql: SqlStorage) {
    sql.exec(
      "CREATE TABLE IF NOT EXISTS erasures (id INTEGER PRIMARY KEY, by TEXT NOT NULL, subject_sha256 TEXT NOT NULL, " +
        "organization TEXT, erased_at TEXT NOT NULL, count INTEGER NOT NULL DEFAULT 0, signature TEXT)",
    );
    // The newest erasure covering a seq wins: a retried erasure re-covers the rows an interrupted one had claimed.
    sql.exec("CREATE TABLE IF NOT EXISTS erased_rows (seq INTEGER PRIMARY KEY, erasure_id INTEGER NOT NULL)");
    sql.exec("CREATE INDEX IF NOT EXISTS erased_rows_erasure_idx ON erased_rows (erasure_id)");
    this.running = new RunningErasures(sql);
  }

  /** The rows this erasure covers: what it anonymized, each row once however often a crashed step was repeated. */
  covered(erasureId: number): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM erased_rows WHERE erasure_id = ?", erasureId).one().n;
  }

  begin(by: ErasureBy, subjectSha256: string, organization: string | null, erasedAt: string): number {
    const row = this.sql
      .exec<{ id: number }>(
        "INSERT INTO erasures (by, subject_sha256, organization, erased_at) VALUES (?, ?, ?, ?) RETURNING id",
        by,
        subjectSha256,
        organization,
        erasedAt,
      )
      .one();
    return row.id;
  }

  /** Claims seqs for an erasure before D1 scrubs them, so a crash in between never leaves an unrecorded scrub. */
  cover(erasureId: number, seqs: number[]): void {
    if (seqs.length === 0) return;
    this.sql.exec(
      "INSERT OR REPLACE INTO erased_rows (seq, erasure_id) SELECT value, ? FROM json_each(?)",
      erasureId,
      JSON.stringify(seqs),
    );
  }

  /** also: storage writes that must land with the finished record (same synchronous step, so one storage transaction). */
  async finish(ring: SigningKeyring, erasureId: number, count: number, also?: (record: ErasureRecord) => void): Promise<ErasureRecord> {
    const record = this.sql.exec<Omit<ErasureRecord, "count" | "signature">>(
      "SELECT id, by, subject_sha256, organization, erased_at FROM erasures WHERE id = ?",
      erasureId,
    ).one();
    const signature = await sign(ring, erasurePayload({ ...record, count }));
    this.sql.exec("UPDATE erasures SET count = ?, signature = ? WHERE id = ?", count, signature, erasureId);
    also?.({ ...record, count, signature });
    return { ...record, count, signature };
  }

  /** anonymized_at as recorded, per seq, for the seqs that an erasure covers. */
  erasedAt(seqs: number[]): Record<number, string> {
    const out: Record<number, string> = {};
    if (seqs.length === 0) return out;
    const cursor = this.sql.exec<{ seq: number; erased_at: string }>(
      "SELECT r.seq, e.erased_at FROM erased_rows r JOIN erasures e ON e.id = r.erasure_id WHERE r.seq IN (SELECT value FROM json_each(?))",
      JSON.stringify(seqs),
    );
    for (const row of cursor) out[row.seq] = row.erased_at;
    return out;
  }

  /** The erasures of one subject (by its SHA-256, as recorded), oldest first. */
  ofSubject(by: ErasureBy, subjectSha256: string): ErasureRecord[] {
    return this.sql
      .exec("SELECT id, by, subject_sha256, organization, erased_at, count, signature FROM erasures WHERE by = ? AND subject_sha256 = ? ORDER BY id", by, subjectSha256)
      .toArray() as unknown as ErasureRecord[];
  }

  list(): ErasureRecord[] {
    return this.sql
      .exec("SELECT id, by, subject_sha256, organization, erased_at, count, signature FROM erasures ORDER BY id")
      .toArray() as unknown as ErasureRecord[];
  }
}

export function erasurePayload(r: Omit<ErasureRecord, "signature">): string {
  return canonicalize({
    by: r.by,
    count: r.count,
    erased_at: r.erased_at,
    id: r.id,
    organization: r.organization,
    subject_sha256: r.subject_sha256,
    type: "witness.erasure.v1",
  });
}
