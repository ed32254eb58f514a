/**
 * src/chain/: the hash chain, written only by a project's ledger. Start here:
 * ledgerOf and ledgerView (this file) are how everything above reaches a
 * project's ledger. Appends: group-commit.ts (it reaches the transparency log
 * only through the LogAppender it declares), seal-events.ts, event-insert.ts,
 * idempotency*. Verify: verify.ts is its entry. Erasure: erasure.ts is its
 * entry. Retention: retention.ts (plan, rules, runs, gap records, the archive's
 * share in retention-archive.ts). Legal holds and self-audit records:
 * legal-holds.ts, self-audit.ts, audit-outbox.ts.
 */
import type { Anchor, LedgerView } from "./chain-check";
import type { NewEvent } from "../model/new-event";
import { archiveTier } from "../storage/archive-walk";
import { eventsReadDb } from "../storage/shards";

/** The project's ledger Durable Object: the only writer of its chain and the keeper of its head. */
export function ledgerOf(env: Env, projectId: string) {
  return env.LEDGER.get(env.LEDGER.idFromName(projectId));
}

/**
 * The head and signed-from seq as the ledger recorded them in its own storage.
 * Verification anchors on these, never on D1: someone who can write D1 could
 * delete the newest events or strip signatures, but not touch the ledger.
 */
export function ledgerAnchor(env: Env, projectId: string): Promise<Anchor> {
  return ledgerOf(env, projectId).anchor();
}

/**
 * ledgerAnchor, plus the ledger's erasure records: what verify checks a
 * project against. `publishedCopies`: also hold the log's public tile copies
 * in R2 to the ledger's tiles (verify does; one receipt's check need not).
 */
export async function ledgerView(env: Env, projectId: string, options: { publishedCopies?: boolean } = {}): Promise<LedgerView> {
  const ledger = ledgerOf(env, projectId);
  const [anchor, checkpoint, db] = await Promise.all([ledger.anchor(), ledger.checkpointAnchor(options.publishedCopies ?? false), eventsReadDb(env, projectId)]);
  return {
    ...anchor,
    checkpoint,
    archive: archiveTier(env, db, projectId),
    committedHead: () => ledger.committedHead(),
    erasedAt: (seqs) => ledger.erasedAt(seqs),
    leavesAt: (indexes) => ledger.leavesAt(indexes),
  };
}

/**
 * A batch's events as they cross the RPC boundary to the ledger: their
 * values in one flat array, fourteen per event. Serializing a hundred objects
 * writes every field name of every event; a flat array of strings costs about
 * half as much to write and read back (measured with V8's serializer, which
 * RPC uses), and ingest pays it on every request.
 */
export interface PackedEvents {
  values: Array<string | null>;
}

export function packEvents(events: NewEvent[]): PackedEvents {
  const values: Array<string | null> = [];
  for (const e of events) {
    const version = e.schema_version == null ? null : String(e.schema_version);
    const valid = e.schema_valid == null ? null : e.schema_valid ? "1" : "0";
    values.push(
      e.action, e.organization, e.actor_id, e.actor_type, e.actor_name, e.actor_email, e.targets, e.metadata, e.occurred_at, e.ip_address, e.user_agent,
      e.changes ?? null, version, valid,
    );
  }
  return { values };
}

export function unpackEvents({ values: v }: PackedEvents): NewEvent[] {
  const events: NewEvent[] = [];
  for (let i = 0; i + 14 <= v.length; i += 14) {
    events.push({
      action: v[i]!, organization: v[i + 1], actor_id: v[i + 2], actor_type: v[i + 3], actor_name: v[i + 4], actor_email: v[i + 5],
      targets: v[i + 6]!, metadata: v[i + 7]!, occurred_at: v[i + 8], ip_address: v[i + 9], user_agent: v[i + 10],
      changes: v[i + 11], schema_version: v[i + 12] === null ? null : Number(v[i + 12]), schema_valid: v[i + 13] === null ? null : v[i + 13] === "1",
    });
  }
  return events;
}
