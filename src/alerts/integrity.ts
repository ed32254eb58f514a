import { verifyChunked } from "../chain/verify-run";
import type { VerifyResult } from "../chain/verify";
import { alertEvaluator } from "./wake";
import { measureShards, WARN_FRACTION } from "../storage/shard-pressure";

/**
 * Integrity alerts: the trail itself in danger. Each signal names what
 * happened and what to do next; the project's integrity rules (one is made
 * for every project, with no channel until one is added) turn it into a
 * firing, at most once a day per signal and subject (its cooldown), and the
 * firing is kept in the rule's history even when no channel is set.
 */
export type IntegrityKind = "verify_failed" | "stream_failing" | "stream_disabled" | "key_expiring" | "shard_filling";

export interface IntegritySignal {
  kind: IntegrityKind;
  /** What it is about (a job, stream or key id): one firing per day per kind and subject. */
  subject: string;
  message: string;
  next_step: string;
}

export function signalIntegrity(env: Env, projectId: string, signal: IntegritySignal): Promise<void> {
  return alertEvaluator(env, projectId).signal(signal);
}

export function verifySignal(result: VerifyResult, subject: string, source: string): IntegritySignal | null {
  if (!result.failure) return null;
  const where = result.failure.event_id ? ` at event ${result.failure.event_id}` : "";
  if (result.failure.reason === "index_damaged") {
    // The chain holds; what changed is how reads find the event, so the fix is the shard's read-side rows, not the events.
    return {
      kind: "verify_failed",
      subject,
      message: `${source} found index_damaged${where}: the event is intact, but lists or reads by id no longer find it, so a row standing in for its index entries was deleted or altered in D1.`,
      // Not D1 Time Travel: a shard restored to before the change loses every event committed since, of every project on it.
      next_step: "Run npm run projects:reindex -- <project> (with --archived when the event is archived) to put the hidden events back into their indexes, verify again, and find who could write to the shard.",
    };
  }
  return {
    kind: "verify_failed",
    subject,
    message: `${source} found ${result.failure.reason}${where}: the chain no longer proves what was recorded.`,
    next_step: "Run GET /v1/events/verify to see the first bad event, compare it with an export or a receipt, and restore or report the tampered rows.",
  };
}

/** The daily incremental verify (from the last whole verify that came out ok), run by a project's evaluator when it has an integrity channel. */
export async function dailyVerify(env: Env, projectId: string): Promise<IntegritySignal | null> {
  const ledger = env.LEDGER.get(env.LEDGER.idFromName(projectId));
  const since = await ledger.verifyCheckpoint();
  let result = await verifyChunked(env, projectId, { from: null, to: null }, { since });
  // As GET /v1/events/verify does: an incremental walk that finds chain_broken is walked again whole.
  if (since && result.failure?.reason === "chain_broken") result = await verifyChunked(env, projectId, { from: null, to: null });
  return verifySignal(result, `daily-${new Date().toISOString().slice(0, 10)}`, "The daily verify");
}

/** The daily cron: every API key that expires within 7 days, to its project's integrity rules (once a day each). */
export async function signalExpiringKeys(env: Env, now: Date): Promise<number> {
  const until = new Date(now.getTime() + 7 * 86_400_000).toISOString();
  const { results } = await env.DB.prepare(
    "SELECT prefix, project_id, label, expires_at FROM api_keys WHERE revoked_at IS NULL AND expires_at IS NOT NULL AND expires_at > ? AND expires_at <= ? LIMIT 500",
  )
    .bind(now.toISOString(), until)
    .all<{ prefix: string; project_id: string; label: string | null; expires_at: string }>();
  await Promise.all(
    results.map((k) =>
      signalIntegrity(env, k.project_id, {
        kind: "key_expiring",
        subject: k.prefix,
        message: `API key ${k.prefix}${k.label ? ` (${k.label})` : ""} expires at ${k.expires_at}: whatever uses it will be refused from then on.`,
        next_step: "Create its replacement (POST /v1/keys), deploy it where the old key is used, then revoke the old one.",
      }).catch((error) => console.error(`integrity alert for key ${k.prefix} failed`, error)),
    ),
  );
  return results.length;
}

/**
 * The daily cron, for deployments that name an operator project
 * (OPERATOR_PROJECT): every event shard past 80% of its high-water mark, to
 * that project's integrity rules (once a day per shard). A full shard refuses
 * every write of every project on it, so the operator hears before it does.
 */
export async function signalShardPressure(env: Env): Promise<number> {
  const operator = (env.OPERATOR_PROJECT ?? "").trim();
  if (!operator) return 0;
  const filling = (await measureShards(env)).filter((s) => s.size >= WARN_FRACTION * s.mark);
  await Promise.all(
    filling.map((s) =>
      signalIntegrity(env, operator, {
        kind: "shard_filling",
        subject: `shard-${s.shard}`,
        message: `Event shard ${s.shard} holds ${s.size.toLocaleString("en-US")} bytes, ${Math.round((100 * s.size) / s.mark)}% of its high-water mark of ${s.mark.toLocaleString("en-US")}: past the mark its largest projects archive early, and at 10 GB it refuses every write.`,
        next_step: "Add a shard (an EVENTS_<n> binding and its database), move a large project to it (npm run projects:move), or shorten hot windows (npm run projects:tiering).",
      }).catch((error) => console.error(`operator alert for shard ${s.shard} failed`, error)),
    ),
  );
  return filling.length;
}
