import { recordUnauditedKeys } from "./auth/key-audit";
import { signalExpiringKeys, signalShardPressure } from "./alerts/integrity";
import { IDEMPOTENCY_WINDOW_MS } from "./chain/idempotency";
import { dropStaleGivenUpAppends } from "./chain/landed-appends";
import { sweepExpiredJobFiles } from "./jobs/job-files";
import { resumeLostJobs } from "./jobs/job-resume";
import { purgeExpiredEvents } from "./chain/retention";
import { reindexBacklog } from "./model/search-index";
import { checkArchives } from "./storage/archive-check";
import { currentPeriods } from "./storage/period-upkeep";
import { shardDb, shardNumbers } from "./storage/shards";
import { deleteExpiredExports } from "./storage/staged-exports";

/** The cron of wrangler.toml that runs every minute: jobs whose instance was lost wait a minute or two, not a day (and, with periods on, each shard has its current period). */
export const JOBS_CRON = "* * * * *";

/**
 * What one daily run spends on the search backlog across every shard. After migration 0044 each shard's backlog
 * reads every row once, about 0.1 s a step of 100,000 rows (Node's SQLite here): 25 steps of each of 130 shards
 * would take 5 of the run's 15 minutes. A shard that is done costs one read and no time.
 */
const SEARCH_BACKLOG_MS = 60_000;

/** The daily cron: housekeeping that must not run on the request path. */
export async function scheduled(controller: ScheduledController, env: Env, _ctx: ExecutionContext): Promise<void> {
  if (controller.cron === JOBS_CRON) {
    await resumeLostJobs(env, new Date());
    // With periods on, no shard goes a day writing to its main tables for want of the daily run.
    await currentPeriods(env, shardNumbers(env).map((shard) => ({ shard, db: shardDb(env, shard) })), new Date());
    return;
  }
  const cutoff = new Date(Date.now() - IDEMPOTENCY_WINDOW_MS).toISOString();
  const backlogUntil = Date.now() + SEARCH_BACKLOG_MS;
  for (const shard of shardNumbers(env)) {
    const db = shardDb(env, shard);
    await db.prepare("DELETE FROM idempotency_keys WHERE created_at < ?").bind(cutoff).run();
    // Names of appends given up a day ago (src/chain/landed-appends.ts).
    await dropStaleGivenUpAppends(db, new Date());
    // Events written before search groups, 2,000 at a time, within the run's budget for them.
    for (let i = 0; i < 25 && Date.now() < backlogUntil; i++) if ((await reindexBacklog(db, 2000)).done) break;
  }
  // Keys the operator scripts made or revoked in D1 reach their project's chain here.
  await recordUnauditedKeys(env);
  await purgeExpiredEvents(env, new Date());
  // Archiving runs from each ledger's alarm; the cron measures the shards and wakes ledgers that lag or need a sweep.
  await checkArchives(env, new Date());
  await deleteExpiredExports(env, new Date());
  await sweepExpiredJobFiles(env, new Date());
  await resumeLostJobs(env, new Date());
  // Integrity alerts: keys about to expire (src/alerts/integrity.ts).
  await signalExpiringKeys(env, new Date());
  // And, for a deployment with an operator project, shards filling up.
  await signalShardPressure(env);
}
