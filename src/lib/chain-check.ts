/** Checks of one row and one link of a chain, shared by verify and the public receipt check. */
import type { EventRow } from "../db/schema";
import { canonicalPayload, chainHash, rowCommitment } from "./chain";
import { gapIsAuthentic, gapsEndingAt, type GapRecord } from "./retention";
import { checkSignature, type SigningKeyring } from "./signing-keys";

/** Everything the hash, the signature and the links cover; nothing else is read. */
export const CHAIN_COLUMNS =
  "id, project_id, seq, action, organization, actor_id, actor_type, actor_name, actor_email, targets, metadata, " +
  "occurred_at, ip_address, user_agent, pii_salt, pii_commitment, hash, prev_hash, signature, anonymized_at";

export type ChainRow = Omit<EventRow, "row_id" | "received_at">;
export type FailureReason = "hash_mismatch" | "signature_mismatch" | "chain_broken";

/** The earlier end of a link: a row, or the chain start (seq 0, no hash). */
export interface LinkStart {
  seq: number;
  hash: string | null;
}
/** The later end: a row, or the recorded head seen as the row after it. */
export interface LinkEnd {
  seq: number;
  prev_hash: string | null;
}
export const CHAIN_START: LinkStart = { seq: 0, hash: null };

export interface Head {
  seq: number;
  hash: string | null;
}

/** signature is null when the row carries none. */
export interface RowCheck {
  hash: boolean;
  signature: boolean | null;
}

export async function checkRow(ring: SigningKeyring, row: ChainRow): Promise<RowCheck> {
  const commitment = await rowCommitment(row);
  // A row without its salt must be marked anonymized: otherwise its personal data is unaccounted for.
  if (commitment === null || (row.pii_salt === null && row.anonymized_at === null)) {
    return { hash: false, signature: row.signature === null ? null : false };
  }
  const payload = canonicalPayload(row, commitment);
  const [hash, signature] = await Promise.all([
    chainHash(row.prev_hash, payload),
    row.signature === null ? null : checkSignature(ring, payload, row.signature),
  ]);
  return { hash: hash === row.hash, signature };
}

type GapLookup = (lastHash: string) => Promise<GapRecord[]>;

/** Adjacent rows must link by hash; a hole in seq only when a signed gap record bridges exactly it. */
export async function checkLink(ring: SigningKeyring, start: LinkStart, end: LinkEnd, gaps: GapLookup) {
  if (end.seq === start.seq + 1) return { ok: end.prev_hash === start.hash, gap: null };
  if (end.seq <= start.seq || end.prev_hash === null) return { ok: false, gap: null };
  for (const gap of await gaps(end.prev_hash)) {
    const exact = gap.first_seq === start.seq + 1 && gap.last_seq === end.seq - 1 && gap.before_hash === start.hash;
    if (exact && (await gapIsAuthentic(ring, gap))) return { ok: true, gap };
  }
  return { ok: false, gap: null };
}

export function gapLookup(db: D1Database, projectId: string): GapLookup {
  return async (hash) => (await gapsEndingAt(db, projectId, [hash])).get(hash) ?? [];
}

export async function readHead(db: D1Database, projectId: string): Promise<Head> {
  const row = await db
    .prepare("SELECT head_seq, head_hash FROM projects WHERE id = ?")
    .bind(projectId)
    .first<{ head_seq: number; head_hash: string | null }>();
  return { seq: row?.head_seq ?? 0, hash: row?.head_hash ?? null };
}

type Neighbour = LinkStart & LinkEnd & { id: string; occurred_at: string };
const NEIGHBOUR = "SELECT id, seq, hash, prev_hash, occurred_at FROM events WHERE project_id = ?";

/** The nearest row before seq (it may sit across a purged hole). */
export function rowBefore(db: D1Database, projectId: string, seq: number): Promise<Neighbour | null> {
  return db.prepare(`${NEIGHBOUR} AND seq < ? ORDER BY seq DESC LIMIT 1`).bind(projectId, seq).first<Neighbour>();
}

/** The nearest row after seq, up to the head (rows past it are not part of the chain yet). */
export function rowAfter(db: D1Database, projectId: string, seq: number, headSeq: number): Promise<Neighbour | null> {
  return db
    .prepare(`${NEIGHBOUR} AND seq > ? AND seq <= ? ORDER BY seq LIMIT 1`)
    .bind(projectId, seq, headSeq)
    .first<Neighbour>();
}

/** The first row past the recorded head: planted, or left over from a rolled-back head. */
export function rowPastHead(db: D1Database, projectId: string) {
  return db
    .prepare(
      "SELECT e.id, e.occurred_at FROM events e JOIN projects p ON p.id = e.project_id " +
        "WHERE e.project_id = ? AND e.seq > p.head_seq ORDER BY e.seq LIMIT 1",
    )
    .bind(projectId)
    .first<{ id: string; occurred_at: string }>();
}
