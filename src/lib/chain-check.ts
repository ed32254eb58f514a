/** Checks of one row and one link of a chain, shared by verify and the public receipt check. */
import type { EventRow } from "../db/schema";
import { canonicalPayload, rowCommitment } from "./chain";
import { gapIsAuthentic, gapsEndingAt, type GapRecord } from "./retention";
import type { SigningKeyring } from "./signing-keys";

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

const encoder = new TextEncoder();
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

function hex(buffer: ArrayBuffer): string {
  const bytes = new Uint8Array(buffer);
  let out = "";
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]];
  return out;
}

/** piiCommitment()'s JCS text, built by hand as canonicalPayload() is: verify needs one per row. */
function personalDataText(row: ChainRow): string {
  const s = JSON.stringify;
  return (
    `{"actor_email":${s(row.actor_email)},"actor_id":${s(row.actor_id)},"actor_name":${s(row.actor_name)},` +
    `"ip_address":${s(row.ip_address)},"user_agent":${s(row.user_agent)}}`
  );
}

/**
 * The same result as rowCommitment(), chainHash() and checkSignature() of
 * src/lib/chain.ts and signing-keys.ts (a unit test holds them together), with
 * one encoding of the payload and fewer async layers: this runs once per event
 * of a whole-chain verify.
 */
export async function checkRow(ring: SigningKeyring, row: ChainRow): Promise<RowCheck> {
  const commitment =
    row.pii_salt === null
      ? await rowCommitment(row)
      : hex(await crypto.subtle.digest("SHA-256", encoder.encode(row.pii_salt + personalDataText(row))));
  // A row without its salt must be marked anonymized: otherwise its personal data is unaccounted for.
  if (commitment === null || (row.pii_salt === null && row.anonymized_at === null)) {
    return { hash: false, signature: row.signature === null ? null : false };
  }
  const payload = canonicalPayload(row, commitment);
  // prev_hash and payload in one buffer: the hash reads both, the signature the payload alone.
  const buffer = new Uint8Array(((row.prev_hash?.length ?? 0) + payload.length) * 3);
  const offset = row.prev_hash === null ? 0 : encoder.encodeInto(row.prev_hash, buffer).written;
  const end = offset + encoder.encodeInto(payload, buffer.subarray(offset)).written;
  const hash = hex(await crypto.subtle.digest("SHA-256", buffer.subarray(0, end)));
  if (row.signature === null) return { hash: hash === row.hash, signature: null };
  const match = /^v(\d+):([0-9a-f]{64})$/.exec(row.signature);
  const key = match ? ring.keys.get(Number(match[1])) : undefined;
  const signature = key !== undefined && hex(await crypto.subtle.sign("HMAC", key, buffer.subarray(offset, end))) === match![2];
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
