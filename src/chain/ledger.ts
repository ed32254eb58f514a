import type { Head } from "./chain-check";

/** The project's ledger Durable Object: the only writer of its chain and the keeper of its head. */
export function ledgerOf(env: Env, projectId: string) {
  return env.LEDGER.get(env.LEDGER.idFromName(projectId));
}

/**
 * The head as the ledger recorded it. Verification anchors on this copy, not
 * on projects.head_* in D1: someone who can write D1 could delete the newest
 * events and roll that row back, but not the ledger's own storage.
 */
export function ledgerHead(env: Env, projectId: string): Promise<Head> {
  return ledgerOf(env, projectId).head();
}
