import type { Anchor, LedgerView } from "./chain-check";
import { archiveTier } from "../storage/archive-walk";
import { eventsDb } from "../storage/shards";

/** The project's ledger Durable Object: the only writer of its chain and the keeper of its head. */
export function ledgerOf(env: Env, projectId: string) {
  return env.LEDGER.get(env.LEDGER.idFromName(projectId));
}

/**
 * The head and signed-from seq as the ledger recorded them in its own storage.
 * Verification anchors on these, never on D1: someone who can write D1 could
 * delete the newest events or strip signatures, but not touch the ledger.
 */
export function ledgerAnchor(env: Env, projectId: string): Promise<Anchor> {
  return ledgerOf(env, projectId).anchor();
}

/** ledgerAnchor, plus the ledger's erasure records: what verify checks a project against. */
export async function ledgerView(env: Env, projectId: string): Promise<LedgerView> {
  const ledger = ledgerOf(env, projectId);
  const [anchor, checkpoint, db] = await Promise.all([ledger.anchor(), ledger.checkpointAnchor(), eventsDb(env, projectId)]);
  return {
    ...anchor,
    checkpoint,
    archive: archiveTier(env, db, projectId),
    erasedAt: (seqs) => ledger.erasedAt(seqs),
    leavesAt: (indexes) => ledger.leavesAt(indexes),
  };
}
