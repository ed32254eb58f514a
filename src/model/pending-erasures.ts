import { erasableSql, isErasable } from "./erasable";
import { sha256Hex } from "../lib/crypto";

/**
 * Erasures still being applied (migrations/0016_pending_erasures.sql): an
 * erasure answers at once and its job scrubs the stored rows in bounded
 * steps (src/chain/erasure-steps.ts); until the job has finished, every read
 * scrubs the rows a pending erasure covers as they are served, exactly as the
 * job will scrub them (the same fields nulled, the same anonymized_at), so no
 * erased value is served before, during or after the job.
 *
 * A row is covered when its seq is at most the erasure's through_seq (the
 * head when it was accepted), its organization is in the erasure's scope,
 * sha256("<by>:<actor id or e-mail>") is the erasure's subject hash (the
 * table never holds the clear value), and it is not one of Witness's own
 * records (src/model/erasable.ts), which the job never scrubs either. Hot
 * reads learn of pending erasures from PENDING_COLUMN, a column of the very
 * query that reads the rows, so a project without one pays no extra query
 * and hashes nothing; reads of the archive take the segment's pending list
 * the same way (PENDING_FOR_SEGMENT) or, where no query of theirs fits, one
 * lookup (pendingOf) only once they found archived rows.
 */
export type PendingEntry = [by: "id" | "email", subject: string, erasedAt: string, organization: string | null, throughSeq: number];

const ENTRY = "json_array(p.by, p.subject_sha256, p.erased_at, p.organization, p.through_seq)";

/** Per row of `events e`: the pending erasures that may cover it, as JSON; NULL (nearly always) when none may. */
export const PENDING_COLUMN =
  `(SELECT nullif(json_group_array(${ENTRY}), '[]') FROM pending_erasures p WHERE p.project_id = e.project_id AND e.seq <= p.through_seq ` +
  "AND (p.organization IS NULL OR p.organization = e.organization) AND (CASE p.by WHEN 'id' THEN e.actor_id ELSE e.actor_email END) IS NOT NULL " +
  `AND ${erasableSql("e")})`;

/** Per row of `archive_segments s`: the pending erasures that may cover some of its rows, as JSON, or NULL. */
export const PENDING_FOR_SEGMENT =
  `(SELECT nullif(json_group_array(${ENTRY}), '[]') FROM pending_erasures p WHERE p.project_id = s.project_id AND p.through_seq >= s.first_seq)`;

/** The project's pending erasures (archived rows found without a query to carry PENDING_FOR_SEGMENT). */
export async function pendingOf(db: D1Database, projectId: string): Promise<PendingEntry[]> {
  return db
    .prepare("SELECT by, subject_sha256, erased_at, organization, through_seq FROM pending_erasures WHERE project_id = ?")
    .bind(projectId)
    .raw<PendingEntry>();
}

/** The fields an erasure scrubs, and what decides whether it covers a row. */
export interface ErasableRow {
  seq: number;
  /** Absent only on hot rows read with PENDING_COLUMN, which already leaves self-audit records out. */
  action?: string;
  organization: string | null;
  actor_id: string | null;
  actor_name?: string | null;
  actor_email: string | null;
  ip_address?: string | null;
  user_agent?: string | null;
  pii_salt?: string | null;
  anonymized_at?: string | null;
}

/** Scrubbed copy -> the stored row it was made from: a receipt checks the stored row and shows the scrubbed one. */
const originals = new WeakMap<object, object>();

export function wasScrubbed(row: object): boolean {
  return originals.has(row);
}

export function originalOf<T extends object>(row: T): T {
  return (originals.get(row) as T | undefined) ?? row;
}

/** The row as the erasure's job leaves it: personal data and salt gone, the commitment and everything else kept. */
export function scrubbed<T extends ErasableRow>(row: T, erasedAt: string): T {
  const out = { ...row, actor_id: null, actor_name: null, actor_email: null, ip_address: null, user_agent: null, anonymized_at: erasedAt };
  if ("pii_salt" in row) out.pii_salt = null;
  originals.set(out, row);
  return out;
}

const parsed = new Map<string, PendingEntry[]>();

/** A PENDING_COLUMN / PENDING_FOR_SEGMENT value; the same few texts repeat on every row, so each is parsed once. */
export function parsePending(json: unknown): PendingEntry[] | null {
  if (typeof json !== "string") return null;
  let entries = parsed.get(json);
  if (!entries) {
    entries = JSON.parse(json) as PendingEntry[];
    if (parsed.size > 100) parsed.clear();
    parsed.set(json, entries);
  }
  return entries;
}

/** Applies pending erasures to rows; hashes each distinct actor value once. */
export class PendingScrub {
  private readonly hashes = new Map<string, Promise<string>>();

  /** The entry covering the row, or null. */
  async covering(row: ErasableRow, entries: readonly PendingEntry[]): Promise<PendingEntry | null> {
    if (row.anonymized_at || (row.action !== undefined && !isErasable(row.action))) return null;
    for (const entry of entries) {
      const [by, subject, , organization, through] = entry;
      if (row.seq > through || (organization !== null && row.organization !== organization)) continue;
      const value = by === "id" ? row.actor_id : row.actor_email;
      if (value === null) continue;
      const text = `${by}:${value}`;
      let hash = this.hashes.get(text);
      if (!hash) this.hashes.set(text, (hash = sha256Hex(text)));
      if ((await hash) === subject) return entry;
    }
    return null;
  }

  /** Each row as it may be served: scrubbed when a pending erasure covers it. entriesOf: the entries that may cover row i. */
  async rows<T extends ErasableRow>(rows: T[], entriesOf: (row: T, i: number) => readonly PendingEntry[] | null): Promise<T[]> {
    let out: T[] | null = null;
    for (let i = 0; i < rows.length; i++) {
      const entries = entriesOf(rows[i], i);
      if (!entries || entries.length === 0) continue;
      const entry = await this.covering(rows[i], entries);
      if (!entry) continue;
      out ??= [...rows];
      out[i] = scrubbed(rows[i], entry[2]);
    }
    return out ?? rows;
  }
}

/** Rows read with PENDING_COLUMN at `at` in their raw cells. */
export function scrubByColumn<T extends ErasableRow>(rows: T[], cells: unknown[][], at: number): Promise<T[]> {
  if (!cells.some((c) => c[at] !== null)) return Promise.resolve(rows);
  return new PendingScrub().rows(rows, (_row, i) => parsePending(cells[i][at]));
}

/** Archived rows of one project, against its pending erasures (one lookup, only when there are rows). */
export async function scrubArchived<T extends ErasableRow>(db: D1Database, projectId: string, rows: T[]): Promise<T[]> {
  if (rows.length === 0) return rows;
  const entries = await pendingOf(db, projectId);
  if (entries.length === 0) return rows;
  return new PendingScrub().rows(rows, () => entries);
}

/** Makes an accepted erasure visible to every read (idempotent: a resumed ledger may repeat it). */
export function pendingInsert(
  db: D1Database,
  projectId: string,
  e: { erasure_id: number; by: "id" | "email"; subject_sha256: string; organization: string | null; erased_at: string; through_seq: number },
): D1PreparedStatement {
  return db
    .prepare(
      "INSERT OR IGNORE INTO pending_erasures (project_id, erasure_id, by, subject_sha256, organization, erased_at, through_seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(projectId, e.erasure_id, e.by, e.subject_sha256, e.organization, e.erased_at, e.through_seq);
}

/** The job's last step: the rows are scrubbed for good, reads stop applying it. */
export function pendingDelete(db: D1Database, projectId: string, erasureId: number): D1PreparedStatement {
  return db.prepare("DELETE FROM pending_erasures WHERE project_id = ? AND erasure_id = ?").bind(projectId, erasureId);
}

/** PENDING_COLUMN for reads that take rows as objects (.all()): the value lands in `_pending`. */
export const PENDING_AS = `${PENDING_COLUMN} AS _pending`;

/** Rows read as objects with PENDING_AS, or segments read with PENDING_FOR_SEGMENT AS _pending. */
export function scrubObjects<T extends ErasableRow>(rows: T[], pendingOf: (row: T) => unknown = (row) => (row as { _pending?: unknown })._pending): Promise<T[]> {
  if (!rows.some((r) => typeof pendingOf(r) === "string")) return Promise.resolve(rows);
  return new PendingScrub().rows(rows, (row) => parsePending(pendingOf(row)));
}
