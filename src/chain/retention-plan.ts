import type { AuditOutbox } from "./audit-outbox";
import { checkLockedChange, describeLockCheck, type LockCheck } from "./retention-lock";
import { MAX_RULES, orderRules, type RetentionRule } from "./retention-rules";
import { auditEvent, type AuditActor, type AuditOrigin } from "./self-audit";

/**
 * The project's retention plan and its lock, in the ledger's own storage: the
 * only copy a purge obeys. D1's retention_rules is a copy that only tells the
 * daily cron which ledgers to wake; the lock has no copy anywhere else, so no
 * database write can lift it. There is no unlock.
 */
const RULES_KEY = "retention";
const LOCKED_KEY = "retention_locked_at";

export interface RetentionState {
  rules: RetentionRule[];
  locked: boolean;
  locked_at: string | null;
}

export type RetentionChange =
  | ({ status: "changed" } & RetentionState)
  | { status: "locked"; message: string; check: LockCheck & { unlock: boolean } };

export function retentionRules(kv: SyncKvStorage): RetentionRule[] {
  return kv.get<RetentionRule[]>(RULES_KEY) ?? [];
}

export function retentionState(kv: SyncKvStorage): RetentionState {
  const lockedAt = kv.get<string>(LOCKED_KEY) ?? null;
  return { rules: orderRules(retentionRules(kv)), locked: lockedAt !== null, locked_at: lockedAt };
}

/**
 * Replaces the plan, unless it is locked and the proposal would expire any
 * event sooner (or asks to unlock it). `lock: true` locks it; omitted keeps the
 * lock as it is. The new plan, the lock and the self-audit event
 * (witness.retention.changed) are stored in one storage transaction. Call it
 * under the ledger's commit lock.
 */
export async function changeRetention(
  storage: DurableObjectStorage,
  controlDb: D1Database,
  outbox: AuditOutbox,
  projectId: string,
  proposal: { rules: RetentionRule[]; lock?: boolean },
  by: AuditActor,
  origin: AuditOrigin,
): Promise<RetentionChange> {
  const before = retentionState(storage.kv);
  const rules = orderRules(proposal.rules.slice(0, MAX_RULES).map(({ pattern, days }) => ({ pattern, days })));
  if (before.locked) {
    const check = { ...checkLockedChange(before.rules, rules), unlock: proposal.lock === false };
    if (check.unlock || check.removed.length > 0 || check.shortened.length > 0) {
      const why = check.unlock ? "a locked plan cannot be unlocked" : describeLockCheck(check);
      return { status: "locked", message: `The retention plan is locked since ${before.locked_at}: it may only keep events longer; ${why}`, check };
    }
  }
  // The copy first: it only wakes ledgers, so a crash before the plan below is harmless.
  await controlDb.batch([
    controlDb.prepare("DELETE FROM retention_rules WHERE project_id = ?").bind(projectId),
    controlDb
      .prepare("INSERT INTO retention_rules (project_id, pattern, days) SELECT ?, value ->> 'pattern', value ->> 'days' FROM json_each(?)")
      .bind(projectId, JSON.stringify(rules)),
  ]);
  const lockedAt = before.locked_at ?? (proposal.lock === true ? new Date().toISOString() : null);
  const after: RetentionState = { rules, locked: lockedAt !== null, locked_at: lockedAt };
  storage.transactionSync(() => {
    storage.kv.put(RULES_KEY, rules);
    if (lockedAt !== null) storage.kv.put(LOCKED_KEY, lockedAt);
    outbox.stage(
      auditEvent(
        {
          action: "witness.retention.changed",
          actor: by,
          metadata: { old_rules: before.rules, new_rules: rules, was_locked: before.locked, locked: after.locked },
        },
        origin,
      ),
    );
  });
  return { status: "changed", ...after };
}
