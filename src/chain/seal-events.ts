import type { EventRow } from "../db/schema";
import { scratchEncoder } from "../lib/scratch-encoder";
import { toHex } from "../lib/crypto";
import { idTag, mintEventId } from "../model/event-id";
import type { NewEvent } from "../model/new-event";
import type { Head } from "./chain-check";
import { canonicalPayload, commitmentDigest, rowDigests } from "../sealing/payload";
import type { SigningKeyring } from "../sealing/signing-keys";

/** Sealing encodes each event once, into one reused buffer (see scratchEncoder). */
const scratch = scratchEncoder();

/**
 * The rows of new events after `head`: ids, seqs, personal-data commitments,
 * hashes and signatures. The same values as sealRow() and piiCommitment() of
 * payload.ts (test/chain/seal-events.test.ts holds them together), made with
 * one encoding of each payload, no per-event buffers or object copies, and
 * the hash and signature awaited together: this runs once per ingested event.
 */
export async function sealEvents(
  ring: SigningKeyring,
  projectId: string,
  head: Head,
  events: NewEvent[],
  receivedAt = new Date().toISOString(),
): Promise<EventRow[]> {
  const tag = await idTag(projectId);
  const key = ring.keys.get(ring.newest)!;
  const version = `v${ring.newest}:`;
  const saltBytes = new Uint8Array(16);
  // No index refuses a repeated id any more (migration 0029): a commit's ids share a millisecond, so they are kept distinct here.
  const minted = new Set<string>();
  let { seq, hash: prevHash } = head;
  const rows: EventRow[] = [];
  for (const e of events) {
    seq += 1;
    const salt = toHex(crypto.getRandomValues(saltBytes));
    const commitment = toHex(await commitmentDigest(scratch, salt, e));
    const row: EventRow = {
      row_id: null as unknown as number,
      // Located ids (model/event-id.ts): found once archived without an index row of their own.
      id: distinctId(minted, receivedAt, tag),
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
      changes: e.changes ?? null,
      schema_version: e.schema_version ?? null,
      schema_valid: e.schema_valid == null ? null : e.schema_valid ? 1 : 0,
    };
    const digests = rowDigests(scratch, prevHash, canonicalPayload(row, commitment), key);
    const [hash, mac] = await Promise.all([digests.hash, digests.mac!]);
    row.hash = toHex(hash);
    row.signature = version + toHex(mac);
    prevHash = row.hash;
    rows.push(row);
  }
  return rows;
}

/** A located id none of this commit's earlier ids has (42 random bits: a second draw is almost never needed). */
function distinctId(minted: Set<string>, receivedAt: string, tag: number): string {
  let id = mintEventId(receivedAt, tag);
  while (minted.has(id)) id = mintEventId(receivedAt, tag);
  minted.add(id);
  return id;
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
