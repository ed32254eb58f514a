import type { EventRow } from "../db/schema";
import { randomHex, uuidV7 } from "../lib/crypto";
import type { NewEvent } from "../schemas/event";
import type { Head } from "./chain-check";
import { piiCommitment, sealRow } from "./payload";
import type { SigningKeyring } from "./signing-keys";

/** The rows of new events after `head`: ids, seqs, personal-data commitments, hashes and signatures. */
export async function sealEvents(ring: SigningKeyring, projectId: string, head: Head, events: NewEvent[]): Promise<EventRow[]> {
  const receivedAt = new Date().toISOString();
  let { seq, hash: prevHash } = head;
  const rows: EventRow[] = [];
  for (const e of events) {
    seq += 1;
    const salt = randomHex(16);
    const row = await sealRow(
      {
        ...e,
        row_id: null as unknown as number,
        id: uuidV7(),
        project_id: projectId,
        seq,
        occurred_at: e.occurred_at ?? receivedAt,
        received_at: receivedAt,
        pii_salt: salt,
        pii_commitment: await piiCommitment(salt, e),
        prev_hash: prevHash,
        anonymized_at: null,
      },
      ring,
    );
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
