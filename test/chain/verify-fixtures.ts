import { env } from "cloudflare:workers";
import { insertEventsStatements } from "../../src/chain/event-insert";
import type { EventRow } from "../../src/db/schema";
import { piiCommitment, sealRow } from "../../src/sealing/payload";
import { loadKeyring } from "../../src/sealing/signing-keys";

export const K1 = "1:unit-test-signing-key-one";
export const K2 = "2:unit-test-signing-key-two";

/** Each fixture project's head, as its ledger would hold it. */
const heads = new Map<string, { seq: number; hash: string | null }>();

/** The anchor a ledger would give verify for a fixture project (signed from seq 1 unless said). */
export function fixtureAnchor(projectId: string, signedFrom = 1, erased: Record<number, string> = {}) {
  return {
    ...(heads.get(projectId) ?? { seq: 0, hash: null }),
    signedFrom,
    erasedAt: async () => erased,
    // Fixtures have no transparency log: no leaves, nothing judged against one.
    leavesAt: async () => ({ treeSize: 0, leaves: new Uint8Array(0) }),
    checkpoint: { tree_size: 0, root_hash: "", tiles_match_root: true },
  };
}

export async function newProject(): Promise<string> {
  const id = `u-${crypto.randomUUID()}`;
  await env.DB.prepare("INSERT INTO projects (id, created_at) VALUES (?, ?)").bind(id, new Date().toISOString()).run();
  return id;
}

/**
 * Appends rows the way the ledger does (same payload, hash and signature),
 * signed with the given SIGNING_KEYS value, so tests can pick key versions.
 */
export async function appendRows(projectId: string, keys: string, specs: Array<{ action?: string; occurred_at?: string }>) {
  const ring = await loadKeyring(keys);
  let { seq, hash: prev } = fixtureAnchor(projectId);
  const rows: EventRow[] = [];
  for (const spec of specs) {
    seq += 1;
    const pii = { actor_id: `u_${seq}`, actor_name: "Ada", actor_email: "ada@example.com", ip_address: "203.0.113.9", user_agent: "t/1" };
    const salt = `salt-${seq}`;
    const row: EventRow = await sealRow(
      {
        row_id: null as unknown as number,
        id: crypto.randomUUID(),
        project_id: projectId,
        seq,
        action: spec.action ?? "document.edited",
        organization: null,
        actor_type: "user",
        ...pii,
        targets: "[]",
        metadata: "{}",
        occurred_at: spec.occurred_at ?? new Date().toISOString(),
        received_at: new Date().toISOString(),
        pii_salt: salt,
        pii_commitment: await piiCommitment(salt, pii),
        prev_hash: prev,
        anonymized_at: null,
        changes: null,
        schema_version: null,
        schema_valid: null,
      },
      ring,
    );
    prev = row.hash;
    rows.push(row);
  }
  await env.DB.batch(insertEventsStatements(env.DB, rows));
  heads.set(projectId, { seq, hash: prev });
  return rows;
}
