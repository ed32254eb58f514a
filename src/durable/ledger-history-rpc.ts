import type { LegalHold } from "../chain/legal-holds";
import { purgeStep } from "../chain/retention";
import { purgeRun } from "../chain/retention-upkeep";
import { changeRetention, retentionRules, retentionState, type RetentionChange, type RetentionState } from "../chain/retention-plan";
import type { RetentionRule } from "../chain/retention-rules";
import type { AuditActor, AuditOrigin } from "../chain/self-audit";
import { archiveStep, type ArchiveHooks } from "../storage/archive-run";
import { restoreNewestSegment, type RestoreStep } from "../storage/archive-restore";
import { requestTidy } from "../storage/archive-upkeep";
import { scheduleMoveFinish } from "../storage/move-upkeep";
import { moveStep, type MoveHooks, type MoveProgress } from "../storage/shard-move";
import { LedgerCore } from "./ledger-core";

/**
 * The ledger's RPC facet for a project's history: retention plans and purges,
 * legal holds, archiving and restoring segments, and shard moves. Each step
 * takes the commit lock, so none interleaves with an append.
 */
export abstract class LedgerHistoryRpc extends LedgerCore {
  /** The plan, in the order rules apply, and its lock (src/chain/retention-plan.ts). */
  retentionState(): RetentionState {
    return retentionState(this.ctx.storage.kv);
  }

  /** Replaces the plan, unless its lock forbids the change; self-audited. */
  async setRetention(proposal: { rules: RetentionRule[]; lock?: boolean }, by: AuditActor, origin: AuditOrigin): Promise<RetentionChange> {
    return this.audited(() => changeRetention(this.ctx.storage, this.env.DB, this.audit, this.projectId, proposal, by, origin));
  }

  /** Every legal hold, newest first (src/chain/legal-holds.ts). */
  legalHolds(): LegalHold[] {
    return this.holds.list();
  }

  /** Under the commit lock, so no purge or erasure still running misses it; null: too many holds. Self-audited. */
  async placeLegalHold(input: { organization: string | null; actor_id: string | null; reason: string }, by: AuditActor, origin: AuditOrigin) {
    return this.audited(async () => this.holds.place(input, by, origin, this.audit));
  }

  /** Null: no such hold. Self-audited (once). */
  async releaseLegalHold(id: string, by: AuditActor, origin: AuditOrigin) {
    return this.audited(async () => this.holds.release(id, by, origin, this.audit));
  }

  /** One bounded retention step (src/chain/retention.ts); it holds the commit lock, so it never interleaves with an append. */
  purgeExpired(now: string, afterSeq: number): Promise<{ purged: number; refused: number; done: boolean; lastSeq: number }> {
    return this.commits.exclusive(async () => {
      if (this.historyBusy()) return { purged: 0, refused: 0, done: true, lastSeq: afterSeq };
      // The plan in this object's storage is the only copy a purge obeys.
      const plan = { rules: retentionRules(this.ctx.storage.kv), signedFrom: this.anchorNow().signedFrom, holds: this.holds.active() };
      return purgeStep(this.env, this.db, this.projectId, plan, new Date(now), afterSeq, { kv: this.ctx.storage.kv, companions: this.companions });
    });
  }

  /** The daily cron's wake-up: the first purge steps now, the rest from the alarm (src/chain/retention-upkeep.ts). */
  purgeNow(now: string): Promise<{ purged: number; done: boolean }> {
    return purgeRun(this.ctx.storage, (at, afterSeq) => this.purgeExpired(at, afterSeq), now);
  }

  /** One bounded step of an operator-requested shard move (src/storage/shard-move.ts), under the commit lock; hooks: tests only. */
  async moveShard(shard: number, hooks: MoveHooks = {}): Promise<MoveProgress> {
    const host = { ...this.host, switchTo: (db: D1Database) => (this.db = db) };
    const progress = await this.commits.exclusive(() => moveStep(host, shard, hooks));
    await scheduleMoveFinish(this.ctx.storage, progress);
    return progress;
  }

  /** Seals the next segment older than the hot window (src/storage/archive-run.ts), under the commit lock. */
  archiveSegment(now: string, hooks: ArchiveHooks = {}): Promise<{ archived: number; done: boolean }> {
    return this.commits.exclusive(async () => {
      if (this.historyBusy()) return { archived: 0, done: true };
      const runningErasures = new Set(this.erasures.running.list().map((r) => r.erasure_id));
      return archiveStep(this.env, this.db, this.projectId, new Date(now), this.companions, { ...hooks, runningErasures }).then(({ archived, done }) => ({ archived, done }));
    });
  }

  /** One archived segment back into D1, the newest first (src/storage/archive-restore.ts), under the commit lock. */
  restoreArchived(): Promise<RestoreStep> {
    return this.commits.exclusive(async () => (this.historyBusy() ? { status: "refused" as const, message: "the log is being built or the project moved: try again later" } : restoreNewestSegment(this.env, this.db, this.projectId)));
  }

  /** The daily check (src/storage/archive-check.ts): a tidy archive pass at the next alarm, now. */
  archiveSoon(): Promise<void> {
    return requestTidy(this.ctx.storage);
  }
}
