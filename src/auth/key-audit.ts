import { recordAdminAction, type AuditActor, type AuditOrigin } from "../chain/self-audit";
import { parseStoredScopes } from "./scopes";

/**
 * Key lifecycle events the service did not witness. The operator scripts
 * (keys:create, keys:revoke, and the short-lived keys of projects:retention
 * and projects:move) write D1 directly, so no request of theirs passes through
 * the ledger; keys made before self-audit existed have no event either. The
 * daily cron appends what each key's audit_state says the chain still lacks:
 * witness.key.created for a key at NULL, witness.key.revoked for a revoked key
 * not at 'revoked'. Keys made and revoked through /v1/keys record their own.
 *
 * At least once: audit_state is set after the append, so a crash between the
 * two appends the same event again on the next run (a duplicate names the same
 * key and times, and verifies like any event). Never zero times: nothing marks
 * a key recorded before its event is in the chain.
 */
const OPERATOR: AuditActor = { type: "operator", id: "operator-script" };
const ORIGIN: AuditOrigin = { ip_address: null, user_agent: "witness-cron" };
/** Per run: keys are few, but the first run after the migration meets every existing one. */
const SWEEP_LIMIT = 500;

interface KeyRow {
  prefix: string;
  project_id: string;
  scopes: string;
  label: string | null;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  audit_state: string | null;
}

export interface KeyAuditResult {
  created: number;
  revoked: number;
  /** Keys whose project's chain refused the event (a move in progress, an outage): retried next run. */
  failed: number;
}

export async function recordUnauditedKeys(env: Env, limit = SWEEP_LIMIT): Promise<KeyAuditResult> {
  const { results } = await env.DB.prepare(
    `SELECT prefix, project_id, scopes, label, created_at, expires_at, revoked_at, audit_state FROM api_keys
     WHERE audit_state IS NULL OR (revoked_at IS NOT NULL AND audit_state <> 'revoked')
     ORDER BY created_at, prefix LIMIT ?`,
  )
    .bind(limit)
    .all<KeyRow>();
  const result: KeyAuditResult = { created: 0, revoked: 0, failed: 0 };
  // A project whose chain refused one key is skipped for the run, so its events stay in key order.
  const refused = new Set<string>();
  for (const key of results) {
    if (refused.has(key.project_id)) continue;
    try {
      const done = await recordKey(env, key);
      result.created += done.created;
      result.revoked += done.revoked;
    } catch (error) {
      refused.add(key.project_id);
      result.failed++;
      console.warn(`key audit: ${key.project_id} key ${key.prefix} not recorded yet: ${error}`);
    }
  }
  return result;
}

async function recordKey(env: Env, key: KeyRow): Promise<{ created: number; revoked: number }> {
  const target = [{ type: "api_key", id: key.prefix, name: key.label }];
  const scopes = parseStoredScopes(key.scopes);
  let created = 0;
  if (key.audit_state === null) {
    await recordAdminAction(env, key.project_id, {
      action: "witness.key.created",
      actor: OPERATOR,
      targets: target,
      // The event's own time is when the sweep recorded it; created_at is when the script made the key.
      metadata: { scopes, created_at: key.created_at, expires_at: key.expires_at, recorded_by: "daily-key-sweep" },
    }, ORIGIN);
    await setState(env, key.prefix, "created");
    created = 1;
  }
  if (key.revoked_at === null) return { created, revoked: 0 };
  await recordAdminAction(env, key.project_id, {
    action: "witness.key.revoked",
    actor: OPERATOR,
    targets: target,
    metadata: { scopes, revoked_at: key.revoked_at, recorded_by: "daily-key-sweep" },
  }, ORIGIN);
  await setState(env, key.prefix, "revoked");
  return { created, revoked: 1 };
}

/** 'created' never overwrites 'revoked': a DELETE /v1/keys meanwhile recorded its own event. */
function setState(env: Env, prefix: string, state: "created" | "revoked") {
  const only = state === "created" ? " AND audit_state IS NULL" : "";
  return env.DB.prepare(`UPDATE api_keys SET audit_state = ? WHERE prefix = ?${only}`).bind(state, prefix).run();
}
