import type { Context } from "hono";
import { insertEventsStatements } from "../../../src/chain/event-insert";
import type { EventRow } from "../../../src/db/schema";
import { uuidV7 } from "../../../src/lib/crypto";

// Fixed-size stand-ins for what the ledger computes: a SHA-256 hex digest, a v1 HMAC signature, a 16-byte salt.
const DIGEST = "0".repeat(64);
const SIGNATURE = `v1:${"0".repeat(64)}`;
const SALT = "0".repeat(32);
// Its own project per isolate: seq must stay unique per project, and a reloaded isolate starts again from 1.
const FLOOR_PROJECT = `bench-d1-floor-${Date.now()}`;
let floorSeq = 0;

/** An event of the batch body, taken as sent: the floor checks nothing. */
interface BatchEvent {
  action: string;
  organization?: string | null;
  actor?: { id?: string | null; type?: string | null; name?: string | null; email?: string | null } | null;
  targets?: unknown[] | null;
  metadata?: Record<string, unknown> | null;
  occurred_at?: string | null;
}

/**
 * The D1 floor of batch ingest: the body POST /v1/events/batch takes, written
 * as the same rows with the ledger's own statements (insertEventsStatements:
 * the multi-row INSERT and the search index entries), one D1 batch per
 * request, into the same schema (startBaseline applies Witness's migrations).
 * No validation, no hashing or signing, no Durable Object, no answer beyond a
 * count: what local D1 alone costs those inserts under wrangler dev. Mounted
 * by worker.ts under a prefix, so batchLoad (test/bench/lib.mjs) drives it unchanged.
 */
export async function d1InsertFloor(c: Context<{ Bindings: { DB: D1Database } }>) {
  const { events } = await c.req.json<{ events: BatchEvent[] }>();
  const receivedAt = new Date().toISOString();
  const ip = c.req.header("CF-Connecting-IP") ?? null;
  const userAgent = c.req.header("User-Agent") ?? null;
  const rows: EventRow[] = events.map((e) => ({
    row_id: null as unknown as number,
    // Located, as the ledger mints them (src/model/event-id.ts): the commit writes a span, not an id index entry per event.
    id: uuidV7(Date.parse(receivedAt), 0x5eed),
    project_id: FLOOR_PROJECT,
    seq: ++floorSeq,
    action: e.action,
    organization: e.organization ?? null,
    actor_id: e.actor?.id ?? null,
    actor_type: e.actor?.type ?? null,
    actor_name: e.actor?.name ?? null,
    actor_email: e.actor?.email ?? null,
    targets: JSON.stringify(e.targets ?? []),
    metadata: JSON.stringify(e.metadata ?? {}),
    occurred_at: e.occurred_at ?? receivedAt,
    received_at: receivedAt,
    ip_address: ip,
    user_agent: userAgent,
    pii_salt: SALT,
    pii_commitment: DIGEST,
    hash: DIGEST,
    prev_hash: DIGEST,
    signature: SIGNATURE,
    anonymized_at: null,
    changes: null,
    schema_version: null,
    schema_valid: null,
  }));
  await c.env.DB.batch(insertEventsStatements(c.env.DB, rows));
  return c.json({ data: { inserted: rows.length } }, 201);
}
