/**
 * Erasure, the entry point. DELETE /v1/actors/:id (src/routes/actors.ts) asks
 * the project's ledger (erasure-coordinator.ts), which refuses one a legal hold
 * forbids (erasure-holds.ts) or one naming only self-audit records
 * (erasure-self-audit.ts), records it signed (erasure-records.ts) and keeps it
 * running (erasure-running.ts). A job (src/jobs/erasure-job.ts) then applies it
 * in bounded steps (erasure-steps.ts): hot rows here, archived segments through
 * src/storage/archive-erase.ts. Until it ends, reads apply it themselves
 * (src/model/pending-erasures.ts); src/model/erasable.ts says what it may touch.
 */
import { sha256Hex } from "../lib/crypto";
import { groupReindexStatement, searchWords } from "../model/search-index";
import type { AuditOutbox } from "./audit-outbox";
import { erasableSql } from "../model/erasable";
import { armDb, mergeBySeq, overArms, type Arm } from "../model/periods";
import { rowIdsOf, seqSpan } from "../model/row-keys";
import { holdsErasureWouldBreak } from "./erasure-holds";
import type { ErasureRecords } from "./erasure-records";
import type { ErasureBy, ErasureRequest, RunningErasure } from "./erasure-running";
import type { LegalHolds } from "./legal-holds";
import { auditEvent, type AuditActor, type AuditOrigin } from "./self-audit";

/** Rows rewritten per statement: keeps every statement (and its index work) small, whatever the actor's size. */
export const ERASURE_BATCH = 500;

const COLUMN: Record<ErasureBy, string> = { id: "actor_id", email: "actor_email" };

/**
 * One batch of hot rows: the next up to `batch` rows (seq at most
 * throughSeq) still naming the person, self-audit records left out
 * (erasable.ts), in every arm of the shard (model/periods.ts: `arms`, as
 * the caller listed them, or listed now), are claimed in the ledger's
 * erasure record, then scrubbed in D1 (clear personal data and salt; the
 * commitment stays, so the chain still verifies), and their search entries
 * replaced, each arm's rows in their own arm. A crash in between leaves
 * claimed but unscrubbed rows (harmless, verify only asks about anonymized
 * rows) and the batch repeated claims them again. Scrubbed rows drop out of
 * the match (the column is erased too), so a walk of batches ends: 0 when
 * none is left. One read per arm, all at once, then one batch. Run under
 * the ledger's commit lock, which archive sealing also takes, so a row is
 * never sealed half-scrubbed.
 */
export async function scrubHotBatch(
  db: D1Database,
  records: ErasureRecords,
  req: ErasureRequest,
  erasedAt: string,
  erasureId: number,
  throughSeq: number,
  batch = ERASURE_BATCH,
  arms?: Arm[],
): Promise<number> {
  const column = COLUMN[req.by];
  const match = `project_id = ?1 AND ${column} = ?2 AND (?3 IS NULL OR organization = ?3) AND seq <= ?6 AND ${erasableSql()}`;
  const found = await overArms(
    db,
    async (armed, n) => {
      // By e-mail, which no index holds, the walk is of the project's rows, on its path (model/row-keys.ts).
      const { results } = await armed
        .prepare(`SELECT seq, action FROM events WHERE ${match} AND ${seqSpan("events", "?1", "0", "?6")} ORDER BY seq LIMIT ?4`)
        .bind(req.projectId, req.value, req.organization, batch, null, throughSeq)
        .all<{ seq: number; action: string }>();
      return results.map((r) => ({ ...r, arm: n }));
    },
    arms,
  );
  // The batch is the first rows by seq of all arms together, so each batch claims what the walk would from one table.
  const results = mergeBySeq(found, batch);
  if (results.length === 0) return 0;
  records.cover(erasureId, results.map((r) => r.seq));
  // What a scrubbed row keeps searchable: its action's words (the action is not personal data).
  const kept = [...new Set(results.map((r) => r.action))].map((action) => [action, searchWords({ action, actor_name: null, actor_email: null, actor_id: null }).join(" ")]);
  const inArms = [...new Set(results.map((r) => r.arm))].map((n) => [n, results.filter((r) => r.arm === n).map((r) => r.seq)] as const);
  // One batch: the update trigger drops the search entries of the rows' groups, and the groups' other events
  // must never be left without theirs; with several arms, every arm's rows or none.
  const done = await db.batch(inArms.flatMap(([n, seqs]) => scrubStatements(armDb(db, n), req, seqs, erasedAt, throughSeq, kept, match)));
  return done.reduce((sum, r, i) => (i % 2 === 0 ? sum + r.results.length : sum), 0);
}

/** The scrub of the rows of `seqs` in one arm (`db`, through armDb), then the entries of their search groups there. */
function scrubStatements(db: D1Database, req: ErasureRequest, seqs: number[], erasedAt: string, throughSeq: number, kept: string[][], match: string): D1PreparedStatement[] {
  return [
    db
      .prepare(
        `UPDATE events SET actor_id = NULL, actor_name = NULL, actor_email = NULL, ip_address = NULL,
           user_agent = NULL, pii_salt = NULL, anonymized_at = ?5, search_words = (SELECT k.value ->> 1 FROM json_each(?7) k WHERE k.value ->> 0 = action)
         WHERE row_id IN (${rowIdsOf("?1", "?4")}) AND ${match}
         RETURNING seq`,
      )
      .bind(req.projectId, req.value, req.organization, JSON.stringify(seqs), erasedAt, throughSeq, JSON.stringify(kept)),
    groupReindexStatement(db, req.projectId, seqs),
  ];
}

/** How an erasure record names its subject: a SHA-256, never the id or e-mail itself (GET /v1/actors/:id/erasures looks it up the same way). */
export const erasureSubject = (by: ErasureBy, value: string) => sha256Hex(`${by}:${value}`);

/** GET /v1/actors/:id/erasures: one erasure of the actor, as its record and its job say. */
export interface ActorErasure {
  erasure_id: number;
  by: ErasureBy;
  organization: string | null;
  erased_at: string;
  /** applying: its job is still scrubbing stored events (reads already leave the data out); applied: done. */
  status: "applying" | "applied";
  /** Events it anonymized, once applied. */
  anonymized: number | null;
}

/** The erasures recorded for this id (or e-mail), oldest first; records keep only its SHA-256, so only the exact value finds them. */
export async function actorErasures(records: ErasureRecords, by: ErasureBy, value: string): Promise<ActorErasure[]> {
  const found = records.ofSubject(by, await erasureSubject(by, value));
  const running = new Set(records.running.list().map((r) => r.erasure_id));
  return found.map((r) => ({
    erasure_id: r.id,
    by: r.by,
    organization: r.organization,
    erased_at: r.erased_at,
    status: running.has(r.id) ? "applying" : "applied",
    anonymized: running.has(r.id) ? null : r.count,
  }));
}

export type ErasureOutcome =
  /** Accepted: recorded, applied at read time from now on, and being applied to the stored rows by job `job_id`. */
  | { status: "applying"; erasure_id: number; job_id: string; running: RunningErasure }
  /** Refused: an active legal hold covers some of the events it would scrub; nothing changed. */
  | { status: "held"; holds: string[] };

/**
 * What the ledger answers DELETE /v1/actors/:id with. self_audit_only: refused,
 * nothing changed, because the id is the actor of self-audit records only
 * (src/chain/erasure-self-audit.ts).
 */
export type ErasureAnswer = { status: "applying"; erasure_id: number; job_id: string } | { status: "held"; holds: string[] } | { status: "self_audit_only" };

/** What the ledger hands an erasure besides the request: its holds, its audit outbox, who asks, and its head. */
export interface ErasureContext {
  holds: LegalHolds;
  outbox: AuditOutbox;
  by: AuditActor;
  origin: AuditOrigin;
  headSeq: number;
}

/**
 * The self-audit event of an erasure: how and where, how many, and the
 * ledger's erasure record, never who (not the id, the e-mail, or a hash of
 * them): the chain cannot be scrubbed later, so it must not name the person.
 */
export function erasedEvent(by: AuditActor, origin: AuditOrigin, req: Pick<ErasureRequest, "by" | "organization">, erasureId: number, anonymized: number | null) {
  return auditEvent(
    {
      action: "witness.actor.erased",
      actor: by,
      targets: [{ type: "erasure", id: String(erasureId) }],
      metadata: { by: req.by, organization: req.organization, erasure_id: erasureId, anonymized, completed: anonymized !== null },
    },
    origin,
  );
}

/**
 * Accepting an erasure, under the ledger's commit lock: refused, changing
 * nothing, when a legal hold covers any of the events; otherwise its record,
 * its self-audit event (staged open until the job settles it) and its
 * running entry (with the job's id) are written in one storage transaction.
 * The caller then makes it visible to reads and starts the job
 * (src/jobs/erasure-job.ts); the rows are scrubbed by the job's steps
 * (src/chain/erasure-steps.ts), each holding the lock for one batch only.
 */
export async function acceptErasure(env: Env, db: D1Database, records: ErasureRecords, req: ErasureRequest, ctx: ErasureContext): Promise<ErasureOutcome> {
  const blocking = await holdsErasureWouldBreak(env, db, req, ctx.holds.active());
  if (blocking.length > 0) return { status: "held", holds: blocking.map((h) => h.id) };
  const erasedAt = new Date().toISOString();
  const subject = await erasureSubject(req.by, req.value);
  // No await from here on: the record, its staged event and the running entry are one storage transaction.
  const erasureId = records.begin(req.by, subject, req.organization, erasedAt);
  const outboxId = ctx.outbox.stage(erasedEvent(ctx.by, ctx.origin, req, erasureId, null), { open: "job" });
  const running: RunningErasure = {
    erasure_id: erasureId,
    job_id: crypto.randomUUID(),
    by: req.by,
    value: req.value,
    organization: req.organization,
    subject_sha256: subject,
    erased_at: erasedAt,
    through_seq: ctx.headSeq,
    outbox_id: outboxId,
    audit: { by: ctx.by, origin: ctx.origin },
    state: { phase: "hot", segmentAfter: 0, compacted: false },
  };
  records.running.add(running);
  return { status: "applying", erasure_id: erasureId, job_id: running.job_id, running };
}
