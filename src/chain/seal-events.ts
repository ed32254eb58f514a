import type { EventRow } from "../db/schema";
import { uuidV7 } from "../lib/crypto";
import type { NewEvent } from "../schemas/event";
import type { Head } from "./chain-check";
import { canonicalPayload, personalDataText } from "./payload";
import type { SigningKeyring } from "./signing-keys";

const encoder = new TextEncoder();
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

function hex(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]];
  return out;
}

/**
 * One scratch buffer for every digest of a seal, as checkRow (chain-check.ts)
 * has for verify: Web Crypto copies its input when called, so reusing it across
 * events, even across seals running concurrently, is safe.
 */
let scratch = new Uint8Array(16 * 1024);
function encodeAt(text: string, at: number): number {
  if (scratch.length < at + text.length * 3) {
    const grown = new Uint8Array(Math.max(scratch.length * 2, at + text.length * 3));
    grown.set(scratch.subarray(0, at));
    scratch = grown;
  }
  return at + encoder.encodeInto(text, scratch.subarray(at)).written;
}

/**
 * The rows of new events after `head`: ids, seqs, personal-data commitments,
 * hashes and signatures. The same values as sealRow() and piiCommitment() of
 * payload.ts (test/chain/seal-events.test.ts holds them together), made with
 * one encoding of each payload, no per-event buffers or object copies, and
 * the hash and signature awaited together: this runs once per ingested event.
 */
export async function sealEvents(ring: SigningKeyring, projectId: string, head: Head, events: NewEvent[]): Promise<EventRow[]> {
  const receivedAt = new Date().toISOString();
  const key = ring.keys.get(ring.newest)!;
  const version = `v${ring.newest}:`;
  const saltBytes = new Uint8Array(16);
  let { seq, hash: prevHash } = head;
  const rows: EventRow[] = [];
  for (const e of events) {
    seq += 1;
    const salt = hex(crypto.getRandomValues(saltBytes));
    const piiEnd = encodeAt(personalDataText(e), encodeAt(salt, 0));
    const commitment = hex(new Uint8Array(await crypto.subtle.digest("SHA-256", scratch.subarray(0, piiEnd))));
    const row: EventRow = {
      row_id: null as unknown as number,
      id: uuidV7(),
      project_id: projectId,
      seq,
      action: e.action,
      organization: e.organization,
      actor_id: e.actor_id,
      actor_type: e.actor_type,
      actor_name: e.actor_name,
      actor_email: e.actor_email,
      targets: e.targets,
      metadata: e.metadata,
      occurred_at: e.occurred_at ?? receivedAt,
      received_at: receivedAt,
      ip_address: e.ip_address,
      user_agent: e.user_agent,
      pii_salt: salt,
      pii_commitment: commitment,
      hash: "",
      prev_hash: prevHash,
      signature: null,
      anonymized_at: null,
    };
    // prev_hash and payload in one buffer: the hash reads both, the signature the payload alone.
    const offset = prevHash === null ? 0 : encodeAt(prevHash, 0);
    const end = encodeAt(canonicalPayload(row, commitment), offset);
    const [hash, mac] = await Promise.all([
      crypto.subtle.digest("SHA-256", scratch.subarray(0, end)),
      crypto.subtle.sign("HMAC", key, scratch.subarray(offset, end)),
    ]);
    row.hash = hex(new Uint8Array(hash));
    row.signature = version + hex(new Uint8Array(mac));
    prevHash = row.hash;
    rows.push(row);
  }
  return rows;
}

/** Statements that remember each keyed request's events and body hash, in the commit's own batch. */
export function idempotencyStatements(
  db: D1Database,
  projectId: string,
  keyed: Array<{ key: string; requestHash: string | null; rows: EventRow[] }>,
): D1PreparedStatement[] {
  const now = new Date().toISOString();
  return keyed.map(({ key, requestHash, rows }) =>
    db
      .prepare("INSERT OR REPLACE INTO idempotency_keys (project_id, key, event_ids, created_at, request_hash) VALUES (?, ?, ?, ?, ?)")
      .bind(projectId, key, JSON.stringify(rows.map((r) => r.id)), now, requestHash),
  );
}
