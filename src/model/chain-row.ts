import type { EventRow } from "../db/schema";

/** Everything the hash, the signature and the links cover; nothing else is read. */
export const CHAIN_COLUMNS =
  "id, project_id, seq, action, organization, actor_id, actor_type, actor_name, actor_email, targets, metadata, " +
  "occurred_at, ip_address, user_agent, pii_salt, pii_commitment, hash, prev_hash, signature, anonymized_at, " +
  "changes, schema_version, schema_valid";

export type ChainRow = Omit<EventRow, "row_id" | "received_at">;

/**
 * A row of `SELECT ${CHAIN_COLUMNS}` fetched with raw(). Verify reads every row
 * of a project: one object literal of a fixed shape per row is much cheaper
 * than D1's generic column-by-column object building.
 */
export function chainRowOf(r: unknown[]): ChainRow {
  return {
    id: r[0] as string,
    project_id: r[1] as string,
    seq: r[2] as number,
    action: r[3] as string,
    organization: r[4] as string | null,
    actor_id: r[5] as string | null,
    actor_type: r[6] as string | null,
    actor_name: r[7] as string | null,
    actor_email: r[8] as string | null,
    targets: r[9] as string,
    metadata: r[10] as string,
    occurred_at: r[11] as string,
    ip_address: r[12] as string | null,
    user_agent: r[13] as string | null,
    pii_salt: r[14] as string | null,
    pii_commitment: r[15] as string,
    hash: r[16] as string,
    prev_hash: r[17] as string | null,
    signature: r[18] as string | null,
    anonymized_at: r[19] as string | null,
    changes: r[20] as string | null,
    schema_version: r[21] as number | null,
    schema_valid: r[22] as number | null,
  };
}
