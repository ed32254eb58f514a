/**
 * The ledger's only tie to alerts: after a commit it wakes the project's
 * evaluator, never waiting for it, and only when the project has rules (the
 * ledger keeps that count in its own storage). Wakes go at most every
 * WAKE_EVERY_MS per project; the evaluator, once it found events, looks again
 * shortly after its run, so a commit whose wake was skipped is still seen.
 */
const WAKE_EVERY_MS = 500;
const lastWake = new Map<string, number>();

export function alertEvaluator(env: Env, projectId: string) {
  return env.ALERT_EVALUATOR.get(env.ALERT_EVALUATOR.idFromName(projectId));
}

export async function wakeAlerts(env: Env, projectId: string): Promise<void> {
  const now = Date.now();
  if (now - (lastWake.get(projectId) ?? 0) < WAKE_EVERY_MS) return;
  if (lastWake.size > 10_000) lastWake.clear();
  lastWake.set(projectId, now);
  await alertEvaluator(env, projectId).wake();
}
