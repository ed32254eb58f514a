import { env } from "cloudflare:workers";
import { insertEventsStatements } from "../../src/chain/event-insert";
import type { EventRow } from "../../src/db/schema";
import { piiCommitment, sealRow } from "../../src/chain/payload";
import { loadKeyring } from "../../src/chain/signing-keys";

export const K1 = "1:unit-test-signing-key-one";
export const K2 = "2:unit-test-signing-key-two";

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
  const head = await env.DB.prepare("SELECT head_seq, head_hash FROM projects WHERE id = ?")
    .bind(projectId)
    .first<{ head_seq: number; head_hash: string | null }>();
  let seq = head!.head_seq;
  let prev = head!.head_hash;
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
      },
      ring,
    );
    prev = row.hash;
    rows.push(row);
  }
  await env.DB.batch([
    ...insertEventsStatements(env.DB, rows),
    env.DB.prepare("UPDATE projects SET head_seq = ?, head_hash = ? WHERE id = ?").bind(seq, prev, projectId),
  ]);
  return rows;
}
