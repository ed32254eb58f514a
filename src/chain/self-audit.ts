import { canonicalize } from "../sealing/canonical";
import { ledgerOf, packEvents } from "./ledger";
import type { NewEvent } from "../model/new-event";

/**
 * Self-audit: every admin action (retention, erasure, legal holds, streams,
 * keys, tiering, moves) becomes an event in the project's own chain, so it is
 * listed, searched, exported, streamed, verified and provable like any other,
 * and cannot be taken back without breaking the chain. Actions are named
 * `witness.<noun>.<verb>`; ingest refuses that namespace, so no application
 * key can forge one. An erasure never touches them (src/model/erasable.ts):
 * their actor is a key, not a person.
 */

/** Who acted: an API key (by its prefix, never its secret), or an operator script. */
export interface AuditActor {
  /** portal: a customer's admin in a portal session, by the link that opened it (src/auth/portal.ts). */
  type: "api_key" | "operator" | "portal";
  id: string;
}

export interface AdminAction {
  action: `witness.${string}`;
  actor: AuditActor;
  /** What the action was applied to (a key, a stream, a hold); never an erased person. */
  targets?: Array<{ type: string; id: string; name?: string | null }>;
  /** The action's parameters. No personal data of an erased actor may go here. */
  metadata?: Record<string, unknown>;
  /** The customer organization the action was for (a portal's): its feed and streams then carry it. */
  organization?: string | null;
}

/** Where the request came from: the admin's address and client, not anyone the action concerns. */
export interface AuditOrigin {
  ip_address: string | null;
  user_agent: string | null;
}

export function auditEvent(a: AdminAction, origin: AuditOrigin): NewEvent {
  return {
    action: a.action,
    organization: a.organization ?? null,
    actor_id: a.actor.id,
    actor_type: a.actor.type,
    actor_name: null,
    actor_email: null,
    targets: canonicalize((a.targets ?? []).map((t) => ({ type: t.type, id: t.id, name: t.name ?? null }))),
    metadata: canonicalize(a.metadata ?? {}),
    occurred_at: null,
    ip_address: origin.ip_address,
    user_agent: origin.user_agent,
  };
}

/** Appends the action to the project's chain; answers the event's JSON. Call it once the action took effect. */
export async function recordAdminAction(env: Env, projectId: string, action: AdminAction, origin: AuditOrigin): Promise<string> {
  const [event] = await ledgerOf(env, projectId).selfAudit(packEvents([auditEvent(action, origin)]));
  return event;
}
