import type { AuditActor, AuditOrigin } from "./self-audit";
import type { CommitJournal } from "./commit-journal";
import type { RunningErasure } from "./erasure-running";
import { acceptErasure, type ErasureAnswer } from "./erasure";
import { namesOnlySelfAudit } from "./erasure-self-audit";
import { erasureStep, type ErasureHost, type ErasureStepResult } from "./erasure-steps";
import type { ErasureRequest } from "./erasure-running";

/** What the ledger lends its erasures besides the steps' host: where an erasure's job is recorded. */
export type ErasureLedger = ErasureHost & {
  /** Records the pending entry and the job (src/jobs/erasure-job.ts); idempotent. */
  ensureJob(running: RunningErasure): Promise<void>;
  /** The ledger's last commit, personal data included (chain/commit-journal.ts). */
  journal: CommitJournal;
};

/**
 * The ledger's part in erasures: accepting one (refused first, outside the
 * lock, when its id names only the keys of self-audit records; under the
 * commit lock only the holds check, the record, the staged self-audit event
 * and the running entry), then its pending entry and job; the job's bounded
 * steps; and, when the ledger starts, the jobs of erasures a stopped instance
 * accepted but never recorded.
 */
export class ErasureCoordinator {
  constructor(private readonly ledger: ErasureLedger) {}

  async accept(req: Omit<ErasureRequest, "projectId">, by: AuditActor, origin: AuditOrigin): Promise<ErasureAnswer> {
    const { ledger } = this;
    const request = { ...req, projectId: ledger.projectId };
    if (await namesOnlySelfAudit(ledger.env, ledger.db(), request)) return { status: "self_audit_only" };
    const outcome = await ledger.exclusive(() => {
      // The last commit's copy in the journal would outlive the erasure of its rows.
      ledger.journal.dropDone(ledger.head());
      return acceptErasure(ledger.env, ledger.db(), ledger.records, request, { holds: ledger.holds, outbox: ledger.outbox, by, origin, headSeq: ledger.head().seq });
    });
    if (outcome.status !== "applying") return outcome;
    await ledger.ensureJob(outcome.running);
    return { status: outcome.status, erasure_id: outcome.erasure_id, job_id: outcome.job_id };
  }

  step(erasureId: number): Promise<ErasureStepResult> {
    return erasureStep(this.ledger, erasureId);
  }

  async resume(): Promise<void> {
    for (const running of this.ledger.records.running.list()) {
      await this.ledger.ensureJob(running).catch((error) => console.error(`ledger ${this.ledger.projectId}: erasure ${running.erasure_id}: resume failed`, error));
    }
  }
}
