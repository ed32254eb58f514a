import type { EventRow } from "../db/schema";

/** The one event shape of ingest, get, list, search and JSON export. */
export function toEvent(row: EventRow) {
  const hasActor = row.actor_id !== null || row.actor_type !== null || row.actor_name !== null || row.actor_email !== null;
  return {
    id: row.id,
    project_id: row.project_id,
    seq: row.seq,
    action: row.action,
    organization: row.organization,
    actor: hasActor ? { id: row.actor_id, type: row.actor_type, name: row.actor_name, email: row.actor_email } : null,
    targets: JSON.parse(row.targets) as Array<{ type: string; id: string; name: string | null }>,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    occurred_at: row.occurred_at,
    ip_address: row.ip_address,
    user_agent: row.user_agent,
    hash: row.hash,
    prev_hash: row.prev_hash,
    signature: row.signature,
    pii_commitment: row.pii_commitment,
    anonymized_at: row.anonymized_at,
  };
}

export type Event = ReturnType<typeof toEvent>;
