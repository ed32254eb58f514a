
import { heldSql } from "./legal-holds";
import { ledgerOf } from "./ledger";
import { cutoffSql } from "./retention-rules";
import { planPurge, type PurgePlan } from "./retention-runs";
import { loadKeyring, type SigningKeyring } from "../sealing/signing-keys";
import { retireExpired, type ColdRetention } from "./retention-archive";
import { archiveTier, type ArchiveTier } from "../storage/archive-walk";
import { CHAIN_COLUMNS, chainRowOf } from "../model/chain-row";
import { armDb, mergeBySeq, overArms, shardArms } from "../model/periods";
import { numbered, rowIdsOf, rowsBySeq } from "../model/row-keys";

export type { PurgePlan } from "./retention-runs";
export const PURGE_BATCH = 500;

/**
 * One bounded retention step of a project's ledger (under its commit lock): a
 * batch of hot rows; once none is left, at most one archived segment retired
 * or rewritten without its expired rows (src/chain/retention-archive.ts).
 * Nothing comes back into D1, so the hot purge's position holds.
 */
export async function purgeStep(env: Env, db: D1Database, projectId: string, plan: PurgePlan, now: Date, afterSeq: number, cold: ColdRetention) {
  const ring = await loadKeyring(env.SIGNING_KEYS);
  const archive = archiveTier(env, db, projectId);
  const batch = await purgeBatch(db, ring, projectId, plan, now, afterSeq, archive);
  if (!batch.done || plan.rules.length === 0) return batch;
  const step = await retireExpired({ ...cold, env, db, projectId, ring, archive }, plan, now);
  return { purged: batch.purged + step.purged, refused: batch.refused + step.refused, done: !step.more, lastSeq: batch.lastSeq };
}

/**
 * Deletes up to PURGE_BATCH expired hot events (chain order, in whichever
 * arms of the shard hold them: model/periods.ts) and rewrites the gap
 * records around them in the same D1 transaction, once each row passed
 * planPurge's checks (src/chain/retention-runs.ts). Call it only from the
 * project's ledger.
 */
export async function purgeBatch(db: D1Database, ring: SigningKeyring, projectId: string, plan: PurgePlan, now: Date, afterSeq = 0, archive?: ArchiveTier) {
  const none = { purged: 0, refused: 0, done: true, lastSeq: afterSeq };
  if (plan.rules.length === 0) return none;
  const cut = cutoffSql(plan.rules, now);
  // A held event is no candidate: the run around it ends before it and a new one starts after it, one gap record each.
  const held = heldSql(plan.holds ?? []);
  // The first PURGE_BATCH of every arm's, in chain order: the walk a single table would give (model/periods.ts).
  const arms = await shardArms(db);
  const found = await overArms(
    db,
    async (armed) =>
      (
        await armed
          .prepare(
            `SELECT ${CHAIN_COLUMNS} FROM ${rowsBySeq({ project: "?1", lo: "?2 + 1", hi: null, where: numbered(`e.occurred_at < (${cut.sql}) AND NOT ${held.sql}`, 3), limit: String(PURGE_BATCH) })}`,
          )
          .bind(projectId, afterSeq, ...cut.params, ...held.params)
          .raw()
      ).map(chainRowOf),
    arms,
  );
  const candidates = mergeBySeq(found, PURGE_BATCH);
  if (candidates.length === 0) return none;
  const write = await planPurge(db, ring, projectId, plan, now, candidates, archive, arms);
  if (write.rows.length > 0) {
    // Each row deleted from its own arm, every arm's in the batch of the gap records: all of them or none.
    const gone = new Set(write.rows.map((r) => r.seq));
    const deletes = found.flatMap((rows, i) => {
      const seqs = rows.filter((r) => gone.has(r.seq)).map((r) => r.seq);
      return seqs.length === 0 ? [] : [armDb(db, arms[i]).prepare(`DELETE FROM events WHERE row_id IN (${rowIdsOf("?1", "?2")})`).bind(projectId, JSON.stringify(seqs))];
    });
    await db.batch([...write.statements, ...deletes]);
  }
  const refused = candidates.length - write.rows.length;
  if (refused > 0) console.warn(`retention ${projectId}: left ${refused} row(s) that failed their checks for verify to report`);
  return { purged: write.rows.length, refused, done: candidates.length < PURGE_BATCH, lastSeq: candidates[candidates.length - 1].seq };
}

/** The daily cron: every project with a plan, in bounded batches through its ledger. */
export async function purgeExpiredEvents(env: Env, now: Date): Promise<void> {
  // D1's copy only says which ledgers to wake; each purges by the plan in its own storage, the
  // first steps in this call and the rest from its own alarm (src/chain/retention-upkeep.ts).
  const { results } = await env.DB.prepare("SELECT DISTINCT project_id FROM retention_rules").all<{ project_id: string }>();
  for (const { project_id } of results) {
    try {
      await ledgerOf(env, project_id).purgeNow(now.toISOString());
    } catch (error) {
      // One project's trouble must not keep the others from their purge.
      console.error(`retention purge of project ${project_id} failed`, error);
    }
  }
}
