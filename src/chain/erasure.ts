import { sha256Hex } from "../lib/crypto";
import { eraseArchived } from "../storage/archive-erase";
import { deleteStagedExports } from "../reads/export-stream";
import { compactSearchIndex, reindexStatements } from "../reads/search-index";
import type { AuditOutbox } from "./audit-outbox";
import { holdsErasureWouldBreak } from "./erasure-holds";
import type { ErasureBy, ErasureRecords } from "./erasure-records";
import type { LegalHolds } from "./legal-holds";
import { auditEvent, type AuditActor, type AuditOrigin } from "./self-audit";
import type { SigningKeyring } from "./signing-keys";

/** Rows rewritten per statement: keeps every statement (and its index work) small, whatever the actor's size. */
export const ERASURE_BATCH = 500;

export interface ErasureRequest {
  projectId: string;
  /** What identifies the person: actor.id, or actor.email for actors sent without an id. */
  by: ErasureBy;
  value: string;
  /** When set, only this tenant's events are scrubbed. */
  organization: string | null;
}

const COLUMN: Record<ErasureBy, string> = { id: "actor_id", email: "actor_email" };

/**
 * Scrubs the clear personal data and salt of every row naming the person; the
 * commitment stays, so the chain still verifies. Each step claims the next
 * batch of seqs in the ledger's erasure record first, then scrubs them in D1:
 * a crash in between leaves claimed but unscrubbed rows (harmless, verify only
 * asks about anonymized rows) and a retry finishes the job. Scrubbed rows drop
 * out of the match (the column is erased too), so the loop ends.
 */
export async function eraseRows(
  db: D1Database,
  records: ErasureRecords,
  req: ErasureRequest,
  erasedAt: string,
  erasureId: number,
  batch = ERASURE_BATCH,
): Promise<number> {
  const column = COLUMN[req.by];
  const match = `project_id = ?1 AND ${column} = ?2 AND (?3 IS NULL OR organization = ?3)`;
  const find = db.prepare(`SELECT seq FROM events WHERE ${match} ORDER BY seq LIMIT ?4`);
  const scrub = db.prepare(
    `UPDATE events SET actor_id = NULL, actor_name = NULL, actor_email = NULL, ip_address = NULL,
       user_agent = NULL, pii_salt = NULL, anonymized_at = ?5
     WHERE ${match} AND seq IN (SELECT value FROM json_each(?4))
     RETURNING row_id, action, actor_name, actor_email, actor_id`,
  );
  let total = 0;
  for (;;) {
    const { results } = await find.bind(req.projectId, req.value, req.organization, batch).all<{ seq: number }>();
    if (results.length === 0) return total;
    const seqs = results.map((r) => r.seq);
    records.cover(erasureId, seqs);
    const scrubbed = await scrub.bind(req.projectId, req.value, req.organization, JSON.stringify(seqs), erasedAt).all<{
      row_id: number;
      action: string;
      actor_name: null;
      actor_email: null;
      actor_id: null;
    }>();
    const reindex = reindexStatements(db, req.projectId, scrubbed.results);
    if (reindex.length > 0) await db.batch(reindex);
    total += scrubbed.results.length;
  }
}

export type ErasureOutcome =
  | { status: "erased"; anonymized: number; erasure_id: number }
  /** Refused: an active legal hold covers some of the events it would scrub; nothing changed. */
  | { status: "held"; holds: string[] };

/** What the ledger hands an erasure besides the request: its holds, its audit outbox, and who asks. */
export interface ErasureContext {
  holds: LegalHolds;
  outbox: AuditOutbox;
  by: AuditActor;
  origin: AuditOrigin;
}

/**
 * The self-audit event of an erasure: how and where, how many, and the
 * ledger's erasure record, never who (not the id, the e-mail, or a hash of
 * them): the chain cannot be scrubbed later, so it must not name the person.
 */
function erasedEvent(ctx: ErasureContext, req: ErasureRequest, erasureId: number, anonymized: number | null) {
  return auditEvent(
    {
      action: "witness.actor.erased",
      actor: ctx.by,
      targets: [{ type: "erasure", id: String(erasureId) }],
      metadata: { by: req.by, organization: req.organization, erasure_id: erasureId, anonymized, completed: anonymized !== null },
    },
    ctx.origin,
  );
}

/**
 * The whole erasure: a ledger record, the rows, the search index's pages, and
 * every staged export of the project; refused, changing nothing, when a legal
 * hold covers any of the events. Its self-audit event is staged with the
 * record (open, so a crash midway is still recorded, as not completed) and
 * settled with the finished record.
 */
export async function eraseActor(
  env: Env,
  db: D1Database,
  records: ErasureRecords,
  ring: SigningKeyring,
  req: ErasureRequest,
  ctx: ErasureContext,
): Promise<ErasureOutcome> {
  const blocking = await holdsErasureWouldBreak(env, db, req, ctx.holds.active());
  if (blocking.length > 0) return { status: "held", holds: blocking.map((h) => h.id) };
  const erasedAt = new Date().toISOString();
  const subject = await sha256Hex(`${req.by}:${req.value}`);
  // No await between the record and its staged event: one storage transaction.
  const erasureId = records.begin(req.by, subject, req.organization, erasedAt);
  const staged = ctx.outbox.stage(erasedEvent(ctx, req, erasureId, null), { open: true });
  // Hot rows, then the archived ones (segments rewritten: src/storage/archive-erase.ts).
  const anonymized = (await eraseRows(db, records, req, erasedAt, erasureId)) + (await eraseArchived(env, db, records, req, erasedAt, erasureId));
  await records.finish(ring, erasureId, anonymized, () => {
    ctx.outbox.settle(staged, erasedEvent(ctx, req, erasureId, anonymized));
    if (req.by === "id") ctx.holds.forgetActor(req.value);
  });
  // Erased words must leave the index's data pages, not only its live entries.
  if (anonymized > 0) await compactSearchIndex(db);
  // Staged exports may hold the erased values in clear.
  await deleteStagedExports(env, req.projectId);
  return { status: "erased", anonymized, erasure_id: erasureId };
}
